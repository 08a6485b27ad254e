"""Agent output schemas: COACHING.md rules enforced in code, bounds, computed fields."""

from __future__ import annotations

from typing import Any

import pytest

from blackboard import (
    AGENT_NAMES,
    AGENT_OUTPUT_SCHEMAS,
    RISK_FAMILIES,
    CoachOutput,
    FollowThroughFeatures,
    PersonaOutput,
    RiskAssessment,
    SchemaValidationError,
    ShadowOutput,
    StabilityOutput,
    SynthesisOutput,
    Thresholds,
    band_for,
    follow_through_baseline,
    stability_gate,
    validate_output,
)

from .payloads import payload


def problems(agent: str, data: Any, thresholds: Thresholds | None = None) -> list[str]:
    with pytest.raises(SchemaValidationError) as info:
        validate_output(agent, data, thresholds)
    assert info.value.code == "schema_validation" and info.value.problems
    return info.value.problems


def test_every_agent_has_a_schema_and_the_examples_validate() -> None:
    assert tuple(AGENT_OUTPUT_SCHEMAS) == AGENT_NAMES
    assert AGENT_OUTPUT_SCHEMAS["pineal"] is SynthesisOutput
    for agent in AGENT_NAMES:
        model = validate_output(agent, payload(agent))
        # stored form re-validates to the same thing (computed fields are idempotent)
        dumped = model.model_dump(mode="json")
        assert validate_output(agent, dumped).model_dump(mode="json") == dumped


def test_unknown_agent_and_non_object_payloads() -> None:
    assert "unknown agent" in problems("sombra", {})[0]
    assert "expected a JSON object" in problems("coach", ["reply"])[0]


# --- Persona --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("score", "band"), [(0, "low"), (35, "low"), (35.1, "mid"), (64.9, "mid"), (65, "high"), (100, "high")]
)
def test_ocean_band_is_computed_from_pomp(score: float, band: str) -> None:
    p = payload("persona")
    p["traits"]["openness"] = {
        "score": score,
        "band": "high" if band == "low" else "low",
        "confidence": 0.5,
        "evidence_count": 1,
    }
    out = validate_output("persona", p)
    assert isinstance(out, PersonaOutput)
    assert out.traits.openness.band == band == band_for(score)


@pytest.mark.parametrize(
    ("field", "value"),
    [("score", 101), ("score", -1), ("confidence", 1.2), ("confidence", -0.1), ("evidence_count", -1)],
)
def test_trait_ranges(field: str, value: float) -> None:
    p = payload("persona")
    p["traits"]["neuroticism"][field] = value
    assert any(pr.startswith(f"traits.neuroticism.{field}") for pr in problems("persona", p))


def test_follow_through_percent_is_consistent_with_counts() -> None:
    p = payload("persona")
    p["follow_through"] = {"due": 4, "completed": 3}
    out = validate_output("persona", p)
    assert out.follow_through.percent == 75.0 and out.follow_through.status == "ok"  # type: ignore[attr-defined]
    p["follow_through"] = {"due": 4, "completed": 3, "percent": 75.3}
    assert validate_output("persona", p).follow_through.percent == 75.0  # type: ignore[attr-defined]
    p["follow_through"] = {"due": 4, "completed": 3, "percent": 60}
    out = validate_output("persona", p)  # recomputed from the counts, with a reason
    assert out.follow_through.percent == 75.0  # type: ignore[attr-defined]
    assert out.coerced == ["follow_through.percent_recomputed:60.0->75.0"]  # type: ignore[attr-defined]
    dumped = out.model_dump(mode="json")
    assert validate_output("persona", dumped).model_dump(mode="json") == dumped
    p["follow_through"] = {"due": 4, "completed": 5, "percent": 80}  # contradictory counts: unusable, reset
    out = validate_output("persona", p)
    ft = out.follow_through  # type: ignore[attr-defined]
    assert (ft.due, ft.completed, ft.percent, ft.status) == (0, 0, None, "not_enough_data")
    assert out.coerced == [  # type: ignore[attr-defined]
        "follow_through.counts_reset:completed5_gt_due4",
        "follow_through.percent_nulled:80.0:due0",
    ]


