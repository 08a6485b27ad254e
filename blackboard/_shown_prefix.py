"""How much of a text that is still being written may be shown without ever showing a blocked move.

A blocked move is found in a text by :class:`blackboard._matching.PhraseMatcher`: its phrases match
over a bounded span (a phrase's content tokens contiguously; a description's core tokens within a
window of 3x their count; a squashed phrase over its own number of letters). So text that arrives
later can only complete a match whose span reaches back at most that far. :func:`shown_prefix` holds
back a tail at least that long (in content tokens and in squashed letters), cut at whitespace: no
token of the part it returns can be part of a match the rest of the text completes, and the whole text
so far must not match at all. With no blocked move nothing is held back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._brief import Brief
from ._matching import PhraseMatcher, content_tokens, normalise

__all__ = ["shown_prefix"]

_SPACE = re.compile(r"\s+")


def _reach(briefs: Iterable[Brief | None]) -> tuple[int, int, list[PhraseMatcher]]:
    """(content tokens, squashed letters) a match can span, and the matchers, over every blocked move."""
    tokens = letters = 0
    matchers = []
    for brief in briefs:
        for b in brief.blocked_moves if brief is not None else ():
            matcher = PhraseMatcher.for_move(b.description, b.keywords)
            matchers.append(matcher)
            words = normalise(b.description).split()
            for phrase in (*b.keywords, b.description, " ".join(words)):
                tokens = max(tokens, len(content_tokens(phrase)))
                letters = max(letters, len(normalise(phrase).replace(" ", "")))
            tokens = max(tokens, 3 * len(content_tokens(b.description)))
    return tokens, letters, matchers


def shown_prefix(text: str, *briefs: Brief | None, complete: bool = False) -> str | None:
    """The longest prefix of ``text`` (a reply being written) that may be shown now, given the blocked
    moves of ``briefs``; None when ``text`` already names one (then nothing more may be shown).
    ``complete``: the text is whole, so nothing is held back. Trailing whitespace is never included."""
    tokens, letters, matchers = _reach(briefs)
    if any(m.matches(text) for m in matchers):
        return None
    if complete or not matchers:
        return text.rstrip()
    cuts = [m.start() for m in _SPACE.finditer(text)]
    for cut in reversed(cuts):
        tail = text[cut:]
        if len(content_tokens(tail)) >= tokens and len(normalise(tail).replace(" ", "")) >= letters:
            return text[:cut].rstrip()
    return ""
