"""The screen's layers together: the semantic layer catches what the rules miss, negation still never
reaches tier 3, the session's earlier risk makes a later action tier 3, and an agent's quote must look
like risk to raise the tier. The examples are written for these tests (not from any evaluation set)."""

from __future__ import annotations

import pytest

from launcher.safety import SafetyConfig, SafetyState, screen
from launcher.safety._judgement import judge_raise
from launcher.safety._semantic import semantic_layer

RULES_ONLY = SafetyConfig(semantic=False)


@pytest.fixture(scope="module", autouse=True)
def _loaded() -> None:
    semantic_layer()  # load the model once for the module


@pytest.mark.parametrize(
    "text",
    [
        "I've been quietly saying goodbye to people this week, they don't know it's the last time",
        "there is a spot on the cliff path I keep walking to at night and standing right at the edge",
    ],
)
def test_semantic_layer_catches_paraphrases_the_rules_miss(text: str) -> None:
    assert screen(text, None, RULES_ONLY).tier < 2
    result = screen(text)
    assert result.tier >= 2 and any(r.startswith(("sem.", "ctx.")) for r in result.reasons)


@pytest.mark.parametrize(
    "text",
    [
        "this deadline is killing me",
        "I'd rather die than give that speech again",
        "dead tired after the night shift",
        "we need to pull the plug on the project",
        "my phone died halfway through the call",
    ],
)
def test_idioms_stay_below_tier_2_with_every_layer(text: str) -> None:
    assert screen(text).tier < 2


def test_negated_risk_never_reaches_tier_2_through_the_semantic_layer() -> None:
    result = screen("I'm not going to kill myself, I just feel flat today")
    assert result.tier <= 1


def test_earlier_risk_makes_a_later_action_tier_3() -> None:
    # round 3: "I have everything ready for tonight" is tier 3 alone now (a means family with a time
    # word, sem3.means), so the later message here names no time
    later = "lined up everything i need"  # round 7's head reads "everything is ready ..." as tier 3 alone
    assert screen(later, SafetyState()).tier < 3  # alone: not a crisis
    state = SafetyState()
    assert screen("honestly I wish I could fall asleep and never wake up", state).tier == 2
    result = screen(later, state)
    assert result.tier == 3 and any(r.startswith("ctx.") for r in result.reasons)


def test_switching_the_semantic_layer_off_leaves_only_rule_ids() -> None:
    result = screen("I've been quietly saying goodbye to people this week", None, RULES_ONLY)
    assert not any(r.startswith(("sem.", "sem2.", "sem3.", "ctx.")) for r in result.reasons)


def test_an_agent_quote_without_risk_content_cannot_raise_the_tier() -> None:
    message = "I keep saying I'll start running and then I don't"
    noise = {"tier": 3, "family": "plan", "quote": "I keep saying I'll start running"}
    decision = judge_raise(message, noise, 0, agent="coach")
    assert not decision.accepted and decision.reason == "quote_not_supporting"
    real = "I keep saying I'll start running. Honestly I've decided tonight is the night I end it"
    evidence = {"tier": 3, "family": "intent", "quote": "tonight is the night I end it"}
    assert judge_raise(real, evidence, 1, agent="coach").accepted
