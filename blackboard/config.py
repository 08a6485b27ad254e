"""Coaching thresholds (the ``[thresholds]`` config section), with docs/coaching.md's defaults.

Every number here is either from the literature or marked (proposal) in ``docs/coaching.md``;
the field descriptions cite which. Compose into the top-level config as ``thresholds: Thresholds``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["BLOCKED_CATEGORIES", "Thresholds"]

#: Move categories that are always blocked (docs/coaching.md, Stability, proposal).
BLOCKED_CATEGORIES: tuple[str, ...] = (
    "medication_or_diagnosis",
    "dieting_or_fasting_with_eating_disorder_signals",
    "self_harm_facilitation",
    "legal_or_financial_one_way_door_without_professional",
    "escalating_risk_from_abuser",
    "illegal_or_deceiving_others",
    "coaching_presented_as_therapy",
)


class Thresholds(BaseModel):
    """Thresholds the code enforces. Defaults = docs/coaching.md; all fields are overridable from config.

    Sources, per field:
      * ``band_low``/``band_high``: OCEAN bands on POMP 0-100, low <= 35, high >= 65 (docs/coaching.md,
        Persona, IPIP-NEO / BFI-2 reporting convention as adopted there).
      * ``follow_through_min_due``: follow-through % is "not enough data" when due < 3 (docs/coaching.md).
      * ``shadow_min_due``/``shadow_min_sessions``: a Shadow class other than ``insufficient_data``
        needs >= 3 due commitments over >= 2 sessions (docs/coaching.md, proposal).
      * ``shadow_min_evidence``: every stated-vs-revealed claim cites >= 2 evidence items (docs/coaching.md).
      * ``consistent_executor_min``/``inclined_abstainer_max``: class definitions, follow-through >= 0.7
        and <= 0.4 (docs/coaching.md, proposal).
      * ``ft_prior``/``ft_prior_weight``: the "smoothed base rate" = (completed + prior*weight) /
        (due + weight); prior 0.5 because intentions turn into action about half the time (Webb &
        Sheeran 2006; Sheeran & Webb 2016); weight 2 is our proposal.
      * ``ft_if_then``, ``ft_change_talk``, ``ft_sustain_talk``, ``ft_goal_growth``, ``ft_min``,
        ``ft_max``: p = clip(base + 0.10*if_then + 0.05*(%CT-0.5) - 0.10*sustain - 0.05*growth,
        0.05, 0.95) (docs/coaching.md, proposal; if-then plans: Gollwitzer & Sheeran 2006; %CT and sustain
        talk: Magill et al. 2018).
      * ``ft_max_model_adjustment``: a model may move the baseline by at most +-0.15, with a logged
        reason (docs/coaching.md, proposal).
      * ``tailoring_min_confidence``/``tailoring_min_evidence``: tailor only when Persona confidence
        >= 0.5 with >= 5 evidence items (docs/coaching.md; small effects per Hirsh et al. 2012, Matz et al.
        2017).
      * ``trait_max_shift_per_session``: a trait moves at most +-10 POMP per session (docs/coaching.md).
      * ``block_*``/``caution_*``: the Stability gate (docs/coaching.md, proposal; FMEA ratings per IEC 60812
        and AIAG-VDA 2019): blocked if S>=9, or S>=7 and R>=8, or S>=7 and D>=8, or RPN>=200, or the
        category is blocked; caution if S>=5 and R>=6, or RPN>=100.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    band_low: float = Field(
        default=35.0, ge=0, le=100, description="POMP <= this is 'low' (docs/coaching.md)"
    )
    band_high: float = Field(
        default=65.0, ge=0, le=100, description="POMP >= this is 'high' (docs/coaching.md)"
    )
    follow_through_min_due: int = Field(default=3, ge=1, description="due < this => 'not enough data'")
    shadow_min_due: int = Field(default=3, ge=1, description="due commitments for a non-insufficient class")
    shadow_min_sessions: int = Field(default=2, ge=1, description="sessions for a non-insufficient class")
    shadow_min_evidence: int = Field(
        default=2, ge=1, description="evidence items per stated-vs-revealed claim"
    )
    consistent_executor_min: float = Field(default=0.7, ge=0, le=1)
    inclined_abstainer_max: float = Field(default=0.4, ge=0, le=1)
    ft_prior: float = Field(default=0.5, ge=0, le=1, description="prior of the smoothed base rate")
    ft_prior_weight: float = Field(default=2.0, ge=0, description="pseudo-count weight of the prior")
    ft_if_then: float = 0.10
    ft_change_talk: float = 0.05
    ft_sustain_talk: float = 0.10
    ft_goal_growth: float = 0.05
    ft_min: float = Field(default=0.05, ge=0, le=1)
    ft_max: float = Field(default=0.95, ge=0, le=1)
    ft_max_model_adjustment: float = Field(default=0.15, ge=0, le=1)
    ft_adjustment_tolerance: float = Field(
        default=0.005, ge=0, le=0.1, description="|p - baseline| above this counts as a model adjustment"
    )
    tailoring_min_confidence: float = Field(default=0.5, ge=0, le=1)
    tailoring_min_evidence: int = Field(default=5, ge=0)
    trait_max_shift_per_session: float = Field(default=10.0, ge=0, le=100)
    block_severity: int = Field(default=9, ge=1, le=10)
    block_severity_with_reversibility: tuple[int, int] = (7, 8)
    block_severity_with_detection: tuple[int, int] = (7, 8)
    block_rpn: int = Field(default=200, ge=1, le=1000)
    blocked_categories: tuple[str, ...] = BLOCKED_CATEGORIES
    caution_severity_with_reversibility: tuple[int, int] = (5, 6)
    caution_rpn: int = Field(default=100, ge=1, le=1000)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.band_low >= self.band_high:
            raise ValueError("band_low must be below band_high")
        if self.ft_min > self.ft_max:
            raise ValueError("ft_min must not exceed ft_max")
        return self
