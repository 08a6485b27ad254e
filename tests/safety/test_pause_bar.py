"""Round 11's pause bar: a risk family that the semantic layer reads just below its tier-2 bar (at or
above ``SemanticLayer.pause``) pauses coaching (tier 2, rule id ``sem2.<family>``) when nothing else put the
message at tier 2 or more, and does nothing else: it never makes tier 3 in the message, it is not applied
in the post-crisis window, and a one-sentence message whose risk the rules found negated stays below tier
2. It counts as risk for the session's later turns, as any pause does.

The semantic layer is replaced by :class:`testsupport.safety_rules.FixedVerdictLayer` (one boundary); the
shipped head's pause bar and its calibration are checked on the real head at the end.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from launcher.safety import SafetyConfig, SafetyState, screen, support_response
from launcher.safety._semantic import (
    HEAD_PATH,
    HeadError,
    SemanticLayer,
    SemanticVerdict,
    anchors_digest,
    load_head,
    save_head,
)
from launcher.safety._train import FA_PAUSE, FA_TIER2, set_thresholds
from testsupport.safety_rules import FixedVerdictLayer

ORDINARY = "honestly the week has been a lot and I keep going round in circles about it"
# tier 1, below the stand-in's tier-2 bar 0.9, at the layer's pause bar
NEAR_BAR = SemanticVerdict(1, "passive_ideation", 0.85, paused=True)
NOT_PAUSED = SemanticVerdict(1, "passive_ideation", 0.85)


def _use(monkeypatch: pytest.MonkeyPatch, layer: FixedVerdictLayer) -> None:
    import launcher.safety._semantic as semantic

    monkeypatch.setattr(semantic, "semantic_layer", lambda: layer)


@pytest.mark.parametrize(
    ("verdict", "reason"),
    [
        (NEAR_BAR, "sem2.passive_ideation"),  # at the pause bar: coaching pauses
        (SemanticVerdict(1, "plan", 0.8, paused=True), "sem2.plan"),  # a tier-3 family: still only a pause
        (NOT_PAUSED, None),  # below the bar, or a head without one
    ],
)
def test_a_risk_family_at_the_pause_bar_pauses_coaching(
    monkeypatch: pytest.MonkeyPatch, verdict: SemanticVerdict, reason: str | None
) -> None:
    _use(monkeypatch, FixedVerdictLayer(verdict))
    result = screen(ORDINARY)
    if reason:
        assert result.tier == 2 and result.reasons == [reason], result
    else:
        assert result.tier < 2 and not any(r.startswith("sem2.") for r in result.reasons), result


def _layer_scoring(pause: float | None, score: float, family: str) -> SemanticLayer:
    """The shipped head's decision rule (:meth:`SemanticLayer.assess`) with bars tier 2 = 0.9, tier 3 =
    0.95 and ``pause``, over one piece whose calibrated risk is ``score`` and whose likeliest family is
    ``family`` (the encoder is not run: ``_score`` gives that piece)."""
    head, _, _, _ = load_head()
    layer = SemanticLayer(None, head, 0.9, 0.95, pause)  # type: ignore[arg-type]
    p = np.full((1, len(head.families)), 0.01)
    p[0, head.families.index(family)] = 1.0
    p /= p.sum()
    layer._score = lambda text: (p, np.array([score]))  # type: ignore[method-assign]
    return layer


@pytest.mark.parametrize(
    ("pause", "score", "family", "tier", "paused"),
    [
        (0.8, 0.85, "passive_ideation", 1, True),  # at the pause bar, below tier 2
        (0.85, 0.85, "passive_ideation", 1, True),  # exactly at the bar
        (0.8, 0.8, "plan", 1, True),  # a tier-3 family: still tier 1 with the pause flag
        (0.86, 0.85, "passive_ideation", 1, False),  # below the bar
        (None, 0.85, "passive_ideation", 1, False),  # a head without a pause bar
        (0.8, 0.92, "passive_ideation", 2, False),  # at tier 2 the verdict is tier 2 itself
        (0.4, 0.3, "distress", 1, False),  # below half the tier-2 bar: distress, never a pause
        (0.4, 0.3, "coaching", 0, False),
    ],
)
def test_the_layer_flags_a_risk_family_read_at_its_pause_bar(
    pause: float | None, score: float, family: str, tier: int, paused: bool
) -> None:
    verdict = _layer_scoring(pause, score, family).assess("any text")
    assert (verdict.tier, verdict.paused) == (tier, paused), verdict
    if paused:
        assert verdict.family == family


def test_a_negated_one_sentence_message_is_not_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, FixedVerdictLayer(NEAR_BAR))
    result = screen("I am not going to kill myself")
    assert result.tier < 2 and not any(r.startswith("sem2.") for r in result.reasons)


def test_the_pause_is_not_escalated_in_the_post_crisis_window(monkeypatch: pytest.MonkeyPatch) -> None:
    state = SafetyState()
    assert screen("I am going to kill myself tonight", state).tier == 3
    _use(monkeypatch, FixedVerdictLayer(NEAR_BAR))
    result = screen(ORDINARY, state)
    assert result.post_crisis and result.tier == 2  # the window's floor, not an escalation to 3
    assert "post_crisis.floor" in result.reasons and not any(r.startswith("sem2.") for r in result.reasons)


def test_the_pause_arms_the_context_for_later_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    later = "picked up my pills from the chemist on the way back"
    tiers = []
    for first_verdict in (NOT_PAUSED, NEAR_BAR):
        _use(
            monkeypatch,
            FixedVerdictLayer({ORDINARY: first_verdict}, default=SemanticVerdict(0, "none", 0.1)),
        )
        state = SafetyState()
        first = screen(ORDINARY, state)
        tiers.append((first.tier, screen(later, state).tier))
    assert tiers[0][0] < 2 and tiers[0][1] < 3  # no pause: the pills are ordinary errands
    assert tiers[1] == (2, 3)  # after the pause, means fetched is a crisis (docs/safety.md, layer 2)


LATER_ERRAND = "picked up my pills from the chemist on the way back"


@pytest.mark.parametrize("family", ["other_in_danger", "medical_emergency"])
def test_a_pause_about_someone_elses_emergency_does_not_arm_the_users_context(
    monkeypatch: pytest.MonkeyPatch, family: str
) -> None:
    other = SemanticVerdict(1, family, 0.85, paused=True)
    _use(monkeypatch, FixedVerdictLayer({ORDINARY: other}, default=SemanticVerdict(0, "none", 0.1)))
    state = SafetyState()
    first = screen(ORDINARY, state)
    assert first.tier == 2 and first.reasons == [f"sem2.{family}"]
    assert state.last_risk_turn == 0  # as the tier-2 verdict of that family: not the user's own risk
    assert screen(LATER_ERRAND, state).tier < 3


def test_with_a_post_crisis_floor_below_2_the_pause_still_pauses_but_is_not_escalated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = SafetyConfig(post_crisis_floor=0)
    state = SafetyState()
    assert screen("I am going to kill myself tonight", state, cfg).tier == 3
    _use(monkeypatch, FixedVerdictLayer(NEAR_BAR))
    result = screen(ORDINARY, state, cfg)
    assert result.post_crisis and result.tier == 2 and "sem2.passive_ideation" in result.reasons
    assert "post_crisis.escalated" not in result.reasons


def test_a_message_the_rules_already_pause_gets_no_pause_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, FixedVerdictLayer(NEAR_BAR))
    result = screen("some days I just wish I was dead")
    assert result.tier == 2 and not any(r.startswith("sem2.") for r in result.reasons), result


def test_the_pause_asks_the_question_of_its_family() -> None:
    assert "are you safe right now" in support_response("en-GB", ["sem2.abuse"])
    assert "is this person safe right now" in support_response("en-GB", ["sem2.other_in_danger"])
    assert "thoughts of ending your life" in support_response("en-GB", ["sem2.passive_ideation"])


def test_a_head_whose_pause_bar_is_above_its_tier_2_bar_is_refused(tmp_path: Path) -> None:
    head, tier2, tier3, meta = load_head()
    bad = tmp_path / "head"  # no suffix: written there exactly, not to head.npz
    save_head(
        bad, head, digest=anchors_digest(), tier2=tier2, tier3=tier3, meta={**meta, "pause": tier2 + 0.01}
    )
    assert bad.is_file() and not (tmp_path / "head.npz").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["head"]  # no temporary file left beside it
    with pytest.raises(HeadError, match="pause bar") as err:
        SemanticLayer.load(bad)
    assert err.value.code == "head_stale" and "--recalibrate" in str(err.value)


def test_a_head_write_killed_midway_leaves_the_old_head_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import launcher.safety._semantic as semantic

    target = tmp_path / "semantic_head.npz"
    shutil.copy(HEAD_PATH, target)
    before = target.read_bytes()
    head, tier2, tier3, meta = load_head(target)

    def killed(f: object, *args: object) -> None:
        f.write(b"half a zip")  # type: ignore[attr-defined]
        raise KeyboardInterrupt

    monkeypatch.setattr(semantic, "_savez", killed)
    with pytest.raises(KeyboardInterrupt):
        save_head(target, head, digest=anchors_digest(), tier2=tier2, tier3=tier3, meta=meta)
    assert target.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [target.name]


class _Calibration:
    """The head's calibration, for :func:`set_thresholds` (its ceiling)."""

    def calibrate(self, s: np.ndarray) -> np.ndarray:
        return np.minimum(np.asarray(s, dtype=np.float64), 0.999)


