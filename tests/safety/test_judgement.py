"""``judge_raise``: when an agent's risk assessment raises the screen's tier (and when it is refused), and
``apply_raise`` merging an accepted one through ``combine_tiers``."""

from __future__ import annotations

import pytest

from blackboard import RISK_FAMILIES, RiskAssessment
from launcher.safety import (
    FAMILY_TIER_FLOOR,
    REFUSALS,
    SafetyConfig,
    SafetyState,
    ScreenResult,
    apply_raise,
    judge_raise,
)

MESSAGE = "It's all arranged for Friday.  I have everything ready, and I won't need my bike anymore!"


def risk(tier: int, family: str, quote: str) -> RiskAssessment:
    return RiskAssessment(tier=tier, family=family, quote=quote)  # type: ignore[arg-type]


def test_accepted_raise_carries_the_tier_and_rule_ids_only() -> None:
    d = judge_raise(MESSAGE, risk(3, "preparatory", "I have everything ready"), 0, agent="coach")
    assert d.accepted and d.tier == 3 and d.family == "preparatory" and d.reason == ""
    assert d.rules == ("model.coach.raised_t3", "model.family.preparatory")
    assert "everything" not in repr(d.rules)  # ids, never the quote


@pytest.mark.parametrize(
    "quote",
    [
        "“I have everything ready,”",  # typographic quotes and the comma around it
        "i HAVE   everything\nready",  # case and whitespace
        "ＩＴ'Ｓ ＡＬＬ ＡＲＲＡＮＧＥＤ for friday",  # full-width letters (NFKC)
        "It’s all arranged for Friday",  # a typographic apostrophe
        MESSAGE,  # the whole message
        "won't need my bike anymore!",
    ],
)
def test_quote_is_found_after_normalisation(quote: str) -> None:
    d = judge_raise(MESSAGE, risk(3, "preparatory", quote), 1, agent="stability")
    assert d.accepted, d
    assert d.rules[0] == "model.stability.raised_t3"


def test_quote_absent_from_the_message_is_refused() -> None:
    d = judge_raise(MESSAGE, risk(3, "plan", "I will do it tonight"), 0, agent="coach")
    assert not d.accepted and d.tier == 0 and d.reason == "quote_not_in_message"
    assert d.rules == ("model.coach.refused_quote_not_in_message",)


@pytest.mark.parametrize(
    "paraphrase",
    [
        "I have got everything ready",
        "everything is ready",
        "I have all I need ready",
        "I have everything prepared",
    ],
)
def test_paraphrased_quote_is_refused(paraphrase: str) -> None:
    d = judge_raise(MESSAGE, risk(3, "preparatory", paraphrase), 0, agent="coach")
    assert not d.accepted and d.reason == "quote_not_in_message"


def test_quote_must_sit_on_word_boundaries() -> None:
    d = judge_raise("I will skill myself up this year", risk(3, "intent", "kill myself"), 0, agent="coach")
    assert not d.accepted and d.reason == "quote_not_in_message"


@pytest.mark.parametrize(
    ("tier", "family"),
    [
        (2, "plan"),
        (2, "means"),
        (2, "medical_emergency"),
        (2, "none"),
        (2, "distress"),
        (3, "distress"),
        (3, "none"),
        (1, "self_harm"),
        (1, "abuse"),
    ],
)
def test_family_inconsistent_with_the_tier_is_refused(tier: int, family: str) -> None:
    d = judge_raise(MESSAGE, risk(tier, family, "I have everything ready"), 0, agent="coach")
    assert not d.accepted and d.reason == "family_tier_mismatch"
    assert d.rules == ("model.coach.refused_family_tier_mismatch",)


@pytest.mark.parametrize(
    ("tier", "family"), [(1, "distress"), (1, "none"), (2, "abuse"), (3, "passive_ideation")]
)
def test_family_at_or_above_its_floor_is_consistent(tier: int, family: str) -> None:
    assert judge_raise(MESSAGE, risk(tier, family, "I have everything ready"), 0, agent="coach").accepted


