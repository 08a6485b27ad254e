"""Typo augmentation for the semantic layer's training examples: people in distress type fast, and a
misspelled word ("myslef", "wisj", "pils") moves a sentence embedding further than a careful reader
would move. :func:`typo_variant` writes a misspelled copy of an example, so the head learns the
misspelled neighbourhood of each family too (training only; nothing here runs in the screen).

Edits are the four of Damerau's classic study of spelling errors (*Comm. ACM* 7(3), 1964: one letter
deleted, inserted, substituted or two adjacent letters swapped), applied to one or two words of four or
more letters, never the first letter; a keyboard neighbour is used for insertions and substitutions.
Deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import random
import re

__all__ = ["typo_variant"]

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEAR = {
    c: "".join(
        _ROWS[r2][c2]
        for r2 in range(max(0, r - 1), min(3, r + 2))
        for c2 in range(max(0, i - 1), min(len(_ROWS[r2]), i + 2))
        if _ROWS[r2][c2] != c
    )
    for r, row in enumerate(_ROWS)
    for i, c in enumerate(row)
}
_WORD = re.compile(r"[A-Za-z]{4,}")


def _edit(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word))
    kind = rng.randrange(4)
    near = _NEAR.get(word[i].lower(), "e")
    if kind == 0:
        return word[:i] + word[i + 1 :]
    if kind == 1:
        return word[:i] + rng.choice(near) + word[i:]
    if kind == 2:
        return word[:i] + rng.choice(near) + word[i + 1 :]
    if i + 1 < len(word) and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + word[i + 1 :]  # nothing to swap: delete instead


def typo_variant(text: str, rng: random.Random) -> str:
    """``text`` with one or two of its words of 4+ letters misspelled by one edit each (see the module
    docstring), lower-cased half of the time; ``text`` unchanged when it has no such word."""
    spans = [m.span() for m in _WORD.finditer(text)]
    if not spans:
        return text
    chosen = sorted(rng.sample(spans, k=min(len(spans), rng.choice((1, 2)))))
    out, last = [], 0
    for a, b in chosen:
        out += [text[last:a], _edit(text[a:b], rng)]
        last = b
    out.append(text[last:])
    variant = "".join(out)
    return variant.lower() if rng.random() < 0.5 else variant
