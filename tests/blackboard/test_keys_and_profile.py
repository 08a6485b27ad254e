"""Keys (namespace safety) and the pure profile merge."""

from __future__ import annotations

import pytest

from blackboard import (
    InvalidKeyError,
    KeyParts,
    Thresholds,
    UserProfile,
    merge_profile,
    parse_key,
    profile_key,
    session_key,
    turn_entry_key,
    validate_output,
)

from .payloads import payload


def test_key_builders_and_parse_round_trip() -> None:
    assert turn_entry_key("u1", "s-1", "t.1", "shadow") == "users/u1/sessions/s-1/turns/t.1/shadow"
    assert session_key("u1", "s1") == "users/u1/sessions/s1"
    assert profile_key("u_1") == "users/u_1/profile"
    assert parse_key(turn_entry_key("u", "s", "t", "k")) == KeyParts("turn_entry", "u", "s", "t", "k")
    assert parse_key(session_key("u", "s")) == KeyParts("session", "u", "s")
    assert parse_key(profile_key("u")) == KeyParts("profile", "u")


@pytest.mark.parametrize("bad", ["..", ".", "", "a/b", "a\x00", "a b", "x" * 65, "ü", None, 3])
def test_unsafe_parts_are_refused_with_a_clear_message(bad: object) -> None:
    with pytest.raises(InvalidKeyError) as info:
        turn_entry_key("u", "s", "t", bad)  # type: ignore[arg-type]
    assert info.value.code == "invalid_key" and not info.value.retryable
    assert "agent_or_kind" in str(info.value)
    with pytest.raises(InvalidKeyError):
        profile_key(bad)  # type: ignore[arg-type]


def test_parse_key_refuses_long_keys() -> None:
    with pytest.raises(InvalidKeyError, match="limit"):
        parse_key("users/" + "a/" * 300)


def _persona(score: float, confidence: float = 0.6, evidence: int = 6) -> dict[str, object]:
    p = payload("persona")
    for name in p["traits"]:
        p["traits"][name] = {"score": score, "confidence": confidence, "evidence_count": evidence}
    return p


def test_first_session_takes_the_traits_as_they_are() -> None:
    prof = merge_profile(UserProfile(user="u"), {"persona": _persona(80)}, session="s1")
    assert (
        prof.traits is not None and prof.traits.openness.score == 80 and prof.traits.openness.band == "high"
    )
    assert prof.sessions_seen == 1 and prof.last_session == "s1"
    assert prof.follow_through is not None and prof.follow_through.percent == 20.0


def test_traits_move_at_most_ten_pomp_per_session() -> None:
    prof = merge_profile(UserProfile(user="u"), {"persona": _persona(50, evidence=2)}, session="s1")
    big = merge_profile(prof, {"persona": _persona(100, evidence=1000)}, session="s2")
    assert big.traits is not None and big.traits.openness.score == 60.0  # clamped +10
    small = merge_profile(prof, {"persona": _persona(54, evidence=2)}, session="s2")
    assert small.traits is not None and small.traits.openness.score == 52.0  # evidence-weighted mean
    down = merge_profile(
        prof, {"persona": _persona(0, evidence=50)}, Thresholds(trait_max_shift_per_session=5)
    )
    assert (
        down.traits is not None
        and down.traits.openness.score == 45.0
        and down.traits.openness.evidence_count == 52
    )


def test_band_is_recomputed_after_smoothing() -> None:
    prof = merge_profile(UserProfile(user="u"), {"persona": _persona(60)}, session="s1")
    assert prof.traits is not None and prof.traits.openness.band == "mid"
    prof = merge_profile(prof, {"persona": _persona(90)}, session="s2")
    assert (
        prof.traits is not None and prof.traits.openness.score == 70 and prof.traits.openness.band == "high"
    )


def test_shadow_goals_and_sessions_merge() -> None:
    prof = UserProfile(
        user="u",
        last_session="s1",
        sessions_seen=1,
        goals=[{"description": "Exercise in the morning", "mentions": 2}],
    )  # type: ignore[list-item]
    shadow = validate_output("shadow", payload("shadow"))
    new = merge_profile(
        prof, {"persona": _persona(50), "shadow": shadow, "coach": {"reply": "x"}}, session="s1"
    )
    assert new.sessions_seen == 1  # same session counted once
    assert new.goals[0].mentions == 5 and len(new.goals) == 1
    assert new.pattern_class == "inclined_abstainer" and new.follow_through_probability is not None
    assert prof.goals[0].mentions == 2  # pure: the old profile is unchanged


def test_merge_with_nothing_keeps_the_profile() -> None:
    prof = merge_profile(UserProfile(user="u"), {"persona": _persona(50)}, session="s1")
    assert merge_profile(prof, {}) == prof


def test_only_prose_goals_and_growth_areas_reach_the_profile() -> None:
    """Seen in a demo run: SmolLM2 put session ids into Persona's growth areas; the profile kept them."""
    persona = _persona(50)
    persona["growth_areas"] = ["r2", "r20261201T011420-s1", "maxLength: 100", "planning the first step"]
    persona["goals"] = [
        {"description": "t000001", "mentions": 1},
        {"description": "Walk after lunch", "mentions": 1},
    ]
    prof = merge_profile(UserProfile(user="u"), {"persona": persona}, session="s1")
    assert prof.growth_areas == ["planning the first step"]
    assert [g.description for g in prof.goals] == ["Walk after lunch"]
