"""Turn record, compacted user profile, and the pure profile merge (docs/coaching.md, Persona: a trait
moves at most +-10 POMP per session)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from ._prose import quotable
from ._schema_agents import Goal, PersonaOutput
from ._schema_common import (
    AgentName,
    FollowThroughStats,
    Id,
    OceanTraits,
    ShortText,
    StrictModel,
    TraitScore,
    band_for,
)
from ._schema_shadow import PatternClass, ShadowOutput
from .config import Thresholds

__all__ = ["RuleId", "TurnRecord", "UserProfile", "merge_profile"]

#: A rule id such as ``model.coach.raised_t3`` (never text: lower-case letters, digits, ``_`` and ``.``).
RuleId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_.]{1,80}$")]


class TurnRecord(StrictModel):
    """What happened in one turn (no user text): who was required, who arrived, who was missing,
    where the synthesis came from, and the entry versions used. Times are Unix seconds.

    ``crisis_tier`` is the turn's final tier (the screen's, or higher when an agent's risk assessment
    raised it); ``safety_raises`` / ``safety_refused`` are the rule ids of accepted and refused raises
    (``model.coach.raised_t3``, ``model.family.plan``, ``model.stability.refused_quote_not_in_message``).
    ``synthesis_source`` ``support``: a raise to tier 2 replaced the synthesis with the support response."""

    user: Id
    session: Id
    turn: Id
    crisis_tier: int = Field(default=0, ge=0, le=3)
    required: list[AgentName] = Field(default_factory=list, max_length=6)
    arrived: list[AgentName] = Field(default_factory=list, max_length=6)
    missing: list[AgentName] = Field(default_factory=list, max_length=6)
    timed_out: bool = False
    synthesis_source: Literal["model", "repaired", "fallback", "crisis", "support", "none"] = "none"
    entry_versions: dict[AgentName, int] = Field(default_factory=dict)
    safety_raises: list[RuleId] = Field(default_factory=list, max_length=20)
    safety_refused: list[RuleId] = Field(default_factory=list, max_length=20)
    started_at: float = Field(default=0.0, ge=0)
    finished_at: float | None = Field(default=None, ge=0)


class UserProfile(StrictModel):
    """The compacted cross-session profile (``users/{u}/profile``)."""

    user: Id
    sessions_seen: int = Field(default=0, ge=0)
    last_session: Id | None = None
    traits: OceanTraits | None = None
    goals: list[Goal] = Field(default_factory=list, max_length=20)
    growth_areas: list[ShortText] = Field(default_factory=list, max_length=10)
    follow_through: FollowThroughStats | None = None
    pattern_class: PatternClass = "insufficient_data"
    follow_through_probability: float | None = Field(default=None, ge=0, le=1)


def _as(model: type[BaseModel], value: Any, t: Thresholds) -> Any:
    if value is None or isinstance(value, model):
        return value
    if hasattr(value, "value") and isinstance(value.value, dict):  # an Entry
        value = value.value
    return model.model_validate(value, context={"thresholds": t})


def _merge_trait(old: TraitScore, new: TraitScore, t: Thresholds) -> TraitScore:
    total = old.evidence_count + new.evidence_count
    if total > 0:
        target = (old.score * old.evidence_count + new.score * new.evidence_count) / total
        confidence = (old.confidence * old.evidence_count + new.confidence * new.evidence_count) / total
    else:
        target, confidence = new.score, new.confidence
    cap = t.trait_max_shift_per_session
    score = round(min(old.score + cap, max(old.score - cap, target)), 2)
    return TraitScore(
        score=score,
        band=band_for(score, t),
        confidence=round(confidence, 4),
        evidence_count=min(total, 100_000),
    )


def merge_profile(
    old: UserProfile,
    session_outputs: Mapping[str, Any],
    thresholds: Thresholds | None = None,
    *,
    session: str | None = None,
) -> UserProfile:
    """Fold one session's outputs into the profile. Pure; returns a new UserProfile.

    Args:
        old: the current profile (``UserProfile(user=u)`` for a new user).
        session_outputs: agent name -> that agent's latest output this session (model instance, plain
            dict or Entry); only ``persona`` and ``shadow`` are used, others are ignored.
        thresholds: docs/coaching.md defaults when None.
        session: the session id, counted once in ``sessions_seen`` (ignored if equal to
            ``old.last_session``).

    Traits: evidence-weighted mean of old and new, then clamped to within
    ``trait_max_shift_per_session`` (10 POMP) of the old score (docs/coaching.md, Persona); bands recomputed.
    Goals: merged by case-insensitive description, mentions summed, top 20 by mentions.
    Follow-through counts, pattern class and probability: the latest observation wins.
    """
    t = thresholds or Thresholds()
    persona: PersonaOutput | None = _as(PersonaOutput, session_outputs.get("persona"), t)
    shadow: ShadowOutput | None = _as(ShadowOutput, session_outputs.get("shadow"), t)
    data = old.model_dump()
    if persona is not None:
        if old.traits is None:
            data["traits"] = persona.traits.model_dump()
        else:
            data["traits"] = {
                name: _merge_trait(score, getattr(persona.traits, name), t).model_dump()
                for name, score in old.traits.items()
            }
        goals: dict[str, dict[str, Any]] = {}
        # Only prose reaches the long-lived profile: a small model's schema keywords, ids and codes do not.
        for g in [*old.goals, *(g for g in persona.goals if quotable(g.description, max_chars=400))]:
            k = " ".join(g.description.lower().split())
            if k in goals:
                goals[k]["mentions"] = min(goals[k]["mentions"] + g.mentions, 100_000)
            else:
                goals[k] = {"description": g.description, "mentions": g.mentions}
        data["goals"] = sorted(goals.values(), key=lambda g: (-g["mentions"], g["description"]))[:20]
        areas: list[str] = []
        for a in [*(a for a in persona.growth_areas if quotable(a, max_chars=400)), *old.growth_areas]:
            if a.lower() not in {x.lower() for x in areas}:
                areas.append(a)
        data["growth_areas"] = areas[:10]
        data["follow_through"] = persona.follow_through.model_dump()
    if shadow is not None:
        data["pattern_class"] = shadow.pattern_class
        data["follow_through_probability"] = shadow.follow_through.probability
    if session is not None and session != old.last_session:
        data["sessions_seen"] = old.sessions_seen + 1
        data["last_session"] = session
    return UserProfile.model_validate(data, context={"thresholds": t})