def test_shadow_contradictory_commitments_are_reset_and_class_downgraded() -> None:
    p = payload("shadow")
    p["pattern_class"] = "consistent_executor"
    p["commitments"] = {"due": 0, "completed": 1, "sessions": 1000}
    out = validate_output("shadow", p)
    assert out.pattern_class == "insufficient_data"  # type: ignore[attr-defined]
    c = out.commitments  # type: ignore[attr-defined]
    assert (c.due, c.completed, c.sessions) == (0, 0, 1000)
    assert out.coerced[:2] == [  # type: ignore[attr-defined]
        "commitments_reset:completed1_gt_due0",
        "class_downgraded:consistent_executor:due0_sessions1000",
    ]
    ft = out.follow_through  # type: ignore[attr-defined]
    assert ft.baseline == follow_through_baseline(0, 0, ft.features)  # from the prior: no usable evidence


def test_follow_through_not_enough_data_below_three_due() -> None:
    p = payload("persona")
    p["follow_through"] = {"due": 2, "completed": 2}
    out = validate_output("persona", p)
    assert out.follow_through.percent is None and out.follow_through.status == "not_enough_data"  # type: ignore[attr-defined]
    p["follow_through"] = {"due": 2, "completed": 2, "percent": 100}
    out = validate_output("persona", p)
    assert out.follow_through.percent is None  # type: ignore[attr-defined]
    assert out.coerced == ["follow_through.percent_nulled:100.0:due2"]  # type: ignore[attr-defined]


# --- Shadow -------------------------------------------------------------------------------------------
def shadow(p: Any, thresholds: Thresholds | None = None) -> ShadowOutput:
    out = validate_output("shadow", p, thresholds)
    assert isinstance(out, ShadowOutput)
    return out


def test_shadow_class_needs_three_due_over_two_sessions() -> None:
    """Below the evidence bar a class is downgraded to insufficient_data (never upgraded), with a reason."""
    p = payload("shadow")
    p["commitments"] = {"due": 2, "completed": 0, "sessions": 3}
    out = shadow(p)
    assert out.pattern_class == "insufficient_data"
    assert out.coerced == ["class_downgraded:inclined_abstainer:due2_sessions3"]
    p["commitments"] = {"due": 5, "completed": 0, "sessions": 1}
    assert shadow(p).pattern_class == "insufficient_data"
    p["pattern_class"] = "insufficient_data"
    out = shadow(p)
    assert out.pattern_class == "insufficient_data" and out.coerced == []
    # stored form re-validates to the same thing, reason kept
    p["pattern_class"] = "overcommitter"
    dumped = shadow(p).model_dump(mode="json")
    assert shadow(dumped).model_dump(mode="json") == dumped


@pytest.mark.parametrize(
    "cls",
    [
        "consistent_executor",
        "inclined_abstainer",
        "overcommitter",
        "externally_driven",
        "competing_commitment",
    ],
)
@pytest.mark.parametrize(("due", "sessions"), [(0, 0), (2, 5), (3, 1), (100, 1)])
def test_no_class_without_the_evidence(cls: str, due: int, sessions: int) -> None:
    p = payload("shadow")
    p.update(pattern_class=cls, commitments={"due": due, "completed": 0, "sessions": sessions})
    out = shadow(p)
    assert out.pattern_class == "insufficient_data"
    assert out.coerced[0].startswith(f"class_downgraded:{cls}:")


def test_shadow_class_must_match_follow_through_definitions() -> None:
    p = payload("shadow")
    p["pattern_class"] = "consistent_executor"
    out = shadow(p)
    assert out.pattern_class == "insufficient_data"
    assert out.coerced == ["class_downgraded:consistent_executor:follow_through1of5"]
    p["commitments"] = {"due": 10, "completed": 8, "sessions": 2}
    out = shadow(p)
    assert out.pattern_class == "consistent_executor" and out.coerced == []
    p["pattern_class"] = "inclined_abstainer"
    out = shadow(p)
    assert out.pattern_class == "insufficient_data"
    assert out.coerced == ["class_downgraded:inclined_abstainer:follow_through8of10"]


