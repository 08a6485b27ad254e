"""Text normalisation for the safety screen: robust to misspellings, spacing and leetspeak.

Pipeline (each step is deterministic and pure):

1. Unicode NFKC, lowercase; accents dropped from Latin letters ("kíll" -> "kill") and Cyrillic/Greek
   look-alike letters mapped to Latin inside words that mix them with Latin letters ("wаnt" with a
   Cyrillic "а" -> "want"), the usual disguises (Unicode TR #39 confusables); typographic apostrophes to ``'``; ``'`` inside words removed
   ("don't" -> "dont", "i'm" -> "im"); ``/`` and ``\\`` become spaces.
2. Split into clauses at sentence punctuation (``. ! ? ; ,`` followed by space or end), newlines and
   the word "but": negation never crosses a clause.
3. Tokens: leetspeak is mapped only inside tokens that contain a letter (``1->i 3->e 4->a 0->o 5->s
   7->t @->a $->s``, ``!`` between letters -> i; ``1`` -> l when that spells a risk word: "ki11"), so "52 days" stays a number and "k1ll" becomes "kill"; then every character
   that is not a letter or digit is dropped ("k.i.l.l" -> "kill", "self-harm" -> "selfharm").
   A token that is a key word with two adjacent letters swapped (not the first) is restored
   (:data:`TRANSPOSE_KEYS`: "wnat" -> "want", "klil" -> "kill"; Damerau distance 1 by transposition).
4. Runs of three or more one-letter tokens are joined, split into known words where they split
   (:data:`SEGMENT_WORDS`: "s u i c i d e" -> "suicide", "i w a n t" -> "i want").
5. Repeated letters collapse to one ("kiiill" and "kill" -> "kil"). Lexicon patterns are collapsed the
   same way (:func:`collapse_pattern`), so both sides compare in the same space.
6. Slang expansion ("kms" -> "kil myself", "unalive" -> "kil", "sewerslide" -> "suicide"); key
   phrases and every word of a risk phrase split by inserted spaces are re-joined when they span
   whole tokens ("ki ll my self" -> "kil myself", "wa nt" -> "want", never "skill myself").
7. Edit-distance tolerance: a token of 5+ letters that is not a protected common word and is within
   Damerau-Levenshtein distance 1 of a key token with the same first letter
   is replaced by that key ("sucide" -> "suicide", "myslef" -> "myself"). Misspellings rarely change
   the first letter (Yannakoudakis & Fawthrop 1983, "The rules of spelling errors"), and requiring it
   keeps common words such as "skill" and "pills" from turning into "kill".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Clause", "collapse_pattern", "collapse_word", "damerau", "normalize"]

_LEET = str.maketrans({"1": "i", "3": "e", "4": "a", "0": "o", "5": "s", "7": "t", "@": "a", "$": "s"})
_BANG_IN_WORD = re.compile(r"(?<=[a-z])!(?=[a-z])")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"})
_CLAUSE_SPLIT = re.compile(r"[.!?;,:]+(?=\s|$)|\n+|\s[-\u2013\u2014]+\s|\bbut\b")
_HAS_LETTER = re.compile(r"[a-z]")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
#: Words of intent before "to" (collapsed spelling: "need" is "ned"): a lone "2" after them reads as "to"
#: ("want 2 die"), and "to self delete" after them is the writer's act.
_TO_BEFORE = frozenset(
    {"want", "going", "ned", "have", "like", "ready", "about", "plan", "planing", "tried", "try", "wish",
     "decided", "tempted", "gona", "wana"}
)  # fmt: skip
_REPEAT = re.compile(r"([a-z])\1+")
_SPACED_HYPHEN = re.compile(r"(?<=\bself)\s+[-\u2013\u2014]+\s+(?=delet)")
#: ... and before a verb of the act ("hw mch tylnol 2 die").
_TO_AFTER = frozenset({"die", "kil", "end", "od", "overdose", "hang", "be"})

#: Slang and euphemisms mapped to their plain form (collapsed spelling). Sources: Crisis Text Line and
#: Samaritans media guidance on online euphemisms for suicide ("unalive", "sewer slide", "kms", "kys").
SLANG: dict[str, str] = {
    "kms": "kil myself",
    "kys": "kil yourself",
    "unalive": "kil",
    "unaliving": "kiling",
    "sewerslide": "suicide",
    "wana": "want to",
    "gona": "going to",
    "gota": "got to",
    "imma": "im going to",
    "ima": "im going to",
    # short and misspelt forms people text (the key word cut short or spelt by sound)
    "ded": "dead",
    "2moro": "tomorow",
    "2morow": "tomorow",
    "tmrw": "tomorow",
    "tmr": "tomorow",
    "tomoro": "tomorow",
    "2nite": "tonight",
    "tonite": "tonight",
    "tnight": "tonight",
    "ofing": "kiling",
    "oded": "overdosed",
    "exsist": "exist",
    "exsit": "exist",
    "tablits": "tablets",
    "suicde": "suicide",
    "sucide": "suicide",
    "suiside": "suicide",
    "unalived": "kiled",
    # round 6: key words cut below the edit-distance step's five letters, and dialect forms
    "hng": "hang",
    "hngin": "hanging",
    "kyl": "kil",
    "kyld": "kiled",
    "masel": "myself",
    "meself": "myself",
    "mesel": "myself",
    "maself": "myself",
    "miself": "myself",
    "mysef": "myself",
    # round 10: "gnna" (collapsed "gna"), the night cut short
    "gna": "going to",
    "nite": "night",
    "mysel": "myself",
    "gonae": "going to",
    "gonane": "going to",
    "dae": "do",
    "tkn": "taken",
    "atak": "atack",
    "hw": "how",
    "hing": "hang",
    "xans": "xanax",
    "canae": "cant",
    "heid": "head",
    "sein": "seing",
    "herat": "heart",
    "swalowd": "swalowed",
    "urself": "yourself",
    "wat": "what",
    "mch": "much",
    "mny": "many",
    "hart": "heart",
}

#: Slang of one or two tokens mapped to its plain form after the tokens are made (collapsed spelling),
#: with whether it is slang only as the writer's own act ("im going to self delete", not "messages self
#: delete after a day"; see :func:`_writer_act`).
PHRASE_SLANG: tuple[tuple[tuple[str, ...], tuple[str, ...], bool], ...] = (
    (("self", "delete"), ("kil", "myself"), True),
    (("self", "deleting"), ("kiling", "myself"), True),
    (("selfdelete",), ("kil", "myself"), True),
    (("selfdeleting",), ("kiling", "myself"), True),
    (("sewer", "slide"), ("suicide",), False),
    (("un", "alive"), ("kil",), False),
)

#: Key tokens that tolerate small edit distance (collapsed spelling).
FUZZY_KEYS: frozenset[str] = frozenset(
    {
        "suicide",
        "suicidal",
        "myself",
        "tonight",
        "tomorow",
        "codeine",
        "knife",
        "yourself",
        "overdose",
        "overdosed",
        "overdosing",
        "hopeles",
        "worthles",
        "helples",
        "ambulance",
        "breathe",
        "breathing",
        "bleding",
        "hanging",
        "lethal",
        "molested",
        "abusive",
        "selfharm",
        "depresed",
        "paracetamol",
        "tylenol",
        "ibuprofen",
        "painkilers",
        "sertraline",
        "seizure",
    }
)

#: Risk words (collapsed) that decide whether a leet "1" reads as "l" ("ki11" -> "kill").
L_WORDS: frozenset[str] = frozenset(
    {"kil", "kiling", "kiled", "kils", "myself", "self", "pils", "pil", "lethal", "bleding", "helples",
     "hopeles", "worthles", "alone", "life", "live", "living", "suicidal", "selfharm", "bulet", "bulets"}
)  # fmt: skip

#: Key phrases (canonical tokens) re-joined when inserted spaces split them (see :func:`_resegment`):
#: every word of the risk phrases ("i wa nt to di e to night" -> "i want to die tonight").
RESEGMENT: tuple[tuple[str, ...], ...] = (
    ("kil", "myself"), ("end", "my", "life"), ("hang", "myself"), ("hurt", "myself"), ("cut", "myself"),
    ("suicidal",), ("suicide",), ("overdose",), ("selfharm",), ("die",), ("dead",), ("myself",),
    ("want",), ("going",), ("tonight",), ("today",), ("tomorow",), ("pils",), ("tablets",), ("gun",),
    ("rope",), ("kil",), ("life",), ("wake",), ("goodbye",),
)  # fmt: skip

#: Words a run of spaced single letters may be split into ("i w a n t" -> "i want", not "iwant");
#: collapsed spelling. A run that does not split into these words is joined as one token.
SEGMENT_WORDS: frozenset[str] = frozenset(
    {
        "i", "a", "im", "am", "to", "my", "me", "it", "al", "and", "the", "is", "be", "so", "do", "go", "of",
        "on", "in", "at", "now", "want", "wana", "going", "gona", "wil", "die", "dead", "kil", "myself",
        "self", "end", "life", "hang", "hurt", "cut", "suicide", "suicidal", "overdose", "tonight", "today",
        "tomorow", "pils", "take", "tok", "gun", "rope", "never", "wake", "up", "not", "just", "need",
        "plan", "ready", "goodbye", "everyone", "done", "cant", "dont", "live", "anymore",
    }
)  # fmt: skip

#: Key words (normal spelling) that tolerate one swap of two adjacent letters after the first letter
#: ("wnat" -> "want"), whatever their length (the edit-distance step below needs 5+ letters).
TRANSPOSE_KEYS: frozenset[str] = frozenset(
    {"want", "kill", "dead", "pills", "going", "gonna", "wanna", "tonight", "today", "myself", "suicide",
     "suicidal", "overdose", "hang", "die", "end", "life", "self"}
)  # fmt: skip

#: Key words (collapsed) whose final "g" texters drop ("killin", "takin my own life", "2moro mornin"):
#: a token that is one of these without its "g" is restored (round 10; the g-dropping of spoken English).
G_DROPPED: frozenset[str] = frozenset(
    {"kiling", "taking", "hanging", "ending", "dying", "doing", "going", "cuting", "jumping", "overdosing",
     "hurting", "planing", "morning", "evening", "swalowing", "shoting", "drowning", "bleding", "leaving",
     "giving", "saying", "writing", "starving", "burning", "stabing", "slaping", "hiting", "beating",
     "choking", "punching", "kicking", "happening", "making", "shaking", "breathing"}
)  # fmt: skip

#: Key words (collapsed) texters write without their vowels ("gnna kill mslf", "frdy nite", "jmp frm"):
#: a token with no vowel (a, e, i, o, u) whose consonants are a key's consonants (with or without its "y")
#: is read as that key (round 10). Abbreviations that share a skeleton with a key are never mapped
#: (:data:`_SKELETON_PROTECTED`: "pls" is "please", not "pills").
SKELETON_KEYS: tuple[str, ...] = (
    "myself", "kiling", "kiled", "suicide", "suicidal", "tonight", "tomorow", "overdose", "overdosed",
    "hanging", "tablets", "godbye", "chest", "jump", "jumping", "from", "friday", "saturday", "sunday", "monday",
    "tuesday", "wednesday", "thursday", "weekend", "night", "planing",
)  # fmt: skip
_SKELETON_PROTECTED: frozenset[str] = frozenset(
    {"pls", "plz", "ppl", "msg", "txt", "thx", "thnx", "btw", "smh", "tbh", "ngl", "brb", "lmk", "hmu",
     "wtf", "nvm", "fyi", "hbd", "irl", "srs", "sry", "srsly", "mfw", "tfw", "ty", "gn", "gm", "dm", "jk",
     "rn", "bc", "idk", "nm", "np", "pm", "tv", "wk", "mth", "yr", "yrs", "hr", "hrs", "min", "kg", "km",
     "snd", "dnt", "pst", "scd", "mnd", "gdb"}
)  # fmt: skip


def _skeleton(word: str) -> str:
    return re.sub(r"[aeiou]", "", word)


def _skeletons() -> dict[str, str]:
    out: dict[str, str] = {}
    for key in SKELETON_KEYS:
        for sk in {_REPEAT.sub(r"\1", _skeleton(key)), _REPEAT.sub(r"\1", _skeleton(key).replace("y", ""))}:
            if len(sk) >= 3 and sk not in _SKELETON_PROTECTED:
                out.setdefault(sk, key)
    return out


_SKELETON_MAP: dict[str, str] = _skeletons()


def _texted(token: str) -> str:
    """A key word restored from its texted form (round 10): the dropped final "g" ("killin" ->
    "kiling") or the dropped vowels ("mslf" -> "myself"); else ``token``. Collapsed spelling in and out."""
    if not token.isalpha():
        return token
    if token.endswith("in") and token + "g" in G_DROPPED:
        return token + "g"
    if len(token) >= 3 and not re.search(r"[aeiou]", token) and token not in _SKELETON_PROTECTED:
        return _SKELETON_MAP.get(token, token)
    return token


#: Common words close to a key that must never be "corrected" into it.
PROTECTED: frozenset[str] = frozenset(
    {
        "dei",
        "lief",
        "overdue",
        "overdoes",
        "overdone",
        "breding",
        "bleating",
        "breath",
        "hangings",
        "abusing",
        "overused",
        "overdoing",
    }
)


#: Cyrillic and Greek letters that look like Latin ones (lowercase; from Unicode TR #39 confusables).
_LOOKALIKES = str.maketrans({
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y", "\u0445": "x",
    "\u0456": "i", "\u0458": "j", "\u0455": "s", "\u043a": "k", "\u043c": "m", "\u0442": "t", "\u043d": "h",
    "\u0432": "b", "\u0501": "d", "\u04bb": "h", "\u0457": "i", "\u0451": "e",
    "\u03bf": "o", "\u03b1": "a", "\u03b5": "e", "\u03b9": "i", "\u03ba": "k", "\u03bd": "v", "\u03c4": "t",
    "\u03c5": "u", "\u03c1": "p",
})  # fmt: skip
_WORD = re.compile(r"\w+")


def _fold_latin(text: str) -> str:
    """Drop combining accents from Latin letters and map look-alike letters in mixed-script words."""

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        if w.isascii():
            return w
        if any("a" <= ch <= "z" for ch in w):
            w = w.translate(_LOOKALIKES)
        stripped = "".join(ch for ch in unicodedata.normalize("NFD", w) if not unicodedata.combining(ch))
        return stripped if stripped.isascii() else w  # other scripts are left as written

    return _WORD.sub(word, text)


def collapse_word(word: str) -> str:
    """Collapse runs of a repeated letter to one letter: ``"kiiill" -> "kil"``."""
    return _REPEAT.sub(r"\1", word)


def collapse_pattern(pattern: str) -> str:
    """Collapse repeated literal letters in a regex source, leaving escapes (``\\bb``) intact.

    Used to compile lexicon patterns written in normal spelling into the collapsed space of
    :func:`normalize`. Only letters directly following the same literal letter are dropped.
    """
    out: list[str] = []
    prev_literal = ""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            prev_literal = ""
            i += 2
            continue
        if ch.isalpha() and ch == prev_literal:
            i += 1
            continue
        out.append(ch)
        prev_literal = ch if ch.isalpha() else ""
        i += 1
    return "".join(out)


def damerau(a: str, b: str, limit: int = 2) -> int:
    """Optimal-string-alignment (restricted Damerau-Levenshtein) distance, capped at ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def _transposed(token: str) -> str:
    """``token`` with one swap of two adjacent letters (not the first) undone when that spells a
    :data:`TRANSPOSE_KEYS` word ("wnat" -> "want", "klil" -> "kill"); else ``token``."""
    if token in TRANSPOSE_KEYS or token in PROTECTED or not token.isalpha():
        return token
    for i in range(1, len(token) - 1):
        swapped = token[:i] + token[i + 1] + token[i] + token[i + 2 :]
        if swapped in TRANSPOSE_KEYS:
            return swapped
    return token


