"""Types of the arbitrated brief Pineal receives, and of synthesis problems."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "PRECEDENCE",
    "BlockedMove",
    "Brief",
    "Conflict",
    "MoveView",
    "RejectedEntry",
    "SourceRef",
    "SynthesisProblem",
]

#: Fixed precedence (docs/coaching.md, Pineal).
PRECEDENCE: tuple[str, ...] = (
    "safety",
    "stability_blocks",
    "scope_ethics",
    "mi_quality",
    "personality_tailoring",
)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceRef(_Frozen):
    """A blackboard entry the brief was built from (cite these, with this version)."""

    agent: str
    key: str
    version: int


class MoveView(_Frozen):
    """An allowed move. ``caution`` moves may be offered only as a reversible first step, with a
    suggestion to consult a professional (``notes`` says so)."""

    id: str
    description: str
    caution: bool = False
    caution_reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class BlockedMove(_Frozen):
    """A move that must not be suggested anywhere, with the reason codes that blocked it."""

    id: str
    description: str
    keywords: list[str] = Field(default_factory=list)
    reasons: list[str]


class Conflict(_Frozen):
    """A disagreement between agents, resolved by precedence. ``winner``/``loser`` are agent names or
    ``"safety"``; ``losing_claim`` is the overridden text (truncated to 300 chars); ``reason_code`` is
    stable (``blocked_by_stability``, ``caution_reversible_first_step_only``,
    ``stretch_framing_under_caution``, ``tailoring_below_confidence_bar``,
    ``tailoring_contradicts_persona_band``, ``coach_reply_mentions_blocked_move``, ``safety_tier_2``,
    ``safety_tier_3``, ``safety_overrides_tailoring``)."""

    winner: str
    loser: str
    losing_claim: str
    reason_code: str
    move_id: str | None = None


class RejectedEntry(_Frozen):
    """An entry present on the blackboard that failed re-validation (treated as missing)."""

    agent: str
    problems: list[str]


class Brief(_Frozen):
    """What Pineal gets for one turn. Deterministic: same entries -> byte-identical :meth:`to_json`.

    Fields: ``mode`` ("coach" | "pause" (crisis tier 2) | "crisis" (tier 3)), ``crisis_tier`` 0-3,
    ``precedence``, ``sources`` (cite these), ``present_agents``/``missing_agents``,
    ``allowed_moves``, ``blocked_moves``, ``conflicts``, ``tailoring_allowed`` with the surviving
    ``tailoring`` choices, ``outputs`` (agent -> validated output), ``rejected_entries``.
    """

    mode: Literal["coach", "pause", "crisis"]
    crisis_tier: int = Field(ge=0, le=3)
    precedence: list[str] = Field(default_factory=lambda: list(PRECEDENCE))
    sources: list[SourceRef] = Field(default_factory=list)
    present_agents: list[str] = Field(default_factory=list)
    missing_agents: list[str] = Field(default_factory=list)
    allowed_moves: list[MoveView] = Field(default_factory=list)
    blocked_moves: list[BlockedMove] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    tailoring_allowed: bool = False
    tailoring: list[dict[str, Any]] = Field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    rejected_entries: list[RejectedEntry] = Field(default_factory=list)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, compact separators): byte-identical for equal briefs."""
        return json.dumps(
            self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )


class SynthesisProblem(_Frozen):
    """One reason a synthesis is rejected. ``code``: ``blocked_move`` | ``caution_without_professional``
    | ``citation_missing_entry`` | ``citation_version_mismatch`` | ``citation_key_agent_mismatch`` |
    ``no_citations``. ``detail`` says what to fix (no user text)."""

    code: str
    detail: str
    move_id: str | None = None
    citation_index: int | None = None
