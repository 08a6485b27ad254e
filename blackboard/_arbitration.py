"""Arbitration (pure): build Pineal's brief from a turn's entries, validate a synthesis against it,
and build the deterministic fallback synthesis.

Precedence (docs/coaching.md, Pineal; docs/blackboard.md, Arbitration): safety > Stability's blocks > everything else. When Persona
or Plasticity disagree with Stability, Stability wins and the losing claim is kept with a reason code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ._brief import BlockedMove, Brief, Conflict, MoveView, RejectedEntry, SourceRef, SynthesisProblem
from ._keys import parse_key
from ._matching import PhraseMatcher, normalise
from ._prose import quotable
from ._registry import validate_output
from ._roster import AGENT_NAMES, SYNTHESIS_INPUTS
from ._schema_agents import CoachOutput, PersonaOutput, PlasticityOutput, SynthesisOutput, TailoringChoice
from ._schema_stability import StabilityMove, StabilityOutput
from ._store import Entry
from .config import Thresholds
from .errors import InvalidKeyError, InvalidValueError, SchemaValidationError

__all__ = ["build_brief", "fallback_synthesis", "validate_synthesis"]

CAUTION_NOTE = "offer only as a small, reversible first step and suggest consulting a professional"
_STRETCH = PhraseMatcher(
    ["stretch goal", "stretch", "challenge", "push yourself", "push harder", "ambitious", "bold"]
)


def _agent_of(name: str, entry: Entry) -> str | None:
    try:
        kind = parse_key(entry.key).kind
    except InvalidKeyError:
        kind = None
    if kind in AGENT_NAMES:
        return kind
    return name if name in AGENT_NAMES else None


def _claim(text: str) -> str:
    return text if len(text) <= 300 else text[:297] + "..."


def _claims(agent: str, out: BaseModel) -> list[str]:
    """Texts in which an agent may suggest or frame a move (``dont`` lists are agreement, not claims)."""
    if isinstance(out, PlasticityOutput):
        return [out.strategy, out.tone, out.framing, *out.do, *(c.adaptation for c in out.tailoring)]
    if isinstance(out, PersonaOutput):
        return [*out.growth_areas, *(g.description for g in out.goals)]
    return []


def build_brief(
    entries: Mapping[str, Entry],
    *,
    crisis_tier: int = 0,
    thresholds: Thresholds | None = None,
    expected: Sequence[str] = SYNTHESIS_INPUTS,
) -> Brief:
    """Build the arbitrated brief for one turn. Pure and deterministic (order of ``entries`` is
    irrelevant; same entries -> byte-identical ``Brief.to_json()``).

    Args:
        entries: turn entries, e.g. ``Blackboard.read_turn`` (mapping key = agent or kind; the agent is
            taken from the entry key's last part). Non-agent kinds are ignored; every agent entry is
            re-validated (Stability's gate re-applied), invalid ones are listed in ``rejected_entries``
            and treated as missing.
        crisis_tier: 0-3 from the safety screen; 2 pauses coaching ("pause"), 3 replaces it ("crisis");
            in both every move is withheld (``safety_tier_N``).
        thresholds: docs/coaching.md defaults when None.
        expected: agents whose absence is reported in ``missing_agents``.

    Raises:
        InvalidValueError: crisis_tier outside 0-3.
    """
    if isinstance(crisis_tier, bool) or not isinstance(crisis_tier, int) or not 0 <= crisis_tier <= 3:
        raise InvalidValueError(f"crisis_tier must be an int 0-3, got {crisis_tier!r}")
    t = thresholds or Thresholds()
    by_agent = _latest_by_agent(entries)
    outs, rejected = _validated(by_agent, t)
    present = [a for a in AGENT_NAMES if a in outs]
    sources = [SourceRef(agent=a, key=by_agent[a].key, version=by_agent[a].version) for a in present]
    stability = outs.get("stability")
    moves = stability.moves if isinstance(stability, StabilityOutput) else []
    blocked, allowed, conflicts = _gate_moves(moves, crisis_tier)
    matchers = {b.id: PhraseMatcher.for_move(b.description, b.keywords) for b in blocked}
    cautions = {m.id: PhraseMatcher.for_move(m.description) for m in allowed if m.caution}
    conflicts += _claim_conflicts(outs, matchers, cautions)
    conflicts += _coach_conflicts(outs.get("coach"), matchers)
    tailoring, lost = _tailoring(outs, crisis_tier, bool(cautions), t)
    conflicts += lost
    return Brief(
        mode=_mode(crisis_tier),
        crisis_tier=crisis_tier,
        sources=sources,
        present_agents=present,
        missing_agents=[a for a in AGENT_NAMES if a in expected and a not in outs],
        allowed_moves=allowed,
        blocked_moves=blocked,
        conflicts=_ranked(conflicts),
        tailoring_allowed=bool(tailoring),
        tailoring=tailoring,
        outputs={a: outs[a].model_dump(mode="json") for a in present},
        rejected_entries=rejected,
    )


def _latest_by_agent(entries: Mapping[str, Entry]) -> dict[str, Entry]:
    """The newest entry of each agent whose entry the brief reads (highest version, then sequence)."""
    by_agent: dict[str, Entry] = {}
    for name in sorted(entries):
        agent = _agent_of(name, entries[name])
        if agent in SYNTHESIS_INPUTS:  # Pineal consumes the brief
            prev = by_agent.get(agent)
            e = entries[name]
            if prev is None or (e.version, e.seq) > (prev.version, prev.seq):
                by_agent[agent] = e
    return by_agent


def _validated(
    by_agent: Mapping[str, Entry], t: Thresholds
) -> tuple[dict[str, BaseModel], list[RejectedEntry]]:
    """Every entry re-validated against its schema (Stability's gate re-applied); invalid ones rejected."""
    outs: dict[str, BaseModel] = {}
    rejected: list[RejectedEntry] = []
    for agent in AGENT_NAMES:
        if agent in by_agent:
            try:
                outs[agent] = validate_output(agent, by_agent[agent].value, t)
            except SchemaValidationError as exc:
                rejected.append(RejectedEntry(agent=agent, problems=exc.problems))
    return outs, rejected


def _gate_moves(
    moves: Sequence[StabilityMove], crisis_tier: int
) -> tuple[list[BlockedMove], list[MoveView], list[Conflict]]:
    """Stability's moves as blocked (by the gate, or by safety at tier 2-3, each a conflict) or allowed."""
    blocked: list[BlockedMove] = []
    allowed: list[MoveView] = []
    conflicts: list[Conflict] = []
    for m in moves:
        if m.blocked:
            blocked.append(
                BlockedMove(
                    id=m.id,
                    description=m.description,
                    keywords=list(m.keywords),
                    reasons=list(m.block_reasons),
                )
            )
        elif crisis_tier >= 2:
            code = f"safety_tier_{crisis_tier}"
            blocked.append(
                BlockedMove(id=m.id, description=m.description, keywords=list(m.keywords), reasons=[code])
            )
            conflicts.append(
                Conflict(
                    winner="safety",
                    loser="stability",
                    losing_claim=_claim(m.description),
                    reason_code=code,
                    move_id=m.id,
                )
            )
        else:
            allowed.append(
                MoveView(
                    id=m.id,
                    description=m.description,
                    caution=bool(m.caution),
                    caution_reasons=list(m.caution_reasons),
                    notes=[CAUTION_NOTE] if m.caution else [],
                )
            )
    return blocked, allowed, conflicts


def _claim_conflicts(
    outs: Mapping[str, BaseModel],
    matchers: Mapping[str, PhraseMatcher],
    cautions: Mapping[str, PhraseMatcher],
) -> list[Conflict]:
    """Persona's and Plasticity's claims that suggest a blocked move, a caution move beyond a first step,
    or stretch framing while a move needs caution: Stability wins."""
    conflicts: list[Conflict] = []
    for agent in ("persona", "plasticity"):
        out = outs.get(agent)
        if out is None:
            continue
        for text in _claims(agent, out):
            if text:
                conflicts.extend(_text_conflicts(agent, text, matchers, cautions))
    return conflicts


def _text_conflicts(
    agent: str, text: str, matchers: Mapping[str, PhraseMatcher], cautions: Mapping[str, PhraseMatcher]
) -> list[Conflict]:
    conflicts: list[Conflict] = []
    for reason_code, move_matchers in (
        ("blocked_by_stability", matchers),
        ("caution_reversible_first_step_only", cautions),
    ):
        conflicts.extend(
            Conflict(
                winner="stability",
                loser=agent,
                losing_claim=_claim(text),
                reason_code=reason_code,
                move_id=mid,
            )
            for mid, matcher in move_matchers.items()
            if matcher.matches(text)
        )
    if cautions and _STRETCH.matches(text):
        conflicts.append(
            Conflict(
                winner="stability",
                loser=agent,
                losing_claim=_claim(text),
                reason_code="stretch_framing_under_caution",
            )
        )
    return conflicts


def _coach_conflicts(coach: BaseModel | None, matchers: Mapping[str, PhraseMatcher]) -> list[Conflict]:
    """The Coach's reply naming a blocked move: Stability wins."""
    if not isinstance(coach, CoachOutput):
        return []
    return [
        Conflict(
            winner="stability",
            loser="coach",
            losing_claim="(coach reply)",
            reason_code="coach_reply_mentions_blocked_move",
            move_id=mid,
        )
        for mid, matcher in matchers.items()
        if matcher.matches(coach.reply)
    ]


def _tailoring(
    outs: Mapping[str, BaseModel], crisis_tier: int, caution: bool, t: Thresholds
) -> tuple[list[dict[str, Any]], list[Conflict]]:
    """Plasticity's tailoring choices that stand (safety, Persona's evidence and band, and Stability's
    caution may each overrule one: a conflict instead)."""
    tailoring: list[dict[str, Any]] = []
    conflicts: list[Conflict] = []
    plasticity = outs.get("plasticity")
    persona = outs.get("persona")
    if not isinstance(plasticity, PlasticityOutput):
        return tailoring, conflicts
    for choice in plasticity.tailoring:
        lost = _tailoring_conflict(choice, persona, crisis_tier, caution, t)
        if lost is not None:
            conflicts.append(lost)
        else:
            tailoring.append(choice.model_dump(mode="json"))
    return tailoring, conflicts


def _tailoring_conflict(
    choice: TailoringChoice, persona: BaseModel | None, crisis_tier: int, caution: bool, t: Thresholds
) -> Conflict | None:
    """Why one tailoring choice is overruled (a conflict), or None when it stands."""
    claim = _claim(f"{choice.trait}={choice.level}: {choice.adaptation}")
    if crisis_tier >= 2:
        return Conflict(
            winner="safety", loser="plasticity", losing_claim=claim, reason_code="safety_overrides_tailoring"
        )
    if isinstance(persona, PersonaOutput):
        actual = getattr(persona.traits, choice.trait)
        if actual.confidence < t.tailoring_min_confidence or actual.evidence_count < t.tailoring_min_evidence:
            return Conflict(
                winner="persona",
                loser="plasticity",
                losing_claim=claim,
                reason_code="tailoring_below_confidence_bar",
            )
        if actual.band != choice.level:
            return Conflict(
                winner="persona",
                loser="plasticity",
                losing_claim=claim,
                reason_code="tailoring_contradicts_persona_band",
            )
    if caution and choice.trait == "neuroticism" and choice.level == "low":
        return Conflict(
            winner="stability",
            loser="plasticity",
            losing_claim=claim,
            reason_code="stretch_framing_under_caution",
        )
    return None


def _ranked(conflicts: Iterable[Conflict]) -> list[Conflict]:
    """Conflicts without duplicates, safety's first, then Stability's, then by their fields."""
    rank = {"safety": 0, "stability": 1}
    return sorted(
        set(conflicts),
        key=lambda c: (
            rank.get(c.winner, 2),
            c.winner,
            c.loser,
            c.reason_code,
            c.move_id or "",
            c.losing_claim,
        ),
    )


def _mode(crisis_tier: int) -> Literal["coach", "pause", "crisis"]:
    return "crisis" if crisis_tier >= 3 else "pause" if crisis_tier == 2 else "coach"


#: A synthesis is a response, not a fragment: fewer words (runs of 2+ letters) than this is rejected
#: (``text_too_short``). A sanity floor, well below Pineal's 80-250-word target (agents/pineal.md), that the
#: deterministic fallback always clears; a 135M model has sent "..." as its synthesis.
MIN_SYNTHESIS_WORDS = 3
_WORD = re.compile(r"[^\W\d_]{2,}")


def validate_synthesis(synthesis: SynthesisOutput, brief: Brief) -> list[SynthesisProblem]:
    """Check a synthesis against its brief; ``[]`` means valid. Pure.

    Problems: a blocked move is suggested (keywords/description matched case-, accent- and
    spacing-insensitively); a caution move is mentioned without "professional"; a citation names an
    entry the brief did not use or another version of it; no citation at all while sources exist; fewer
    than ``MIN_SYNTHESIS_WORDS`` words.
    """
    problems: list[SynthesisProblem] = []
    text = synthesis.text
    for b in brief.blocked_moves:
        if PhraseMatcher.for_move(b.description, b.keywords).matches(text):
            problems.append(
                SynthesisProblem(
                    code="blocked_move",
                    move_id=b.id,
                    detail=f"the text suggests blocked move {b.id!r} ({', '.join(b.reasons)}); remove every mention of it",
                )
            )
    if "professional" not in normalise(text):
        for m in brief.allowed_moves:
            if m.caution and PhraseMatcher.for_move(m.description).matches(text):
                problems.append(
                    SynthesisProblem(
                        code="caution_without_professional",
                        move_id=m.id,
                        detail=f"move {m.id!r} needs caution: {CAUTION_NOTE}",
                    )
                )
    by_key = {s.key: s for s in brief.sources}
    by_agent = {s.agent: s for s in brief.sources}
    for i, c in enumerate(synthesis.citations):
        src = by_key.get(c.key) if c.key is not None else by_agent.get(c.agent or "")
        name = c.key or c.agent
        if src is None:
            problems.append(
                SynthesisProblem(
                    code="citation_missing_entry",
                    citation_index=i,
                    detail=f"citations[{i}] cites {name!r}, which is not in the brief; cite only: "
                    + ", ".join(f"{s.agent}@v{s.version}" for s in brief.sources),
                )
            )
        elif c.agent is not None and c.key is not None and src.agent != c.agent:
            problems.append(
                SynthesisProblem(
                    code="citation_key_agent_mismatch",
                    citation_index=i,
                    detail=f"citations[{i}]: key belongs to {src.agent!r}, not {c.agent!r}",
                )
            )
        elif src.version != c.version:
            problems.append(
                SynthesisProblem(
                    code="citation_version_mismatch",
                    citation_index=i,
                    detail=f"citations[{i}] cites {name!r} at version {c.version}; the brief used version {src.version}",
                )
            )
    if brief.sources and not synthesis.citations:
        problems.append(
            SynthesisProblem(
                code="no_citations", detail="cite the entries you relied on (key or agent + version)"
            )
        )
    words = len(_WORD.findall(text))
    if words < MIN_SYNTHESIS_WORDS:
        problems.append(
            SynthesisProblem(
                code="text_too_short",
                detail=f"the text has {words} word(s); write the full response to the user (80-250 words)",
            )
        )
    return problems


_CLASS_TEXT = {
    "consistent_executor": "you tend to follow through on what you commit to",
    "inclined_abstainer": "you often state strong intentions that are harder to carry out",
    "overcommitter": "your goals may be growing faster than the time available for them",
    "externally_driven": "this goal may matter more to others than to you",
    "competing_commitment": "something else you care about may be competing with this goal",
}


def _sentences(brief: Brief) -> Iterable[str]:
    if brief.mode != "coach":
        yield "I want to pause the coaching part of our conversation here, because what you shared matters more."
        yield "If you are in danger or thinking about harming yourself, please contact a crisis line or emergency services now."
        yield "I'm an AI coach, and I'm here to keep talking with you."
        return
    yield "I'm an AI coach, not a therapist; here is what stood out across the specialist views."
    shadow = brief.outputs.get("shadow")
    if shadow:
        cls = shadow.get("pattern_class")
        if cls in _CLASS_TEXT:
            yield f"One pattern worth exploring, as a hypothesis rather than a verdict: {_CLASS_TEXT[cls]}."
        else:
            yield "There isn't enough history yet to see a pattern in how plans turn into action."
        p = (shadow.get("follow_through") or {}).get("probability")
        if isinstance(p, (int, float)):
            yield f"Past follow-through suggests a rough {round(p * 100)}% chance for the next step, so keep it small."
    persona = brief.outputs.get("persona")
    areas = [a for a in map(quotable, (persona or {}).get("growth_areas") or []) if a]
    if areas:
        yield f"A growth area to keep in view: {areas[0]}."
    for m in [m for m in brief.allowed_moves if quotable(m.description)][:3]:
        d = quotable(m.description)
        if m.caution:
            yield f"If you want to try this ({d}), start with a small, reversible first step and consider consulting a professional."
        else:
            yield f"One option to consider: {d}."
    if brief.blocked_moves:
        yield "Some options were set aside because they could cause harm."
    if brief.missing_agents:
        yield "Some specialist views were not available this time, so this summary is partial."
    yield "What feels like a manageable next step for you?"


def fallback_synthesis(brief: Brief) -> SynthesisOutput:
    """Deterministic synthesis built only from the brief; always passes :func:`validate_synthesis`
    (sentences matching a blocked move are dropped; every source is cited at its version)."""
    matchers = [PhraseMatcher.for_move(b.description, b.keywords) for b in brief.blocked_moves]
    kept = [s for s in _sentences(brief) if not any(m.matches(s) for m in matchers)]
    text = " ".join(kept) or "Thank you for sharing this. What would you like to focus on next?"
    if len(text) > 8000:
        text = text[:7997] + "..."
    citations = [{"agent": s.agent, "key": s.key, "version": s.version} for s in brief.sources]
    return SynthesisOutput.model_validate({"text": text, "citations": citations})
