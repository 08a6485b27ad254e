"""A wish to die with a time ("i want to die tonight") is a timeline: tier 3 (COACHING.md: "explicit
intent, plan, means or timeline"). It was tier 2 (passive ideation), also with means added. Hyperbole,
negation and questions keep their lower tiers."""

from __future__ import annotations

import pytest

from launcher.safety import screen


@pytest.mark.parametrize(
    "text",
    [
        "i want to die tonight",
        "i want to die tonight, i have the pills",
        "im ready to die tonite",
        "I just want to be dead today",
    ],
)
def test_wish_to_die_with_a_time_is_tier_3(text: str) -> None:
    result = screen(text)
    assert result.tier == 3 and "t3.timeline" in result.reasons, (text, result.reasons)


@pytest.mark.parametrize(
    ("text", "max_tier"),
    [
        ("I don't want to die tonight", 1),
        ("do I want to die today? no", 2),
        ("I'm going to die today of boredom at this meeting", 0),
        ("i want to die today of embarrassment", 2),
        ("i wanted to die tonight years ago", 2),
        ("I would rather die than go to the gym today", 0),
    ],
)
def test_negation_questions_hyperbole_and_past_stay_below_3(text: str, max_tier: int) -> None:
    result = screen(text)
    assert result.tier <= max_tier, (text, result.reasons)