@pytest.mark.parametrize(("tier", "current"), [(2, 2), (2, 3), (3, 3), (1, 2)])
def test_a_tier_not_above_the_current_one_is_refused(tier: int, current: int) -> None:
    family = {1: "distress", 2: "passive_ideation", 3: "plan"}[tier]
    d = judge_raise(MESSAGE, risk(tier, family, "I have everything ready"), current, agent="stability")
    assert not d.accepted and d.tier == current and d.reason == "not_higher"
    assert d.rules == ("model.stability.refused_not_higher",)


@pytest.mark.parametrize(
    ("quote", "reason"),
    [
        ("ready", "quote_too_short"),  # one word of the message: noise
        ("  ready!!  ", "quote_too_short"),
        ("Friday", "quote_too_short"),
        ("...", "quote_missing"),
        ("", "quote_missing"),
        ("   ", "quote_missing"),
    ],
)
def test_noise_quotes_are_refused(quote: str, reason: str) -> None:
    d = judge_raise(MESSAGE, risk(3, "preparatory", quote), 0, agent="coach")
    assert not d.accepted and d.reason == reason


def test_a_one_word_message_may_be_quoted_whole() -> None:
    assert judge_raise("Goodbye.", risk(3, "preparatory", "goodbye"), 0, agent="coach").accepted


@pytest.mark.parametrize(
    "assessment",
    [
        None,
        {},
        {"tier": "3", "family": "plan", "quote": "I have everything ready"},
        {"tier": 3, "family": "despair", "quote": "I have everything ready"},
        {"tier": True, "family": "plan", "quote": "x y"},
        {"tier": 9, "family": "plan", "quote": "I have everything ready"},
    ],
)
def test_malformed_assessments_are_refused_without_raising(assessment: object) -> None:
    d = judge_raise(MESSAGE, assessment, 0, agent="coach")
    assert not d.accepted and d.reason == "invalid" and d.rules == ("model.coach.refused_invalid",)


def test_a_mapping_works_like_the_model() -> None:
    d = judge_raise(
        MESSAGE, {"tier": 2, "family": "abuse", "quote": "all arranged for Friday"}, 0, agent="coach"
    )
    assert d.accepted and d.rules == ("model.coach.raised_t2", "model.family.abuse")


def test_the_evidence_hook_can_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    from launcher.safety import _judgement

    seen: list[tuple[str, str, int]] = []

    def supports(quote: str, family: str, tier: int, message: str) -> bool:
        seen.append((quote, family, tier))
        return False

    monkeypatch.setattr(_judgement, "_quote_supports", supports)
    d = judge_raise(MESSAGE, risk(3, "preparatory", "I have everything ready"), 0, agent="coach")
    assert not d.accepted and d.reason == "quote_not_supporting"
    assert seen == [("i have everything ready", "preparatory", 3)]


def test_families_and_refusals_are_closed_lists() -> None:
    assert set(FAMILY_TIER_FLOOR) == set(RISK_FAMILIES)
    assert len(RISK_FAMILIES) == 16
    assert set(REFUSALS) == {
        "invalid",
        "not_higher",
        "family_tier_mismatch",
        "quote_missing",
        "quote_too_short",
        "quote_not_in_message",
        "quote_not_supporting",
    }


def test_apply_raise_merges_through_combine_tiers_and_starts_the_post_crisis_window() -> None:
    base = ScreenResult(tier=1, reasons=["t1.distress"])
    state = SafetyState(turn=4)
    accepted = judge_raise(MESSAGE, risk(3, "preparatory", "I have everything ready"), 1, agent="coach")
    merged = apply_raise(base, accepted, state=state, config=SafetyConfig(post_crisis_turns=5))
    assert merged.tier == 3 and merged.model_raised
    assert merged.reasons == [
        "t1.distress",
        "model.raised",
        "model.coach.raised_t3",
        "model.family.preparatory",
    ]
    assert state.crisis_turns_left == 5
    refused = judge_raise(MESSAGE, risk(3, "plan", "not in there at all"), 1, agent="coach")
    other = SafetyState()
    assert apply_raise(base, refused, state=other) is base and other.crisis_turns_left == 0
