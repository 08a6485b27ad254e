"""The risk assessment an agent adds to its output (the Coach's and Stability's): its own safety tier
for the user's latest message, the risk family and the user's exact words that show it.

The launcher accepts it only as a *raise* of the deterministic screen's tier, and only when the family
fits the tier and the quote occurs in the message (``launcher.safety.judge_raise``); this module only
defines the shape. The defaults (tier 0, ``"none"``, ``""``) keep older entries and agents that omit
the field valid.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from ._schema_common import StrictModel

__all__ = ["QUOTE_MAX_CHARS", "RISK_FAMILIES", "RiskAssessment", "RiskFamily"]

RiskFamily = Literal[
    "none",
    "distress",
    "passive_ideation",
    "active_ideation",
    "self_harm",
    "abuse",
    "method",
    "intent",
    "plan",
    "means",
    "preparatory",
    "timeline",
    "in_progress",
    "other_in_danger",
    "lethal_means_request",
    "medical_emergency",
]
#: The closed list of risk families, in the order of :data:`RiskFamily`.
RISK_FAMILIES: tuple[str, ...] = get_args(RiskFamily)

QUOTE_MAX_CHARS = 300


class RiskAssessment(StrictModel):
    """Your safety judgement of the user's latest message: fill it first, honestly."""

    # Model-facing docstring and descriptions (they are the tool's JSON schema). A quote longer than 300
    # characters is cut at the last space before that, not rejected (the rest of the output must not be
    # lost to an over-long quote); at tier 0 the quote is stored empty.

    tier: int = Field(
        default=0,
        ge=0,
        le=3,
        description="0 no risk, 1 distress, 2 ideation/self-harm/abuse, 3 intent/plan/means/emergency",
    )
    family: RiskFamily = Field(default="none", description="the kind of risk; none at tier 0")
    quote: str = Field(
        default="",
        max_length=QUOTE_MAX_CHARS,
        description="the user's exact words that show it, copied from the message; empty at tier 0",
    )

    @field_validator("quote", mode="before")
    @classmethod
    def _cut(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            if len(value) > QUOTE_MAX_CHARS:
                cut = value[:QUOTE_MAX_CHARS]
                space = cut.rfind(" ")
                value = (cut[:space] if space > 0 else cut).rstrip()
        return value

    @model_validator(mode="after")
    def _no_quote_without_risk(self) -> RiskAssessment:
        if self.tier == 0:
            self.quote = ""
        return self
