"""Cutting a message into the pieces the semantic layer scores: the whole message and, when it has
more than one sentence, each sentence (long ones in overlapping word windows), so one risky sentence
inside a long ordinary message is scored on its own instead of being diluted by the rest.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PIECES", "pieces"]

#: At most this many sentence pieces per message (more: neighbouring sentences are joined).
MAX_PIECES = 24
_WINDOW, _STRIDE = 60, 40  # words; a sentence over _WINDOW words is scored in windows
_MIN_WORDS = 3  # a shorter fragment ("ok.", "lol") is joined to its neighbour
# A message of several sentences is also scored whole (risk spread over sentences: "bought a hose. the
# car fits in the garage.") up to this many words; a longer one only by its sentences, which halves the
# encoder's work on the long messages that set the screen's p95 latency.
_WHOLE_MAX_WORDS = 20
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\s*\n+\s*|;\s+")


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_END.split(text)]
    out: list[str] = []
    carry = ""
    for p in parts:
        if not p:
            continue
        p = f"{carry} {p}".strip() if carry else p
        if len(p.split()) < _MIN_WORDS:
            carry = p
            continue
        carry = ""
        out.append(p)
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


def _windows(sentence: str) -> list[str]:
    words = sentence.split()
    if len(words) <= _WINDOW:
        return [sentence]
    starts = [*range(0, len(words) - _WINDOW, _STRIDE), len(words) - _WINDOW]
    return [" ".join(words[s : s + _WINDOW]) for s in starts]


def pieces(text: str) -> list[str]:
    """The texts to score for ``text``: ``[text]`` for a message of one sentence (or an empty one),
    otherwise ``[text, sentence_1, ..., sentence_m]`` with ``m <= MAX_PIECES``, without ``text`` itself
    when it has over 20 words (sentences end at
    ``. ! ? …`` before a space, at line breaks and at ``;``; fragments under 3 words join a neighbour;
    sentences over 60 words become 60-word windows every 40 words). Order is the message's."""
    stripped = text.strip()
    sents = [w for s in _sentences(stripped) for w in _windows(s)]
    if len(sents) <= 1 and len(stripped.split()) <= _WINDOW:
        return [text]
    while len(sents) > MAX_PIECES:
        sents = [" ".join(sents[i : i + 2]) for i in range(0, len(sents), 2)]
    if len(stripped.split()) > _WHOLE_MAX_WORDS and len(sents) > 1:
        return sents
    return [text, *sents]
