"""The result of one coaching turn: per-agent status and the :class:`TurnResult` the CLI prints.

Times are seconds since the turn started (``time.monotonic`` differences), tokens as reported by
Claude Code's result message (input includes cached prompt tokens).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from blackboard import AGENT_ORDER

__all__ = ["AgentStatus", "Status", "TurnResult"]

#: Status of one agent in a turn. ``skipped``: not launched (crisis turn, or Pineal without Shadow).
Status = Literal["pending", "running", "ok", "error", "timeout", "crashed", "skipped"]


@dataclass
class AgentStatus:
    """One agent's run in a turn.

    Attributes:
        status: see :data:`Status`.
        started_s / first_token_s / finished_s: seconds since the turn started (None if not reached).
        input_tokens / output_tokens: summed over the agent's attempts.
        error: a short reason (never user text) when status is error, timeout or crashed.
        attempts: 0 (not launched), 1, or 2 (one retry after a transient failure).
        warm: True when a warm process (with the session's conversation) served the last attempt.
    """

    agent: str
    status: Status = "pending"
    started_s: float | None = None
    first_token_s: float | None = None
    finished_s: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    attempts: int = 0
    warm: bool = False

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("started_s", "first_token_s", "finished_s"):
            if d[k] is not None:
                d[k] = round(d[k], 3)
        return d


@dataclass
class TurnResult:
    """One turn's outcome.

    Attributes:
        turn_id: the blackboard turn id.
        coach_reply: what the user was shown first (the Coach's reply, a deterministic fallback reply
            when the Coach failed or its reply named a blocked move, or the crisis response).
        synthesis: the full response appended after the specialists (empty on a crisis turn).
        synthesis_source: ``model`` | ``repaired`` | ``fallback`` | ``crisis`` | ``support`` | ``none``
            (``crisis``/``support``: a safety response is the synthesis, or there is none on a crisis turn).
        degraded: True when any agent was missing or a fallback was used; ``missing`` names the agents.
        crisis_tier: the turn's tier 0-3: the safety screen's (3: crisis response only, no agent launched),
            or higher when an agent's risk assessment raised it.
        agents: per-agent status, keyed by agent name.
        coach_reply_s / synthesis_s: seconds from the turn's start to each delivery.
        coach_first_words_s: seconds until the first words of the reply were shown (streamed while the
            Coach wrote them, ``run_turn(on_reply_stream=...)``); None without a stream.
        safety_raises / safety_refused: rule ids of the agents' accepted / refused tier raises
            (``model.coach.raised_t3``, ``model.family.plan``, ``model.coach.refused_quote_not_in_message``).
    """

    turn_id: str
    coach_reply: str
    synthesis: str
    synthesis_source: str
    degraded: bool
    crisis_tier: int
    missing: list[str] = field(default_factory=list)
    agents: dict[str, AgentStatus] = field(default_factory=dict)
    coach_fallback: bool = False
    coach_reply_s: float | None = None
    synthesis_s: float | None = None
    coach_first_words_s: float | None = None
    synthesis_citations: list[dict[str, Any]] = field(default_factory=list)
    safety_raises: list[str] = field(default_factory=list)
    safety_refused: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``coach run --json`` document."""
        return {
            "turn_id": self.turn_id,
            "coach_reply": self.coach_reply,
            "synthesis": self.synthesis,
            "degraded": self.degraded,
            "crisis_tier": self.crisis_tier,
            "missing": list(self.missing),
            "synthesis_source": self.synthesis_source,
            "safety_raises": list(self.safety_raises),
            "safety_refused": list(self.safety_refused),
            "coach_fallback": self.coach_fallback,
            "coach_reply_s": None if self.coach_reply_s is None else round(self.coach_reply_s, 3),
            "synthesis_s": None if self.synthesis_s is None else round(self.synthesis_s, 3),
            "coach_first_words_s": None
            if self.coach_first_words_s is None
            else round(self.coach_first_words_s, 3),
            "agents": {
                name: self.agents[name].to_json()
                for name in sorted(
                    self.agents, key=lambda n: AGENT_ORDER.index(n) if n in AGENT_ORDER else 99
                )
            },
        }
