"""Shadow's output: stated goals vs revealed priorities, pattern class, follow-through prediction.

Rules (docs/coaching.md, Shadow): a class other than ``insufficient_data`` needs >= 3 due commitments over
>= 2 sessions; every stated-vs-revealed claim cites >= 2 distinct evidence items; the follow-through
probability starts from :func:`follow_through_baseline` and a model may move it by at most +-0.15,
with a reason.

Cross-field rules are enforced by moving to the safe value, never by upgrading, and each change is
recorded in ``coerced`` (reason codes): a class whose evidence bar is not met becomes
``insufficient_data`` (``class_downgraded:<class>:<why>``); a claim with too few distinct evidence
items is dropped (``pattern_dropped:<i>:evidence<n>``); a probability moved without a reason is reset
to the baseline (``probability_reset:no_adjustment_reason``) and any probability is clamped to
baseline +-0.15. Commitment counts that contradict each other (completed > due) are unusable evidence:
due and completed are reset to 0 (``commitments_reset:completed<c>_gt_due<d>``), which in turn
downgrades any class but ``insufficient_data``.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, ValidationInfo, model_validator

from ._schema_common import READ_ONLY, EvidenceRef, ShortText, StrictModel, Text, coerced_field, thresholds_of
from .config import Thresholds

__all__ = [
    "PATTERN_CLASSES",
    "Commitments",
    "FollowThroughFeatures",
    "FollowThroughPrediction",
    "PatternClass",
    "ShadowOutput",
    "ShadowPattern",
    "follow_through_baseline",
]

PatternClass = Literal[
    "consistent_executor",
    "inclined_abstainer",
    "overcommitter",
    "externally_driven",
    "competing_commitment",
    "insufficient_data",
]
PATTERN_CLASSES: tuple[str, ...] = get_args(PatternClass)


class Commitments(StrictModel):
    """Commitment counts Shadow observed: ``due`` (deadline passed), ``completed`` (of those),
    ``sessions`` (distinct sessions the counts span). ``completed`` > ``due`` is not rejected here:
    :class:`ShadowOutput` resets such counts to 0 (reason code ``commitments_reset:...``)."""

    due: int = Field(ge=0, le=100_000)
    completed: int = Field(ge=0, le=100_000)
    sessions: int = Field(ge=0, le=100_000)


class FollowThroughFeatures(StrictModel):
    """Inputs of the baseline. ``change_talk_share`` is %CT = change / (change + sustain) in 0-1
    (null = unknown, treated as 0.5)."""

    has_if_then_plan: bool = False
    change_talk_share: float | None = Field(default=None, ge=0, le=1)
    sustain_talk: bool = False
    goal_growth: bool = False


def follow_through_baseline(
    due: int, completed: int, features: FollowThroughFeatures, thresholds: Thresholds | None = None
) -> float:
    """Baseline follow-through probability (0-1), docs/coaching.md (proposal)::

        base = (completed + prior*weight) / (due + weight)          # smoothed base rate
        p = clip(base + 0.10*if_then + 0.05*(%CT - 0.5) - 0.10*sustain - 0.05*growth, 0.05, 0.95)

    prior 0.5 (Webb & Sheeran 2006), weight 2 (proposal). Pure; rounded to 4 decimals.
    Raises ValueError if completed > due or counts are negative.
    """
    t = thresholds or Thresholds()
    if due < 0 or completed < 0 or completed > due:
        raise ValueError(f"need 0 <= completed <= due, got completed={completed} due={due}")
    weight = t.ft_prior_weight
    base = (completed + t.ft_prior * weight) / (due + weight) if due + weight > 0 else t.ft_prior
    ct = 0.5 if features.change_talk_share is None else features.change_talk_share
    p = (
        base
        + t.ft_if_then * features.has_if_then_plan
        + t.ft_change_talk * (ct - 0.5)
        - t.ft_sustain_talk * features.sustain_talk
        - t.ft_goal_growth * features.goal_growth
    )
    return round(min(t.ft_max, max(t.ft_min, p)), 4)


class FollowThroughPrediction(StrictModel):
    """Follow-through prediction. ``baseline`` is computed from the commitments and ``features``;
    ``probability`` (0-1) defaults to the baseline; if it differs by more than 0.005 an
    ``adjustment_reason`` is required, and it is clamped to baseline +-0.15 (``clamped`` says so)."""

    features: FollowThroughFeatures = Field(default_factory=FollowThroughFeatures)
    probability: float | None = Field(default=None, ge=0, le=1)
    adjustment_reason: ShortText | None = None
    baseline: float | None = Field(default=None, description="computed; omit", json_schema_extra=READ_ONLY)
    clamped: bool = Field(default=False, description="computed; omit", json_schema_extra=READ_ONLY)


class ShadowPattern(StrictModel):
    """One stated-vs-revealed claim, offered as a hypothesis (Kegan & Lahey), never a verdict."""

    stated: ShortText = Field(min_length=1)
    revealed: ShortText = Field(min_length=1)
    hypothesis: ShortText = ""
    evidence: list[EvidenceRef] = Field(max_length=20)


class ShadowOutput(StrictModel):
    """Shadow's blackboard entry (see module docstring for the rules enforced)."""

    pattern_class: PatternClass
    commitments: Commitments
    patterns: list[ShadowPattern] = Field(default_factory=list, max_length=10)
    follow_through: FollowThroughPrediction = Field(default_factory=FollowThroughPrediction)
    summary: Text = ""
    coerced: list[str] = coerced_field()

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> ShadowOutput:
        t = thresholds_of(info)
        c = self.commitments
        coerced: list[str] = []
        if c.completed > c.due:
            coerced.append(f"commitments_reset:completed{c.completed}_gt_due{c.due}")
            c.due = c.completed = 0
        if self.pattern_class != "insufficient_data":
            why = ""
            if c.due < t.shadow_min_due or c.sessions < t.shadow_min_sessions:
                why = f"due{c.due}_sessions{c.sessions}"
            else:
                rate = c.completed / c.due
                if self.pattern_class == "consistent_executor" and rate < t.consistent_executor_min:
                    why = f"follow_through{c.completed}of{c.due}"
                if self.pattern_class == "inclined_abstainer" and rate > t.inclined_abstainer_max:
                    why = f"follow_through{c.completed}of{c.due}"
            if why:
                coerced.append(f"class_downgraded:{self.pattern_class}:{why}")
                self.pattern_class = "insufficient_data"
        kept: list[ShadowPattern] = []
        for i, pat in enumerate(self.patterns):
            distinct = {(e.session, e.turn) for e in pat.evidence}
            if len(distinct) < t.shadow_min_evidence:
                coerced.append(f"pattern_dropped:{i}:evidence{len(distinct)}")
            else:
                kept.append(pat)
        self.patterns = kept
        ft = self.follow_through
        baseline = follow_through_baseline(c.due, c.completed, ft.features, t)
        ft.baseline = baseline
        p = baseline if ft.probability is None else ft.probability
        if abs(p - baseline) > t.ft_adjustment_tolerance and not (ft.adjustment_reason or "").strip():
            coerced.append("probability_reset:no_adjustment_reason")
            p = baseline
        lo, hi = (
            max(0.0, baseline - t.ft_max_model_adjustment),
            min(1.0, baseline + t.ft_max_model_adjustment),
        )
        clamped = round(min(hi, max(lo, p)), 4)
        ft.clamped = ft.clamped or abs(clamped - p) > 1e-9
        ft.probability = clamped
        self.coerced = list(dict.fromkeys([*self.coerced, *coerced]))[:40]
        return self
