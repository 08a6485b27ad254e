"""Shared pieces of the agent output schemas: bounded text types, names, evidence, OCEAN traits and
follow-through statistics (docs/coaching.md, Persona).

Validators read thresholds from the pydantic validation context (``{"thresholds": Thresholds}``);
without one they use ``Thresholds()`` (docs/coaching.md defaults). Fields documented as "computed" are
recomputed by the validator from the other fields; a supplied value is ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationInfo,
    model_validator,
)

from .config import Thresholds

__all__ = [
    "READ_ONLY",
    "TRAIT_NAMES",
    "AgentName",
    "Band",
    "EvidenceRef",
    "FollowThroughStats",
    "Id",
    "OceanTraits",
    "Phrase",
    "ShortText",
    "StrictModel",
    "Text",
    "TraitName",
    "TraitScore",
    "band_for",
    "thresholds_of",
]

AgentName = Literal["shadow", "persona", "plasticity", "stability", "coach", "pineal"]
TRAIT_NAMES: tuple[str, ...] = (
    "openness",
    "conscientiousness",
    "extraversion",
    "agreeableness",
    "neuroticism",
)
TraitName = Literal["openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"]
Band = Literal["low", "mid", "high"]
#: JSON-schema annotation of fields the validator computes (models should leave them out).
READ_ONLY: dict[str, Any] = {"readOnly": True}


def coerced_field() -> Any:
    """The read-only ``coerced: list[str]`` field of an agent output: reason codes of the cross-field rules
    (docs/coaching.md) that validation enforced by moving a value to its safe side instead of rejecting it."""
    return Field(
        default_factory=list,
        max_length=40,
        description="computed: reason codes of cross-field rules enforced by moving to the safe value; omit",
        json_schema_extra=READ_ONLY,
    )


#: A key part: 1-64 of A-Z a-z 0-9 _ . - (same rule as blackboard keys).
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.\-]{1,64}$")]
#: Keyword or short phrase, 1-80 characters.
Phrase = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]
#: One line of text, at most 300 characters.
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=300)]
#: A paragraph, at most 1200 characters.
Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=1200)]


def thresholds_of(info: ValidationInfo | None) -> Thresholds:
    """Thresholds from the validation context, or docs/coaching.md defaults."""
    ctx: Any = info.context if info is not None else None
    if isinstance(ctx, dict) and isinstance(ctx.get("thresholds"), Thresholds):
        return ctx["thresholds"]  # type: ignore[no-any-return]
    return Thresholds()


class StrictModel(BaseModel):
    """Base of every schema: unknown fields are refused, strings are bounded."""

    model_config = ConfigDict(extra="forbid", str_max_length=8000, allow_inf_nan=False)


class EvidenceRef(StrictModel):
    """One piece of evidence: where it was observed, plus a short paraphrase (no verbatim quotes
    needed). Two refs with the same (session, turn) count as one item."""

    session: Id
    turn: Id
    note: ShortText = ""


def band_for(score: float, thresholds: Thresholds | None = None) -> Band:
    """OCEAN band of a POMP score: low <= 35, high >= 65, else mid (docs/coaching.md, Persona)."""
    t = thresholds or Thresholds()
    if score <= t.band_low:
        return "low"
    if score >= t.band_high:
        return "high"
    return "mid"


class TraitScore(StrictModel):
    """One Big Five trait. ``score`` is POMP 0-100 (percent of maximum possible, not a percentile);
    ``band`` is computed from it; ``confidence`` 0-1; ``evidence_count`` = observations used."""

    score: float = Field(ge=0, le=100)
    band: Band | None = Field(
        default=None, description="computed from score; omit", json_schema_extra=READ_ONLY
    )
    confidence: float = Field(ge=0, le=1)
    evidence_count: int = Field(ge=0, le=100_000)

    @model_validator(mode="after")
    def _band(self, info: ValidationInfo) -> TraitScore:
        self.band = band_for(self.score, thresholds_of(info))
        return self


class OceanTraits(StrictModel):
    """The five traits (IPIP-NEO / BFI-2 conventions, reported as POMP; docs/coaching.md, Persona)."""

    openness: TraitScore
    conscientiousness: TraitScore
    extraversion: TraitScore
    agreeableness: TraitScore
    neuroticism: TraitScore

    def items(self) -> list[tuple[str, TraitScore]]:
        return [(n, getattr(self, n)) for n in TRAIT_NAMES]


class FollowThroughStats(StrictModel):
    """Follow-through = completed / due commitments (docs/coaching.md, Persona).

    ``percent`` (0-100) and ``status`` are computed; ``percent`` is null with status
    ``"not_enough_data"`` when due < ``follow_through_min_due`` (3). A supplied percent that disagrees
    with the counts by more than 0.5 points (or is given when there is not enough data) is replaced by
    the computed value. Counts that contradict each other (completed > due) are unusable evidence: both
    are reset to 0 (so status ``"not_enough_data"``), never raised to fit. The reason codes are kept in
    ``coerced_reasons`` (not stored; Persona's output copies them into its ``coerced`` field).
    """

    due: int = Field(ge=0, le=100_000)
    completed: int = Field(ge=0, le=100_000)
    percent: float | None = Field(default=None, ge=0, le=100)
    status: Literal["ok", "not_enough_data"] | None = Field(
        default=None, description="computed; omit", json_schema_extra=READ_ONLY
    )

    _coerced: list[str] = PrivateAttr(default_factory=list)

    @property
    def coerced_reasons(self) -> list[str]:
        """Reason codes of the last validation's coercions (e.g. ``percent_recomputed:60->75.0``)."""
        return list(self._coerced)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> FollowThroughStats:
        t = thresholds_of(info)
        if self.completed > self.due:
            self._coerced.append(f"counts_reset:completed{self.completed}_gt_due{self.due}")
            self.due = self.completed = 0
        if self.due < t.follow_through_min_due:
            if self.percent is not None:
                self._coerced.append(f"percent_nulled:{self.percent}:due{self.due}")
                self.percent = None
            self.status = "not_enough_data"
            return self
        computed = round(100.0 * self.completed / self.due, 1)
        if self.percent is not None and abs(self.percent - computed) > 0.5:
            self._coerced.append(f"percent_recomputed:{self.percent}->{computed}")
        self.percent = computed
        self.status = "ok"
        return self

    @property
    def rate(self) -> float | None:
        """completed / due as 0-1, or None when there is not enough data."""
        return None if self.percent is None else self.completed / self.due