def _segment(letters: str) -> list[str]:
    """Split a run of spaced single letters into :data:`SEGMENT_WORDS` (fewest words); ``[letters]``
    when it does not split ("iwant" -> ["i", "want"], "suicide" -> ["suicide"], "xqz" -> ["xqz"])."""
    n = len(letters)
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for end in range(1, n + 1):
        for start in range(max(0, end - 12), end):
            prev = best[start]
            if prev is None or collapse_word(letters[start:end]) not in SEGMENT_WORDS:
                continue
            cand = [*prev, letters[start:end]]
            cur = best[end]
            if cur is None or len(cand) < len(cur):
                best[end] = cand
    found = best[n]
    return found if found else [letters]


def _fuzzy(token: str, keys: Iterable[str]) -> str:
    if len(token) < 5 or token in PROTECTED or not token.isalpha():
        return token
    if token in keys:
        return token
    # ties ("overdoses" is one edit from "overdose" and from "overdosed") go to a key the token starts
    # with, then the shorter, then the first in alphabetical order: the same on every run (set order
    # follows the per-process string hash)
    close = [key for key in keys if key[0] == token[0] and damerau(token, key, 1) <= 1]
    if not close:
        return token
    return min(close, key=lambda key: (not token.startswith(key), len(key), key))


@dataclass(frozen=True)
class Clause:
    """One normalised clause: ``tokens`` (collapsed, corrected) and ``text`` (tokens joined by one space)."""

    tokens: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