def test_the_pause_bar_passes_at_most_its_share_of_each_corpus_and_sits_below_tier_2() -> None:
    rng = np.random.default_rng(7)
    per = {
        name: [
            (f"{name}:{i}", float(r), float(r) * 0.9, i % 2 == 0) for i, r in enumerate(rng.random(n) ** 4)
        ]
        for name, n in (("a", 2000), ("b", 3001), ("c", 1200))
    }
    bars = set_thresholds(_Calibration(), per)  # type: ignore[arg-type]
    assert bars.pause < bars.tier2
    assert bars.pause_gap[0] < bars.pause < bars.pause_gap[1]
    for rows in per.values():
        held = [r[1] for r in rows if not r[3]]
        assert sum(s >= bars.pause for s in held) <= FA_PAUSE * len(held)
        assert sum(s >= bars.tier2 for s in held) <= FA_TIER2 * len(held)
    # the bar is as low as the share allows: at the highest score below it, some corpus passes too many
    assert any(
        sum(r[1] >= bars.pause_gap[0] for r in rows if not r[3]) > FA_PAUSE * sum(not r[3] for r in rows)
        for rows in per.values()
    )


def test_the_shipped_head_has_a_pause_bar_between_tier_1_and_tier_2() -> None:
    from launcher.safety._semantic import semantic_layer

    layer = semantic_layer()
    assert layer.pause is not None and layer.tier2 / 2 < layer.pause < layer.tier2
