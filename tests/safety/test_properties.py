"""Property tests: obfuscated risk statements keep their tier; negated ones never reach tier 3;
no input makes the screen raise."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launcher.safety import screen

LEET = {"i": ["1", "!"], "e": ["3"], "a": ["4", "@"], "o": ["0"], "s": ["5", "$"], "t": ["7"]}

TIER3 = [
    "I want to kill myself",
    "I'm going to end my life tonight",
    "I'm suicidal",
    "I want to commit suicide",
    "I wrote a suicide note",
    "I'm going to jump off a bridge",
]
NEGATED = ["I would never kill myself", "I'm not suicidal", "I am not going to end my life"]


@st.composite
def obfuscated(draw: st.DrawFn, phrase: str) -> str:
    out = []
    for word in phrase.split(" "):
        chars = []
        for i, ch in enumerate(word):
            kind = draw(st.sampled_from(["keep", "upper", "leet", "repeat"]))
            inner = 0 < i < len(word) - 1  # "!" only reads as a letter between letters
            if kind == "upper":
                chars.append(ch.upper())
            elif kind == "leet" and len(word) > 1 and ch.lower() in LEET:
                options = [c for c in LEET[ch.lower()] if c != "!" or inner]
                chars.append(draw(st.sampled_from(options)) if options else ch)
            elif kind == "repeat" and ch.isalpha():
                chars.append(ch * draw(st.integers(2, 4)))
            else:
                chars.append(ch)
        mapped = "".join(chars)
        if not any(c.isalpha() for c in mapped):
            mapped = word  # an all-digit word reads as a number ("70 jump"), so keep one real word
        out.append(mapped)
    return " ".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), phrase=st.sampled_from(TIER3))
def test_obfuscated_tier3_statements_stay_tier3(data: st.DataObject, phrase: str) -> None:
    text = data.draw(obfuscated(phrase))
    assert screen(text).tier == 3, text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), phrase=st.sampled_from(NEGATED))
def test_obfuscated_negations_never_reach_tier3(data: st.DataObject, phrase: str) -> None:
    text = data.draw(obfuscated(phrase))
    assert screen(text).tier <= 1, text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_screens_without_error(text: str) -> None:
    result = screen(text)
    assert 0 <= result.tier <= 3
    assert all(isinstance(r, str) and "." in r for r in result.reasons)