#: A number with its unit or a clock time ("3am", "10pm", "20mg", "5th", "2x"): not leetspeak (round 10; "3am" was
#: read as "eam", so no time rule could see it).
_NUMBER_WITH_UNIT = re.compile(r"[0-9]+(?:[.:][0-9]+)?(?:am|pm|s|mg|mcg|ml|kg|g|k|h|hr|hrs|min|mins|x)")
_ORDINAL = re.compile(r"([0-9]*)([0-9])(st|nd|rd|th)")


def _is_number(token: str) -> bool:
    """A number with its unit, a clock time or an ordinal spelt right ("3rd", not "3nd": that is leet "end")."""
    if _NUMBER_WITH_UNIT.fullmatch(token):
        return True
    m = _ORDINAL.fullmatch(token)
    if m is None:
        return False
    tens, last, suffix = m.group(1)[-1:], m.group(2), m.group(3)
    want = "th" if tens == "1" else {"1": "st", "2": "nd", "3": "rd"}.get(last, "th")
    return suffix == want


def _deleet(raw: str) -> str:
    """Map leetspeak; "1" reads as "i" unless reading it as "l" gives a risk word ("ki11" -> "kill"). A number
    with its unit or a clock time is left as written (:data:`_NUMBER_WITH_UNIT`)."""
    if _is_number(_NON_ALNUM.sub("", raw)):
        return raw
    as_i = _BANG_IN_WORD.sub("i", raw.translate(_LEET))
    if "1" in raw:
        as_l = _BANG_IN_WORD.sub("i", raw.replace("1", "l").translate(_LEET))
        if collapse_word(_NON_ALNUM.sub("", as_l)) in L_WORDS:
            return as_l
    return as_i


