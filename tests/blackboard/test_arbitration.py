"""Arbitration: deterministic brief, precedence and conflicts, synthesis validation, fallback."""

from __future__ import annotations

import random
from typing import Any

import pytest

from blackboard import (
    Brief,
    Entry,
    InvalidValueError,
    SynthesisOutput,
    build_brief,
    fallback_synthesis,
    turn_entry_key,
    validate_output,
    validate_synthesis,
)

from .payloads import payload


def entries(*agents: str, overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Entry]:
    out = {}
    for i, a in enumerate(agents):
        value = (overrides or {}).get(a) or payload(a)
        key = turn_entry_key("u", "s", "t000001", a)
        out[a] = Entry(key, value, 1, a, 1000.0 + i, 1000.0 + i, i + 1)
    return out


ALL = ("shadow", "persona", "plasticity", "stability", "coach")


def codes(brief: Brief) -> set[tuple[str, str, str, str | None]]:
    return {(c.winner, c.loser, c.reason_code, c.move_id) for c in brief.conflicts}


def test_same_entries_give_a_byte_identical_brief_whatever_the_order() -> None:
    base = entries(*ALL)
    first = build_brief(base).to_json()
    items = list(base.items())
    for seed in range(5):
        random.Random(seed).shuffle(items)
        assert build_brief(dict(items)).to_json() == first


def test_blocked_and_allowed_moves_with_reasons_and_caution_notes() -> None:
    brief = build_brief(entries(*ALL))
    assert [b.id for b in brief.blocked_moves] == ["fast"]
    assert brief.blocked_moves[0].reasons == ["severity>=7&detection_difficulty>=8"]
    allowed = {m.id: m for m in brief.allowed_moves}
    assert set(allowed) == {"walk", "quit"}
    assert allowed["quit"].caution and "professional" in allowed["quit"].notes[0]
    assert not allowed["walk"].caution and allowed["walk"].notes == []
    assert brief.mode == "coach" and brief.missing_agents == []
    assert [s.agent for s in brief.sources] == list(ALL)


def test_a_model_supplied_blocked_false_cannot_unblock_in_the_brief() -> None:
    stab = payload("stability")
    stab["moves"][1].update(blocked=False, block_reasons=[])
    brief = build_brief(entries(*ALL, overrides={"stability": stab}))
    assert [b.id for b in brief.blocked_moves] == ["fast"]


def test_stability_wins_over_plasticity_and_persona_suggesting_a_blocked_move() -> None:
    plast = payload("plasticity")
    plast["do"].append("propose a gentle Water-Fast challenge")
    persona = payload("persona")
    persona["growth_areas"].append("try intermittent f a s t i n g")
    brief = build_brief(entries(*ALL, overrides={"plasticity": plast, "persona": persona}))
    got = codes(brief)
    assert ("stability", "plasticity", "blocked_by_stability", "fast") in got
    assert ("stability", "persona", "blocked_by_stability", "fast") in got
    claim = next(c for c in brief.conflicts if c.loser == "plasticity" and c.move_id == "fast")
    assert claim.losing_claim == "propose a gentle Water-Fast challenge"  # the losing claim is kept


def test_caution_beats_tailoring_toward_the_move_or_stretch_framing() -> None:
    plast = payload("plasticity")
    plast["framing"] = "stretch goals that push harder"
    plast["do"].append("encourage them to quit the job now")
    brief = build_brief(entries(*ALL, overrides={"plasticity": plast}))
    got = codes(brief)
    assert ("stability", "plasticity", "caution_reversible_first_step_only", "quit") in got
    assert ("stability", "plasticity", "stretch_framing_under_caution", None) in got


def test_tailoring_checked_against_this_turns_persona() -> None:
    persona = payload("persona")
    persona["traits"]["conscientiousness"] = {"score": 70, "confidence": 0.3, "evidence_count": 9}
    brief = build_brief(entries(*ALL, overrides={"persona": persona}))
    assert ("persona", "plasticity", "tailoring_below_confidence_bar", None) in codes(brief)
    assert not brief.tailoring_allowed and brief.tailoring == []

    persona["traits"]["conscientiousness"] = {"score": 20, "confidence": 0.8, "evidence_count": 9}
    brief = build_brief(entries(*ALL, overrides={"persona": persona}))
    assert ("persona", "plasticity", "tailoring_contradicts_persona_band", None) in codes(brief)

    brief = build_brief(entries(*ALL))
    assert brief.tailoring_allowed and brief.tailoring[0]["trait"] == "conscientiousness"


@pytest.mark.parametrize("tier", [2, 3])
def test_safety_beats_everything(tier: int) -> None:
    brief = build_brief(entries(*ALL), crisis_tier=tier)
    assert brief.mode == ("crisis" if tier == 3 else "pause")
    assert brief.allowed_moves == [] and {b.id for b in brief.blocked_moves} == {"walk", "fast", "quit"}
    assert ("safety", "stability", f"safety_tier_{tier}", "walk") in codes(brief)
    assert ("safety", "plasticity", "safety_overrides_tailoring", None) in codes(brief)
    assert brief.conflicts[0].winner == "safety"  # precedence order in the list
    assert not brief.tailoring_allowed


def test_missing_and_invalid_entries_are_reported() -> None:
    es = entries("shadow", "stability")
    es["persona"] = Entry(
        turn_entry_key("u", "s", "t000001", "persona"), {"traits": {}}, 1, "persona", 0, 0, 9
    )
    es["meta"] = Entry(
        turn_entry_key("u", "s", "t000001", "meta"), {"crisis_tier": 0}, 1, "blackboard", 0, 0, 10
    )
    brief = build_brief(es)
    assert brief.missing_agents == ["persona", "plasticity", "coach"]
    assert [r.agent for r in brief.rejected_entries] == ["persona"]
    assert brief.present_agents == ["shadow", "stability"]
    with pytest.raises(InvalidValueError):
        build_brief(es, crisis_tier=4)