def test_every_stated_vs_revealed_claim_cites_two_distinct_evidence_items() -> None:
    p = payload("shadow")
    p["patterns"][0]["evidence"] = [
        {"session": "s1", "turn": "t1"},
        {"session": "s1", "turn": "t1", "note": "again"},
    ]
    out = shadow(p)
    assert out.patterns == [] and out.coerced == ["pattern_dropped:0:evidence1"]
    p["patterns"][0]["evidence"] = [{"session": "s1", "turn": "t1"}]
    assert shadow(p).patterns == []
    p["patterns"][0]["evidence"] = [{"session": "s1", "turn": "t1"}, {"session": "s2", "turn": "t1"}]
    assert len(shadow(p).patterns) == 1
    out = shadow(p, Thresholds(shadow_min_evidence=3))
    assert out.patterns == [] and out.coerced == ["pattern_dropped:0:evidence2"]


def test_follow_through_baseline_formula() -> None:
    f = FollowThroughFeatures()
    assert follow_through_baseline(0, 0, f) == 0.5  # prior only
    assert follow_through_baseline(8, 8, f) == round(9 / 10, 4)
    full = FollowThroughFeatures(
        has_if_then_plan=True, change_talk_share=1.0, sustain_talk=True, goal_growth=True
    )
    # (1 + 1) / (2 + 2) + 0.10 + 0.05 * 0.5 - 0.10 - 0.05
    assert follow_through_baseline(2, 1, full) == round(0.5 + 0.10 + 0.025 - 0.10 - 0.05, 4)
    assert follow_through_baseline(100, 100, FollowThroughFeatures(has_if_then_plan=True)) == 0.95  # clip
    assert follow_through_baseline(100, 0, FollowThroughFeatures(sustain_talk=True)) == 0.05  # clip
    with pytest.raises(ValueError):
        follow_through_baseline(1, 2, f)


def test_model_adjustment_needs_a_reason_and_is_clamped() -> None:
    p = payload("shadow")  # 1/5 completed, %CT 0.4 -> baseline (1+1)/(5+2) - 0.005
    baseline = follow_through_baseline(5, 1, FollowThroughFeatures(change_talk_share=0.4))
    out = validate_output("shadow", p)
    assert isinstance(out, ShadowOutput)
    assert out.follow_through.baseline == out.follow_through.probability == baseline
    p["follow_through"]["probability"] = 0.9
    out = shadow(p)  # no reason: reset to the baseline
    assert out.follow_through.probability == baseline
    assert out.coerced == ["probability_reset:no_adjustment_reason"]
    p["follow_through"]["adjustment_reason"] = "booked a trainer"
    out = validate_output("shadow", p)
    assert out.follow_through.probability == round(baseline + 0.15, 4) and out.follow_through.clamped  # type: ignore[attr-defined]
    p["follow_through"]["probability"] = round(baseline - 0.1, 4)
    out = validate_output("shadow", p)
    assert out.follow_through.probability == round(baseline - 0.1, 4) and not out.follow_through.clamped  # type: ignore[attr-defined]
    p["follow_through"]["probability"] = 1.5
    assert problems("shadow", p)[0].startswith("follow_through.probability")


# --- Stability ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("s", "o", "d", "r", "category", "blocked", "caution"),
    [
        (9, 1, 1, 1, "none", True, False),  # S >= 9
        (8, 1, 1, 1, "none", False, False),
        (7, 1, 1, 8, "none", True, False),  # S >= 7 & R >= 8
        (7, 1, 7, 7, "none", False, True),  # caution: S >= 5 & R >= 6
        (7, 1, 8, 1, "none", True, False),  # S >= 7 & D >= 8
        (5, 8, 5, 1, "none", True, False),  # RPN 200
        (5, 5, 4, 1, "none", False, True),  # RPN 100 -> caution
        (4, 5, 4, 1, "none", False, False),  # RPN 80
        (5, 1, 1, 6, "none", False, True),
        (1, 1, 1, 1, "medication_or_diagnosis", True, False),
        (1, 1, 1, 1, "coaching_presented_as_therapy", True, False),
    ],
)
def test_stability_gate(s: int, o: int, d: int, r: int, category: str, blocked: bool, caution: bool) -> None:
    g = stability_gate(s, o, d, r, category)
    assert (g.blocked, g.caution, g.rpn) == (blocked, caution, s * o * d)
    assert bool(g.block_reasons) == blocked


