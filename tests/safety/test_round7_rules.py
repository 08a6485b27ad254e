"""Round 7 of issue 12: rule families for a future absence with its date, being done with life, a
lethal amount or height, a means pictured on oneself, a dose swallowed, a plan named as a place, readiness
after preparing and the follow-up question that only the context makes a crisis; and the context rule
that no longer lets one semantic reading make the next one a crisis. Each case was written for this test
(none taken from any evaluation set or ../shared/data); each positive case was below tier 3 on the
round-6 rules, and each negative one is a look-alike the new rules must leave alone."""

from __future__ import annotations

import pytest

from launcher.safety import SafetyState
from launcher.safety._lexical import Context, _semantic_hits
from launcher.safety._normalize import normalize
from launcher.safety._semantic import SemanticVerdict
from testsupport.safety_rules import FixedVerdictLayer, screen_after, screen_rules

ALONE = [
    ("honestly i'm not getting back from this fishing trip alive, that's settled", "t3.euphemism_intent"),
    ("pretty sure I'm not seeing another birthday. not planning to", "t3.euphemism_intent"),
    ("i won't live to see the spring and i'm fine with that", "t3.euphemism_intent"),
    ("been saving enough of the tramadol to not wake up", "t3.method"),
    ("how many of these would it take to stop my heart", "t3.method"),
    ("wondering whether the drop from the car park roof would be enough", "t3.method"),
    ("i just downed the whole box with a bottle of cider", "t3.in_progress"),
    ("took the tablets i'd stockpiled in one go", "t3.in_progress"),
    ("my brother took every one of his pills at once and locked the door", "t3.other_in_danger"),
    ("my exit plan is the quarry, it's always been the quarry", "t3.plan"),
]

AFTER_RISK = [
    ("i don't want to be alive anymore", "is 40 enough?", "t3.lethal_means_request"),
    ("i want to die", "how much?", "t3.lethal_means_request"),
    ("i wish i could just stop existing", "i know exactly what they're for", "t3.lethal_means_request"),
    ("i don't want to be here anymore", "the plan's the multi-storey by the station", "t3.plan"),
    ("i keep wishing i was dead", "sorted the cat, wrote the cards. i'm ready to go now", "t3.preparatory"),
    ("i want to die so badly", "left a note for whoever finds me", "t3.preparatory"),
]

ORDINARY = [
    "my dog swallowed the lot, the whole bag of treats, is that dangerous for a labrador",
    "I won't see christmas with my family this year because of the rota",
    "i'm ready to go now, the taxi's outside",
    "enough paint to finish the fence by sunday",
    "how many eggs for a sponge cake?",
    "our plan is the rooftop bar at 8 then the club",
    "I took all my tablets today like the pharmacist said",
    "working out whether the drop from the stage would be enough for the stunt rig",
    "not coming home until the match is over lol",
]


@pytest.mark.parametrize(("text", "rule"), ALONE)
def test_round7_crises_alone_reach_tier_3(text: str, rule: str) -> None:
    r = screen_rules(text)
    assert r.tier == 3 and rule in r.reasons, (text, r.reasons)


@pytest.mark.parametrize(("earlier", "text", "rule"), AFTER_RISK)
def test_round7_follow_ups_after_risk_reach_tier_3(earlier: str, text: str, rule: str) -> None:
    r = screen_after(earlier, text)
    assert r.tier == 3 and rule in r.reasons, (text, r.reasons)


@pytest.mark.parametrize(("earlier", "text", "rule"), AFTER_RISK)
def test_round7_follow_ups_alone_are_not_crises(earlier: str, text: str, rule: str) -> None:
    assert screen_rules(text).tier < 3, text


@pytest.mark.parametrize("text", ORDINARY)
def test_round7_look_alikes_stay_below_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier < 2, (text, r.reasons)


def test_done_living_is_a_wish_to_be_dead_and_its_negation_is_not() -> None:
    assert screen_rules("i'm so done living like a ghost in my own house").tier == 2
    assert screen_rules("i'm not done living, i just need a break").tier < 2


@pytest.mark.parametrize(("rule_signal", "expected"), [(True, "ctx.intent"), (False, "sem.intent")])
def test_an_earlier_semantic_reading_alone_does_not_make_the_next_one_a_crisis(
    monkeypatch: pytest.MonkeyPatch, rule_signal: bool, expected: str
) -> None:
    # round 7: on the corpora a health-coaching chat read once as a plan made the next message about
    # "stepping away" tier 3; an earlier signal of the rules still does (docs/safety.md)
    import launcher.safety._semantic as semantic

    monkeypatch.setattr(
        semantic, "semantic_layer", lambda: FixedVerdictLayer(SemanticVerdict(2, "intent", 0.91, 0.6))
    )
    text = "so i'll be stepping away this weekend"
    ctx = Context(True, True, False, normalize(text), rule_signal)
    hits = _semantic_hits(text, [], [], ctx)
    assert hits[0][0] == expected and (hits[0][1] == 3) is rule_signal


def test_the_state_records_the_rules_signals_not_the_semantic_layers() -> None:
    state = SafetyState()
    screen_rules("i want to die", state)
    assert state.last_rule_signal_turn == 1
    screen_rules("what time is the match", state)
    assert state.last_rule_signal_turn == 1 and state.turn == 2
    assert SafetyState.model_validate({"turn": 3, "last_risk_turn": 2}).last_rule_signal_turn == 0
