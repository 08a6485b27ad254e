"""Stability's output and the gate that decides ``blocked``/``caution`` in code.

FMEA-style ratings 1-10 (IEC 60812; AIAG-VDA 2019): severity S, occurrence O, detection difficulty D
(10 = cannot be detected before harm), RPN = S*O*D; reversibility R (10 = irreversible) is a gate, not
a factor. The gate (docs/coaching.md, proposal; numbers in :class:`Thresholds`):

* blocked if S >= 9, or S >= 7 and R >= 8, or S >= 7 and D >= 8, or RPN >= 200, or the category is
  a blocked category;
* caution (allowed only as a reversible first step, with "consult a professional") if not blocked and
  (S >= 5 and R >= 6, or RPN >= 100).

A model cannot unblock a move: ``blocked``, ``caution``, ``rpn`` and the reasons are recomputed on every
validation. A model-supplied ``blocked: true`` is kept (reason ``model_flagged``) because it only makes
the outcome safer; ``blocked: false`` is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from ._schema_common import READ_ONLY, Id, Phrase, ShortText, StrictModel, Text, coerced_field, thresholds_of
from ._schema_risk import RiskAssessment
from .config import Thresholds

__all__ = [
    "GateResult",
    "MoveCategory",
    "StabilityMove",
    "StabilityOutput",
    "stability_gate",
]

MoveCategory = Literal[
    "none",
    "medication_or_diagnosis",
    "dieting_or_fasting_with_eating_disorder_signals",
    "self_harm_facilitation",
    "legal_or_financial_one_way_door_without_professional",
    "escalating_risk_from_abuser",
    "illegal_or_deceiving_others",
    "coaching_presented_as_therapy",
]


@dataclass(frozen=True, slots=True)
class GateResult:
    """Outcome of :func:`stability_gate`: reason codes explain every block and caution."""

    rpn: int
    blocked: bool
    caution: bool
    block_reasons: tuple[str, ...]
    caution_reasons: tuple[str, ...]


def stability_gate(
    severity: int,
    occurrence: int,
    detection_difficulty: int,
    reversibility: int,
    category: str = "none",
    thresholds: Thresholds | None = None,
    *,
    model_flagged: bool = False,
) -> GateResult:
    """Apply the Stability gate (see module docstring). Ratings are ints 1-10. Pure."""
    t = thresholds or Thresholds()
    s, o, d, r = severity, occurrence, detection_difficulty, reversibility
    rpn = s * o * d
    reasons: list[str] = []
    if s >= t.block_severity:
        reasons.append(f"severity>={t.block_severity}")
    sr, rr = t.block_severity_with_reversibility
    if s >= sr and r >= rr:
        reasons.append(f"severity>={sr}&reversibility>={rr}")
    sd, dd = t.block_severity_with_detection
    if s >= sd and d >= dd:
        reasons.append(f"severity>={sd}&detection_difficulty>={dd}")
    if rpn >= t.block_rpn:
        reasons.append(f"rpn>={t.block_rpn}")
    if category in t.blocked_categories:
        reasons.append(f"category:{category}")
    if model_flagged and not reasons:
        reasons.append("model_flagged")
    blocked = bool(reasons)
    cautions: list[str] = []
    if not blocked:
        cs, cr = t.caution_severity_with_reversibility
        if s >= cs and r >= cr:
            cautions.append(f"severity>={cs}&reversibility>={cr}")
        if rpn >= t.caution_rpn:
            cautions.append(f"rpn>={t.caution_rpn}")
    return GateResult(rpn, blocked, bool(cautions), tuple(reasons), tuple(cautions))


class StabilityMove(StrictModel):
    """A candidate coaching move with its risk ratings. ``keywords`` are the phrases that identify
    the move in text (used to check the Coach reply and the synthesis); ``rpn``, ``blocked``,
    ``caution``, ``block_reasons`` and ``caution_reasons`` are computed by the gate."""

    id: Id
    description: ShortText = Field(min_length=3)
    category: MoveCategory = "none"
    keywords: list[Phrase] = Field(default_factory=list, max_length=12)
    severity: int = Field(ge=1, le=10)
    occurrence: int = Field(ge=1, le=10)
    detection_difficulty: int = Field(ge=1, le=10, description="10 = cannot be detected before harm")
    reversibility: int = Field(ge=1, le=10, description="10 = irreversible")
    rationale: ShortText = ""
    rpn: int | None = Field(default=None, description="computed: S*O*D; omit", json_schema_extra=READ_ONLY)
    blocked: bool | None = Field(
        default=None, description="computed by the gate; you may send true to block, false is ignored"
    )
    caution: bool | None = Field(
        default=None, description="computed by the gate; omit", json_schema_extra=READ_ONLY
    )
    block_reasons: list[str] = Field(
        default_factory=list, max_length=10, description="computed; omit", json_schema_extra=READ_ONLY
    )
    caution_reasons: list[str] = Field(
        default_factory=list, max_length=10, description="computed; omit", json_schema_extra=READ_ONLY
    )

    @model_validator(mode="after")
    def _gate(self, info: ValidationInfo) -> StabilityMove:
        model_flagged = self.blocked is True
        g = stability_gate(
            self.severity,
            self.occurrence,
            self.detection_difficulty,
            self.reversibility,
            self.category,
            thresholds_of(info),
            model_flagged=model_flagged,
        )
        self.rpn, self.blocked, self.caution = g.rpn, g.blocked, g.caution
        self.block_reasons, self.caution_reasons = list(g.block_reasons), list(g.caution_reasons)
        return self


class StabilityOutput(StrictModel):
    """Stability's blackboard entry: its risk assessment of the user's message (first; default tier 0)
    and the risk frame for this turn's candidate moves (ids unique).

    A repeated move id is renamed deterministically (``id``, ``id-2``, ``id-3``, ...; reason code
    ``move_renamed:<old>:<new>`` in ``coerced``) so no move overwrites another; every move is gated."""

    risk: RiskAssessment = Field(default_factory=RiskAssessment)
    moves: list[StabilityMove] = Field(default_factory=list, max_length=20)
    summary: Text = ""
    coerced: list[str] = coerced_field()

    @model_validator(mode="after")
    def _unique(self) -> StabilityOutput:
        taken = {m.id for m in self.moves}
        seen: set[str] = set()
        coerced: list[str] = []
        for m in self.moves:
            if m.id not in seen:
                seen.add(m.id)
                continue
            stem = m.id[:60]
            n = 2
            while f"{stem}-{n}" in taken or f"{stem}-{n}" in seen:
                n += 1
            new = f"{stem}-{n}"
            coerced.append(f"move_renamed:{m.id}:{new}")
            m.id = new
            seen.add(new)
            taken.add(new)
        self.coerced = list(dict.fromkeys([*self.coerced, *coerced]))[:40]
        return self

    @property
    def blocked_moves(self) -> list[StabilityMove]:
        return [m for m in self.moves if m.blocked]
