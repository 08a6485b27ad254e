"""Round 5 of issue 12: composed tier-3 signals (:mod:`launcher.safety._compose`) and the round's family
rules. An act and a qualifier in different clauses of one message, a qualifier alone after earlier risk
(or a means acquired after distress), a medical emergency or someone else's overdose said as its parts,
a conditional with a bare act. Each case was written for this test (none taken from any evaluation set
or ../shared/data); each positive case was below tier 3 on the round-4 rules, and each negative one is a
look-alike the new rules must leave alone."""

from __future__ import annotations

import pytest

from launcher.safety import SafetyConfig
from launcher.safety import screen as _screen
from launcher.safety._compose import COMPOSED_IDS, composed_hits, conditional_go
from launcher.safety._lexical import RULE_IDS
from launcher.safety._normalize import normalize
from testsupport.safety_rules import screen_after, screen_rules

screen = screen_rules
after = screen_after


CRISES = [
    # an act and a qualifier in different clauses (C-SSRS items 2 + 3-5)
    ("the plan is to hang myself: saturday, the old quarry", "t3.composed_"),
    ("kms. rope is in the boot of the car", "t3.composed_means"),
    ("ending my life, the railway bridge near work, after the night shift", "t3.composed_"),
    ("thinkin of unaliving myself, got a hose for the exhaust", "t3.composed_means"),
    ("wen the lease runs out thats the day i end everything", "t3.conditional_timeline"),
    # the act under way, said in few words or slang
    ("od'd", "t3.in_progress"),
    ("engine's been running in the shut garage for ten minutes", "t3.in_progress"),
    ("downed a whole strip of my sertraline", "t3.in_progress"),
    # medical emergencies with no risk word, and someone else's overdose, as their parts
    ("my dad banged his head on the cupboard, now he is really drowsy and being sick", "t3.composed_medical"),
    ("she's been fitting for over 5 minutes", "t3.medical_emergency"),
    ("my cousin took a bunch of tablets at the party, she's snoring funny", "t3.composed_danger"),
    ("grandad can't feel the right side of his face", "t3.medical_emergency"),
    # an earlier attempt in the same message stops only the act's composition, not an emergency now
    (
        "after his last attempt he swore he was done, now he took a load of painkillers, hes snoring funny",
        "t3.composed_danger",
    ),
    ("my brother attempted the climb and hit his head, now hes drowsy and vomiting", "t3.composed_medical"),
    # a medicine asked for so as not to wake up
    ("what pills could i take to just not wake up", "t3.lethal_means_wish"),
]


@pytest.mark.parametrize(("text", "rule"), CRISES)
def test_composed_crises_are_tier_3(text: str, rule: str) -> None:
    result = screen(text)
    assert result.tier == 3, result.reasons
    assert any(r.startswith(rule) for r in result.reasons), result.reasons


CONTEXT_CRISES = [
    ("i dont want to be alive anymore", "the rope is in my bag", "t3.context_means"),
    ("i want to die", "its set. sunday", "t3.context_plan"),
    ("honestly i wish i was dead", "please look after the cat for me", "t3.context_farewell"),
    ("i want to die", "2 more days", "t3.context_time"),
    ("i feel so hopeless, nothing matters", "picked up a hose from the hardware shop", "t3.context_means"),
    ("i feel hopeless about everything", "when the kids leave for uni, i go", "t3.conditional_timeline"),
    ("i feel so worthless", "im sat on the railway tracks near the level crossing", "t3.in_progress"),
    ("everything is hopeless", "im clocking out for good this time", "t3.euphemism_intent"),
    ("i cant see a way forward", "hanging seems like the surest way", "t3.context_method"),
    ("nobody cares about me", "how deep does a river have to be before you go under", "t3.context_method"),
    ("i cant live like this", "ive made up my mind", "t3.context_plan"),
]


@pytest.mark.parametrize(("earlier", "text", "rule"), CONTEXT_CRISES)
def test_qualifier_after_earlier_risk_or_distress_is_tier_3(earlier: str, text: str, rule: str) -> None:
    result = after(earlier, text)
    assert result.tier == 3 and rule in result.reasons, result.reasons


LOOK_ALIKES = [
    "i shot myself in the foot with that email on monday",
    "im so ashamed of myself for skipping the gym, the plan was monday",
    "years ago i thought about killing myself on a bridge, i'm in a good place now",
    "after my suicide attempt in 2018 i am planning a celebration for 5 years clean",
    "i'm not going to kill myself tonight, i promise",
    "i took all my meds today like the doctor said",
    "once the release ships, I'm done with this job",
    "when the kids are at school I go for a run",
    "hit my head on the shelf, bit sore",
    "diabetic here, what snacks keep my sugar steady?",
    "my teenager won't wake up for school",
    "i killed it at the gym on friday",
    "he's convulsing with laughter at the video",
    "which tablets help me sleep through the night",
    "how deep is the pool at the leisure centre",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_stay_below_tier_3(text: str) -> None:
    result = screen(text)
    assert result.tier < 3, result.reasons
    assert not any(r in COMPOSED_IDS for r in result.reasons)


@pytest.mark.parametrize(
    ("earlier", "text"),
    [
        ("i want to die", "gave the pills to my sister to keep for me"),  # a safety step
        ("i want to die", "thanks for the chat, bye"),  # the end of a chat, not a farewell
        ("i want to die", "there are plenty of fish in the sea i guess"),  # an idiom, not a place
        ("i want to die", "I work on the 8th floor so I take the lift"),
        ("i'm so stressed about work", "got a rope for the climbing wall"),  # no earlier risk or acquisition
    ],
)
def test_ordinary_follow_ups_stay_below_tier_3(earlier: str, text: str) -> None:
    assert after(earlier, text).tier < 3


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("when the season ends, i go", "t2.timeline_ambiguous"),
        ("im sat on the railway tracks near the level crossing", "t2.act_ambiguous"),
        ("im clocking out for good this time", "t2.euphemism_ambiguous"),
    ],
)
def test_an_ambiguous_act_is_a_pause_without_distress(text: str, rule: str) -> None:
    result = screen(text)
    assert result.tier == 2 and rule in result.reasons, result.reasons


def test_conditional_go_needs_the_act_bare_at_the_end() -> None:
    assert conditional_go(normalize("once the sale goes through, im out"))
    assert conditional_go(normalize("once the money clears thats the end of me"))
    assert not conditional_go(normalize("once the sale goes through, im out of here to spain"))
    assert not conditional_go(normalize("im out, once the sale goes through"))


def test_a_negated_act_does_not_compose() -> None:
    clauses = normalize("not going to end everything, the bridge is just on my way")
    assert composed_hits(clauses, [], ["t3.euphemism_intent"], risk_now=False, earlier_risk=False) == []


def test_a_weak_act_needs_risk_of_its_own() -> None:
    clauses = normalize("the book about suicide prevention is due tomorrow")
    assert composed_hits(clauses, [], [], risk_now=False, earlier_risk=False) == []
    hits = composed_hits(normalize("gonna end it, tomorrow"), [], [], risk_now=True, earlier_risk=False)
    assert hits == [("t3.composed_time", 3, True)]


def test_composed_rule_ids_are_known_and_can_be_disabled() -> None:
    assert COMPOSED_IDS <= RULE_IDS
    text = "kms. rope is in the boot of the car"
    cfg = SafetyConfig(semantic=False, disabled_rules=["t3.composed_means"])
    result = _screen(text, None, cfg)
    assert "t3.composed_means" not in result.reasons and result.tier < 3