def test_a_model_cannot_unblock_but_may_block() -> None:
    p = payload("stability")
    p["moves"][1].update(blocked=False, caution=False, rpn=1, block_reasons=[])
    out = validate_output("stability", p)
    assert isinstance(out, StabilityOutput)
    fast = out.moves[1]
    assert (
        fast.blocked
        and fast.rpn == 8 * 3 * 8
        and fast.block_reasons == ["severity>=7&detection_difficulty>=8"]
    )
    p["moves"][0]["blocked"] = True  # harmless walk, but the model wants it blocked: safer, kept
    assert validate_output("stability", p).moves[0].block_reasons == ["model_flagged"]  # type: ignore[attr-defined]


def test_gate_thresholds_come_from_config() -> None:
    p = payload("stability")
    out = validate_output("stability", p, Thresholds(block_severity_with_detection=(9, 9)))
    assert not out.moves[1].blocked  # type: ignore[attr-defined]


@pytest.mark.parametrize("field", ["severity", "occurrence", "detection_difficulty", "reversibility"])
@pytest.mark.parametrize("value", [0, 11])
def test_ratings_are_one_to_ten(field: str, value: int) -> None:
    p = payload("stability")
    p["moves"][0][field] = value
    assert problems("stability", p)[0].startswith(f"moves.0.{field}")


def test_move_ids_are_unique_and_categories_known() -> None:
    p = payload("stability")
    p["moves"][1]["id"] = "walk"
    p["moves"].append({**p["moves"][0], "id": "walk-2"})
    p["moves"].append(dict(p["moves"][1]))
    out = validate_output("stability", p)
    assert isinstance(out, StabilityOutput)
    # duplicates renamed deterministically, never overwriting another move; the gate ran on every move
    assert [m.id for m in out.moves] == [
        "walk",
        "walk-3",
        *[m["id"] for m in p["moves"][2:-2]],
        "walk-2",
        "walk-4",
    ]
    assert out.coerced == ["move_renamed:walk:walk-3", "move_renamed:walk:walk-4"]
    assert out.moves[1].blocked and out.moves[-1].blocked and not out.moves[0].blocked
    dumped = out.model_dump(mode="json")
    assert validate_output("stability", dumped).model_dump(mode="json") == dumped
    p = payload("stability")
    p["moves"][0]["category"] = "astrology"
    assert problems("stability", p)[0].startswith("moves.0.category")


# --- Plasticity, Coach, Pineal --------------------------------------------------------------------------
def test_tailoring_needs_confidence_and_evidence() -> None:
    p = payload("plasticity")
    trait = p["tailoring"][0]["trait"]
    n = len(p["tailoring"])
    p["tailoring"][0]["confidence"] = 0.49
    out = validate_output("plasticity", p)
    assert len(out.tailoring) == n - 1  # type: ignore[attr-defined]
    assert out.coerced == [f"tailoring_dropped:0:{trait}:below_bar"]  # type: ignore[attr-defined]
    p["tailoring"][0].update(confidence=0.9, evidence_count=4)
    assert len(validate_output("plasticity", p).tailoring) == n - 1  # type: ignore[attr-defined]
    out = validate_output("plasticity", p, Thresholds(tailoring_min_evidence=4))
    assert len(out.tailoring) == n and out.coerced == []  # type: ignore[attr-defined]


def test_citations_need_a_valid_key_or_agent_and_version() -> None:
    assert "key or an agent" in problems("pineal", {"text": "x", "citations": [{"version": 1}]})[0]
    assert problems("pineal", {"text": "x", "citations": [{"key": "../etc", "version": 1}]})
    assert problems("pineal", {"text": "x", "citations": [{"agent": "shadow", "version": 0}]})
    assert problems("pineal", {"text": "x", "citations": [{"agent": "sombra", "version": 1}]})