def test_coach_reply_naming_a_blocked_move_is_flagged() -> None:
    brief = build_brief(
        entries(*ALL, overrides={"coach": {"reply": "Maybe a water fast would reset things?"}})
    )
    assert ("stability", "coach", "coach_reply_mentions_blocked_move", "fast") in codes(brief)


# --- validate_synthesis ------------------------------------------------------------------------------
OK_TEXT = "One small step this week."


def synth(text: str, citations: list[dict[str, Any]] | None = None) -> SynthesisOutput:
    cites = citations if citations is not None else [{"agent": "shadow", "version": 1}]
    model = validate_output("pineal", {"text": text, "citations": cites})
    assert isinstance(model, SynthesisOutput)
    return model


@pytest.mark.parametrize(
    "text",
    [
        "You could try a water fast this weekend.",
        "Maybe WATER   FAST for a bit",
        "How about f-a-s-t-i-n-g this week?",
        "Consider intermittent Fasting.",
        "Some people do a five-day water fast.",
    ],
)
def test_synthesis_suggesting_a_blocked_move_is_rejected(text: str) -> None:
    problems = validate_synthesis(synth(text), build_brief(entries(*ALL)))
    assert [(p.code, p.move_id) for p in problems] == [("blocked_move", "fast")]


def test_caution_move_needs_a_professional() -> None:
    brief = build_brief(entries(*ALL))
    bad = validate_synthesis(synth("You might quit the job."), brief)
    assert [p.code for p in bad] == ["caution_without_professional"]
    ok = (
        "If you consider whether to quit the job, take one reversible step and talk to a career professional."
    )
    assert validate_synthesis(synth(ok), brief) == []


def test_citations_must_exist_at_the_cited_version() -> None:
    brief = build_brief(entries(*ALL))
    key = turn_entry_key("u", "s", "t000001", "persona")
    assert (
        validate_synthesis(
            synth(OK_TEXT, [{"key": key, "version": 1}, {"agent": "coach", "version": 1}]), brief
        )
        == []
    )
    cases = {
        "citation_version_mismatch": [{"agent": "shadow", "version": 2}],
        "citation_missing_entry": [{"key": turn_entry_key("u", "s", "t000009", "shadow"), "version": 1}],
        "citation_key_agent_mismatch": [{"key": key, "agent": "shadow", "version": 1}],
        "no_citations": [],
    }
    for code, cites in cases.items():
        assert [p.code for p in validate_synthesis(synth(OK_TEXT, cites), brief)] == [code]
    missing = build_brief(entries("shadow", "coach"))
    assert [
        p.code for p in validate_synthesis(synth(OK_TEXT, [{"agent": "persona", "version": 1}]), missing)
    ] == ["citation_missing_entry"]


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("...", False),
        ("Yes, ok.", False),
        ("1, 2, 3 go", False),
        ("Take one walk.", True),
        ("Él dará un paseo.", True),
    ],
)
def test_a_fragment_is_not_a_synthesis(text: str, ok: bool) -> None:
    codes = [p.code for p in validate_synthesis(synth(text), build_brief(entries(*ALL)))]
    assert codes == ([] if ok else ["text_too_short"])


# --- fallback ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tier", [0, 2, 3])
@pytest.mark.parametrize("agents", [ALL, ("shadow",), (), ("stability", "coach")])
def test_fallback_is_deterministic_and_always_valid(tier: int, agents: tuple[str, ...]) -> None:
    brief = build_brief(entries(*agents), crisis_tier=tier)
    a, b = fallback_synthesis(brief), fallback_synthesis(build_brief(entries(*agents), crisis_tier=tier))
    assert a == b
    assert validate_synthesis(a, brief) == []
    assert {(c.agent, c.version) for c in a.citations} == {(s.agent, s.version) for s in brief.sources}


def test_fallback_drops_sentences_that_would_name_a_blocked_move() -> None:
    stab = payload("stability")
    stab["moves"].append(
        {
            "id": "therapy",
            "description": "Present this as therapy",
            "keywords": ["therapist", "therapy"],
            "category": "coaching_presented_as_therapy",
            "severity": 3,
            "occurrence": 1,
            "detection_difficulty": 1,
            "reversibility": 1,
        }
    )
    brief = build_brief(entries(*ALL, overrides={"stability": stab}))
    fb = fallback_synthesis(brief)
    assert "therap" not in fb.text.lower()
    assert validate_synthesis(fb, brief) == []
    assert "set aside" in fb.text and "water" not in fb.text.lower()


def test_fallback_quotes_model_text_only_when_it_reads_as_prose() -> None:
    persona = payload("persona")
    persona["growth_areas"] = [
        "maxLength: 100",
        "tailoring_dropped:<i>:<trait>",
        "taking one small step a day",
    ]
    stab = payload("stability")
    for move in stab["moves"]:
        move["description"] = '{"type": "string"}'
    brief = build_brief(entries(*ALL, overrides={"persona": persona, "stability": stab}))
    fb = fallback_synthesis(brief)
    assert "A growth area to keep in view: taking one small step a day." in fb.text
    for copied in ("maxLength", "tailoring_dropped", '"type"', "One option to consider"):
        assert copied not in fb.text
    assert validate_synthesis(fb, brief) == []
    persona["growth_areas"] = ["maxLength: 100"]
    fb = fallback_synthesis(build_brief(entries(*ALL, overrides={"persona": persona})))
    assert "growth area" not in fb.text and "One option to consider" in fb.text
