"""Round 3 of issue 12, the rule layer: slang and cut-short intent ("gonna od"), "end it" with a time,
conditional timelines without "that's when", a preparatory act said together with what it prepares for,
passive wishes said as hopes, "sh" for self-harm, the six-word gap that the rule templates named but did
not define, someone else's question or worry about the user read as reported speech, and the
"preparatory act" fallback needing distress. Each case was written for this test (not taken from any
evaluation set); each fails on the rules before this round."""

from __future__ import annotations

import pytest

from launcher.safety import SafetyConfig, SafetyState, ScreenResult
from launcher.safety import screen as _screen

RULES_ONLY = SafetyConfig(semantic=False)


def screen(text: str, state: SafetyState | None = None) -> ScreenResult:
    return _screen(text, state, RULES_ONLY)


RAISED = [
    ("ok thats it, gonna od", 3, "t3.euphemism_intent"),
    ("im about to od i think", 3, "t3.euphemism_intent"),
    ("gonna end it this weekend", 3, "t3.euphemism_intent"),
    ("im going to end it tonite", 3, "t3.euphemism_intent"),
    ("the second the divorce papers are signed im killing myself", 3, "t3.conditional_timeline"),
    ("once my nan's funeral is over im unaliving", 3, "t3.conditional_timeline"),
    ("once the wedding is over im going to end it", 2, "t2.timeline_ambiguous"),
    ("if the interview goes badly friday is the day i end everything", 3, "t3.conditional_timeline"),
    ("payday is the day i end evrything", 2, "t2.timeline_ambiguous"),
    ("sold my camera and my vinyl so there is less for my sister to sort once im gone", 3, "t3.preparatory"),
    ("cancelled all my direct debits because i wont need any of it anymore", 3, "t3.preparatory"),
    ("honestly hoping something happens to me on the drive up", 2, "t2.passive_wish"),
    ("no reason left to carry on", 2, "t2.passive_wish"),
    ("i just dont want to go on", 2, "t2.passive_wish"),
    ("did sh again after the call", 2, "t2.self_harm"),
    ("she hit her head on the stairs and now shes confused and throwing up", 3, "t3.medical_emergency"),
]


@pytest.mark.parametrize(("text", "tier", "rule"), RAISED)
def test_round3_rule_families(text: str, tier: int, rule: str) -> None:
    result = screen(text)
    assert result.tier == tier, (text, result.reasons)
    assert rule in result.reasons


QUIET = [
    "im going to od on chocolate this easter",
    "going to end it tonight with him, he cheated",
    "once the project wraps up im going to end it with the client",
    "that's the day i go back to the office",
    "i dont want to go on the trip with them",
    "sold my old bike, i wont need it since i got the car",
    "gave away my winter coats to the shelter",
    "wrote thank you letters to my old teachers",
    "said goodbye to everyone at the climbing club, moving to bristol",
    "my counsellor asked whether i have suicidal thoughts, and i don't",
    "the nurse screened me for suicidal thoughts, all clear, just low",
    "my brother thinks i'm suicidal because i moved back home. i'm not",
]


@pytest.mark.parametrize("text", QUIET)
def test_round3_ordinary_stays_below_tier_2(text: str) -> None:
    result = screen(text)
    assert result.tier < 2, (text, result.reasons)


def test_reported_question_answered_yes_still_counts() -> None:
    assert screen("my gp asked if i'm suicidal and i said yes").tier == 3


def test_own_worry_is_not_reported_speech() -> None:
    assert screen("i'm worried i'm going to kill myself").tier == 3
    assert screen("i think i'm going to kill myself").tier == 3


def test_preparatory_fallback_needs_distress() -> None:
    assert screen("gave away all my games to my cousin").tier < 2
    state = SafetyState()
    screen("everything feels hopeless lately", state)
    assert screen("gave away all my games to my cousin", state).tier == 2