# --- bounds and unknown fields -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("agent", "mutate"),
    [
        ("coach", lambda p: p.update(reply="x" * 4001)),
        ("coach", lambda p: p.update(reply="")),
        ("pineal", lambda p: p.update(text="x" * 8001)),
        ("pineal", lambda p: p.update(citations=[{"agent": "shadow", "version": 1}] * 31)),
        ("shadow", lambda p: p.update(summary="x" * 1201)),
        ("shadow", lambda p: p["patterns"][0].update(stated="x" * 301)),
        ("shadow", lambda p: p.update(patterns=p["patterns"] * 11)),
        ("persona", lambda p: p.update(growth_areas=["a"] * 11)),
        ("persona", lambda p: p.update(goals=[{"description": "g"}] * 21)),
        ("plasticity", lambda p: p.update(do=["a"] * 11)),
        ("stability", lambda p: p.update(moves=[dict(p["moves"][0], id=f"m{i}") for i in range(21)])),
        ("stability", lambda p: p["moves"][0].update(keywords=["k" * 81])),
        ("stability", lambda p: p["moves"][0].update(id="bad id")),
        ("coach", lambda p: p.update(extra="field")),
        ("persona", lambda p: p["traits"].pop("openness")),
    ],
)
def test_oversize_missing_or_unknown_input_is_a_validation_error(agent: str, mutate: Any) -> None:
    p = payload(agent)
    mutate(p)
    assert problems(agent, p)


def test_problems_name_the_field_and_do_not_echo_input() -> None:
    p = payload("coach")
    p["reply"] = "secret user text " * 300
    (only,) = problems("coach", p)
    assert only.startswith("reply:") and "secret" not in only


def test_thresholds_defaults_and_validation() -> None:
    t = Thresholds()
    assert (t.band_low, t.band_high, t.block_rpn, t.caution_rpn, t.ft_max_model_adjustment) == (
        35,
        65,
        200,
        100,
        0.15,
    )
    with pytest.raises(ValueError):
        Thresholds(band_low=70, band_high=60)
    with pytest.raises(ValueError):
        Thresholds(unknown=1)  # type: ignore[call-arg]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    p = payload("persona")
    p["traits"]["openness"]["score"] = bad
    assert problems("persona", p)[0].startswith("traits.openness.score")


@pytest.mark.parametrize("model", [CoachOutput, StabilityOutput])
def test_risk_assessment_comes_first_and_defaults_keep_older_entries_valid(model: Any) -> None:
    schema = model.model_json_schema()
    assert next(iter(schema["properties"])) == "risk"  # a model fills it before the reply / the moves
    # The Coach's advertised schema requires it (grammars write required properties first, so the risk
    # is complete before a streamed reply's first word); validation still defaults it (below).
    assert ("risk" in schema.get("required", [])) is (model is CoachOutput)
    risk = schema["$defs"]["RiskAssessment"]
    assert set(risk["properties"]) == {"tier", "family", "quote"} and risk.get("required") is None
    assert not any(p.get("readOnly") for p in risk["properties"].values())  # input fields only
    assert tuple(risk["properties"]["family"]["enum"]) == RISK_FAMILIES
    assert risk["properties"]["quote"]["maxLength"] == 300
    agent = "coach" if model is CoachOutput else "stability"
    older = validate_output(agent, payload(agent))  # written before the field existed
    assert older.risk == RiskAssessment() and older.model_dump()["risk"] == {
        "tier": 0,
        "family": "none",
        "quote": "",
    }
    assert validate_output(agent, older.model_dump(mode="json")) == older


def test_risk_assessment_bounds_and_coercions() -> None:
    given = validate_output(
        "coach", {"risk": {"tier": 3, "family": "plan", "quote": "  I have a plan  "}, "reply": "hi"}
    )
    assert given.risk == RiskAssessment(tier=3, family="plan", quote="I have a plan")  # type: ignore[attr-defined]
    assert RiskAssessment(tier=0, family="plan", quote="some words").quote == ""  # no quote at tier 0
    long = RiskAssessment(tier=3, family="plan", quote="word " * 100)
    assert len(long.quote) <= 300 and long.quote.endswith("word")  # cut at a space, not rejected
    assert any(
        p.startswith("risk.family")
        for p in problems("coach", {"risk": {"tier": 3, "family": "despair"}, "reply": "hi"})
    )
    assert any(
        p.startswith("risk.tier") for p in problems("stability", {"risk": {"tier": 4, "family": "plan"}})
    )
    assert any(
        p.startswith("risk.") for p in problems("coach", {"risk": {"tier": 1, "mood": "low"}, "reply": "hi"})
    )
