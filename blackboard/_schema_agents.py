"""Persona, Plasticity, Coach and Pineal (synthesis) output schemas (docs/coaching.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ._keys import parse_key
from ._schema_common import (
    AgentName,
    FollowThroughStats,
    OceanTraits,
    ShortText,
    StrictModel,
    Text,
    TraitName,
    coerced_field,
    thresholds_of,
)
from ._schema_risk import RiskAssessment

__all__ = [
    "Citation",
    "CoachOutput",
    "Goal",
    "PersonaOutput",
    "PlasticityOutput",
    "ReadinessStage",
    "SynthesisOutput",
    "TailoringChoice",
]

ReadinessStage = Literal["precontemplation", "contemplation", "preparation", "action", "maintenance"]


class Goal(StrictModel):
    """A recurring goal and how often it was stated."""

    description: ShortText = Field(min_length=1)
    mentions: int = Field(default=1, ge=1, le=100_000)


class PersonaOutput(StrictModel):
    """Persona's entry: OCEAN traits (POMP + band + confidence + evidence), goals, follow-through
    (percent consistent with counts), growth areas, optional readiness stage (soft feature)."""

    traits: OceanTraits
    goals: list[Goal] = Field(default_factory=list, max_length=20)
    follow_through: FollowThroughStats
    growth_areas: list[ShortText] = Field(default_factory=list, max_length=10)
    readiness_stage: ReadinessStage | None = None
    summary: Text = ""
    coerced: list[str] = coerced_field()

    @model_validator(mode="after")
    def _coerced(self) -> PersonaOutput:
        new = [f"follow_through.{r}" for r in self.follow_through.coerced_reasons]
        self.coerced = list(dict.fromkeys([*self.coerced, *new]))[:40]
        return self


class TailoringChoice(StrictModel):
    """One trait-based adaptation, with the Persona confidence/evidence it relies on.

    docs/coaching.md (Plasticity): tailor only when confidence >= 0.5 with >= 5 evidence items; the schema
    drops choices below that bar (reason code ``tailoring_dropped:<i>:<trait>`` in the output's
    ``coerced``) and arbitration re-checks them against this turn's Persona entry.
    """

    trait: TraitName
    level: Literal["high", "low"]
    adaptation: ShortText = Field(min_length=1)
    confidence: float = Field(ge=0, le=1)
    evidence_count: int = Field(ge=0, le=100_000)


class PlasticityOutput(StrictModel):
    """Plasticity's entry: coaching strategy, tone, framing, do/don't lists and trait tailoring."""

    strategy: Text = Field(min_length=1)
    tone: ShortText = ""
    framing: ShortText = ""
    do: list[ShortText] = Field(default_factory=list, max_length=10)
    dont: list[ShortText] = Field(default_factory=list, max_length=10)
    tailoring: list[TailoringChoice] = Field(default_factory=list, max_length=5)
    readiness_stage: ReadinessStage | None = None
    coerced: list[str] = coerced_field()

    @model_validator(mode="after")
    def _tailoring_bar(self, info: ValidationInfo) -> PlasticityOutput:
        t = thresholds_of(info)
        kept: list[TailoringChoice] = []
        coerced: list[str] = []
        for i, c in enumerate(self.tailoring):
            if c.confidence < t.tailoring_min_confidence or c.evidence_count < t.tailoring_min_evidence:
                coerced.append(f"tailoring_dropped:{i}:{c.trait}:below_bar")
            else:
                kept.append(c)
        self.tailoring = kept
        self.coerced = list(dict.fromkeys([*self.coerced, *coerced]))[:40]
        return self


def _risk_first(schema: dict[str, Any]) -> None:
    # The advertised schema REQUIRES risk (validation still defaults it to tier 0): grammar-constrained
    # decoders write required properties first, in schema order (llama.cpp's json-schema-to-grammar puts
    # optional ones after the required ones), so risk is complete before any word of the reply, which
    # is streamed to the user as it is written (launcher.pipeline._reply_stream).
    schema["required"] = ["risk", "reply"]


class CoachOutput(StrictModel):
    """The Coach's immediate reply (MI style), 1-4000 characters, after its risk assessment of the user's
    message (first, so a model writes it before the reply; default: tier 0)."""

    model_config = ConfigDict(json_schema_extra=_risk_first)

    risk: RiskAssessment = Field(default_factory=RiskAssessment)
    reply: str = Field(min_length=1, max_length=4000)


class Citation(StrictModel):
    """A blackboard entry the synthesis relies on: ``key`` or ``agent`` (at least one) and the
    ``version`` used (>= 1)."""

    key: str | None = Field(default=None, max_length=400)
    agent: AgentName | None = None
    version: int = Field(ge=1, le=1_000_000)

    @field_validator("key")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        if v is not None:
            parse_key(v)
        return v

    @model_validator(mode="after")
    def _one(self) -> Citation:
        if self.key is None and self.agent is None:
            raise ValueError("a citation needs a key or an agent")
        return self


class SynthesisOutput(StrictModel):
    """Pineal's synthesis: the text shown to the user plus the entries (and versions) it used."""

    text: str = Field(min_length=1, max_length=8000)
    citations: list[Citation] = Field(default_factory=list, max_length=30)