def _resegment(tokens: list[str]) -> list[str]:
    """Re-join key words split by inserted spaces ("ki ll my self" -> "kil myself", "sui cide" ->
    "suicide"). A phrase is replaced only when its letters span whole tokens exactly, so "skill myself"
    never becomes "kill myself"."""
    if len(tokens) < 2:
        return tokens
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    pos = 0
    for i, t in enumerate(tokens):
        starts[pos] = i
        pos += len(t)
        ends[pos] = i
    compact = "".join(tokens)
    for phrase in RESEGMENT:
        flat = "".join(phrase)
        at = compact.find(flat)
        while at != -1:
            first, last = starts.get(at), ends.get(at + len(flat))
            if first is not None and last is not None and tuple(tokens[first : last + 1]) != phrase:
                return _resegment([*tokens[:first], *phrase, *tokens[last + 1 :]])
            at = compact.find(flat, at + 1)
    return tokens


#: Tokens before "self delete" that make it the writer's act, not a message that deletes itself.
_SELF_DELETE_BEFORE = frozenset(
    {
        "to",
        "going",
        "gona",
        "wana",
        "im",
        "i",
        "il",
        "wil",
        "just",
        "might",
        "should",
        "fina",
        "ima",
        "finaly",
        "ready",
    }
)


def _writer_act(tokens: list[str], i: int) -> bool:
    """Whether the words before ``tokens[i]`` make it the writer's own act: "im going to self delete",
    not "set the files to self delete on friday"."""
    if i == 0 or tokens[i - 1] not in _SELF_DELETE_BEFORE:
        return False
    return tokens[i - 1] != "to" or (i > 1 and tokens[i - 2] in _TO_BEFORE)


