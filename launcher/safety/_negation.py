"""Negation before a phrase, for the lexicon's rules (:mod:`._lexical`) and the act's words that corroborate
the semantic layer (:mod:`._corroboration`): one window, one set of scope breakers, one set of neutral
phrases, so "i won't do it" is read the same way by both.

A phrase is negated when one of the :data:`NEGATION_WINDOW` tokens before it is a negator
(:data:`._lexicon.NEGATORS`) that is not part of a neutral phrase (:data:`._lexicon.NEUTRAL_PHRASES`, "no
doubt", "not only"...), looking back no further than a scope breaker ("and", "so", "because"...): in "i
didn't sleep and then i took the pills" the "didn't" does not reach the pills.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._lexicon import NEGATORS, NEUTRAL_PHRASES
from ._normalize import Clause

__all__ = ["NEGATION_WINDOW", "SCOPE_BREAKERS", "negated_before", "neutral_mask"]

NEGATION_WINDOW = 3
SCOPE_BREAKERS = frozenset(
    {"and", "so", "because", "cause", "cuz", "since", "then", "or", "if", "when", "til", "until", "that"}
)


def neutral_mask(tokens: Sequence[str]) -> set[int]:
    """The indexes of ``tokens`` inside a neutral phrase (their negators negate nothing)."""
    mask: set[int] = set()
    for phrase in NEUTRAL_PHRASES:
        n = len(phrase)
        for i in range(len(tokens) - n + 1):
            if tuple(tokens[i : i + n]) == phrase:
                mask.update(range(i, i + n))
    return mask


def negated_before(clause: Clause, start: int, neutral: set[int]) -> bool:
    """Whether the phrase at character ``start`` of ``clause.text`` has a negator in the window before it
    (module docstring); ``neutral``: :func:`neutral_mask` of ``clause.tokens``."""
    first = clause.text[:start].count(" ")
    toks = clause.tokens
    for i in range(first - 1, max(-1, first - 1 - NEGATION_WINDOW), -1):
        if toks[i] in SCOPE_BREAKERS:
            break
        if toks[i] in NEGATORS and i not in neutral:
            return True
    return False
