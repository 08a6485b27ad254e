"""Robust phrase matching used to find blocked (or caution) moves in free text.

Normalisation: Unicode NFKD with accents removed, casefold, every non-alphanumeric run is a space.
A phrase matches a text when

* its content tokens (light suffix stemming, stop words removed on both sides) occur contiguously in
  the text's content tokens ("stop taking your meds" ~ "Stop-taking meds"), or
* for phrases of >= 6 letters, the phrase with all spaces removed occurs in the text with all spaces
  removed (defeats "f a s t i n g" and "waterfast"), or
* (descriptions only) the description's core tokens -- leading instruction words ("suggest the user"),
  numbers and time words removed -- occur in order within a window of 3x their count
  ("Quit your job this week" ~ "then quit the job").

A move's phrases are its keywords and its description. False positives are preferred to misses: this guards safety rules.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["PhraseMatcher", "content_tokens", "normalise"]

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_STOP = frozenset(
    "a an the to of for and or your my his her their our its you i me we they them it this that "
    "with in on at by be is are was were just some any".split()
)
_LEADING_FILLER = frozenset(
    "suggest suggesting suggests recommend recommending advise advising encourage encouraging tell telling "
    "ask asking propose proposing user users client clients person them they the a an to that try trying "
    "do doing should".split()
)
_TIME_WORDS = frozenset(
    "day days week weeks month months year years today tonight tomorrow daily weekly monthly minute minutes "
    "hour hours morning evening night next this every".split()
)


def normalise(text: str) -> str:
    """Lower-case ASCII-folded text with single spaces between alphanumeric runs."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).casefold()
    return _NON_ALNUM.sub(" ", folded).strip()


def _stem(tok: str) -> str:
    for suf in ("ing", "ed", "es", "s", "e"):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3:
            tok = tok[: -len(suf)]
            break
    if len(tok) >= 4 and tok[-1] == tok[-2] and tok[-1] not in "aeiouls":
        tok = tok[:-1]
    return tok


def content_tokens(text: str) -> list[str]:
    """Stemmed, stop-word-free tokens of ``text``."""
    return [_stem(t) for t in normalise(text).split() if t not in _STOP]


@dataclass(frozen=True, slots=True)
class _Phrase:
    tokens: tuple[str, ...]
    squashed: str


def _in_order(needle: tuple[str, ...], hay: list[str], window: int) -> bool:
    for start, tok in enumerate(hay):
        if tok != needle[0]:
            continue
        i = 1
        for tok2 in hay[start + 1 : start + window]:
            if i == len(needle):
                break
            if tok2 == needle[i]:
                i += 1
        if i == len(needle):
            return True
    return False


class PhraseMatcher:
    """Matches any of a set of phrases in texts (see module docstring)."""

    def __init__(self, phrases: Iterable[str], cores: Iterable[tuple[str, ...]] = ()) -> None:
        self._cores = tuple(c for c in cores if c)
        seen: dict[tuple[str, ...], _Phrase] = {}
        for p in phrases:
            toks = tuple(content_tokens(p))
            if toks and toks not in seen:
                seen[toks] = _Phrase(toks, normalise(p).replace(" ", ""))
        self._phrases = tuple(seen.values())

    @classmethod
    def for_move(cls, description: str, keywords: Sequence[str] = ()) -> PhraseMatcher:
        words = normalise(description).split()
        while words and words[0] in _LEADING_FILLER:
            words.pop(0)
        core = tuple(_stem(w) for w in words if w not in _STOP and w not in _TIME_WORDS and not w.isdigit())
        return cls([*keywords, description, " ".join(words)], [core])

    def __bool__(self) -> bool:
        return bool(self._phrases or self._cores)

    def matches(self, text: str) -> bool:
        toks = content_tokens(text)
        squashed = normalise(text).replace(" ", "")
        for p in self._phrases:
            n = len(p.tokens)
            if any(tuple(toks[i : i + n]) == p.tokens for i in range(len(toks) - n + 1)):
                return True
            if len(p.squashed) >= 6 and p.squashed in squashed:
                return True
        return any(_in_order(c, toks, 3 * len(c)) for c in self._cores)
