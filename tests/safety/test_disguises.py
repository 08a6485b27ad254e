"""Disguised crisis statements (fresh-eyes pass): accents on Latin letters and Cyrillic/Greek look-alike
letters inside English words must not hide a tier-3 statement; other scripts are left as written."""

from __future__ import annotations

import pytest

from launcher.safety import screen
from launcher.safety._normalize import normalize


@pytest.mark.parametrize(
    "text",
    [
        "i want to kíll myself tonight",  # combining-free accented i
        "i want to ki\u0301ll myself",  # i + combining acute
        "I w\u0430nt to kill myself",  # Cyrillic a in "want"
        "i want to kill mys\u0435lf",  # Cyrillic e in "myself"
        "i w\u03b1nt to k\u0456ll myself tonite",  # Greek alpha, Cyrillic i, misspelling
    ],
)
def test_disguised_intent_is_tier_3(text: str) -> None:
    result = screen(text)
    assert result.tier == 3, (text, result.reasons)


def test_plain_text_and_other_scripts_are_unchanged() -> None:
    assert [c.text for c in normalize("café naïve plan")] == ["cafe naive plan"]
    assert normalize("Я хочу") == normalize("Я хочу")  # no crash, Cyrillic words untouched
    assert screen("I'm not suicidal, just tired of the naïve plan").tier < 3