def _phrase_slang(tokens: list[str]) -> list[str]:
    """Replace the slang of :data:`PHRASE_SLANG` ("self delete" -> "kil myself") where a word of intent
    or the writer comes right before it ("im going to self delete"; "messages self delete after 24
    hours" stays)."""
    for phrase, plain, writers_act in PHRASE_SLANG:
        n = len(phrase)
        i = 0
        while i + n <= len(tokens):
            if tuple(tokens[i : i + n]) == phrase and (not writers_act or _writer_act(tokens, i)):
                tokens = [*tokens[:i], *plain, *tokens[i + n :]]
                i += len(plain)
            else:
                i += 1
    return tokens


def _tokens(raw_clause: str) -> list[str]:
    out: list[str] = []
    for raw in raw_clause.split():
        tok = _deleet(raw) if _HAS_LETTER.search(raw) else raw
        tok = _transposed(_NON_ALNUM.sub("", tok))
        if tok:
            out.append(tok)
    # join runs of >= 3 single-letter tokens ("s u i c i d e")
    joined: list[str] = []
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and len(out[j]) == 1 and out[j].isalpha():
            j += 1
        if j - i >= 3:
            joined.extend(_segment("".join(out[i:j])))
            i = j
        else:
            joined.append(out[i])
            i += 1
    return joined


def normalize(text: str) -> list[Clause]:
    """Normalise a message into clauses of canonical tokens (see the module docstring for the steps).

    Returns a list of :class:`Clause`; empty clauses are dropped. Never raises on any ``str`` input.
    """
    text = _fold_latin(unicodedata.normalize("NFKC", text).lower()).translate(_APOSTROPHES)
    text = re.sub(r"(?<=[a-z0-9])'(?=[a-z])", "", text)
    text = _BANG_IN_WORD.sub("i", text.replace("/", " ").replace("\\", " "))
    text = _SPACED_HYPHEN.sub("-", text)  # "self - delete": one word, not two clauses
    clauses: list[Clause] = []
    for raw_clause in _CLAUSE_SPLIT.split(text):
        toks: list[str] = []
        for tok in _tokens(raw_clause):
            tok = _texted(collapse_word(tok))
            expanded = SLANG.get(tok)
            if expanded is not None:
                toks.extend(expanded.split())
                continue
            toks.append(_fuzzy(tok, FUZZY_KEYS))
        toks = _phrase_slang(_resegment(toks))
        # "want 2 die": a lone "2" after a verb of intent reads as "to"
        toks = [
            "to"
            if t == "2"
            and ((i > 0 and toks[i - 1] in _TO_BEFORE) or (i + 1 < len(toks) and toks[i + 1] in _TO_AFTER))
            else t
            for i, t in enumerate(toks)
        ]
        if toks:
            clauses.append(Clause(tuple(toks)))
    return clauses
