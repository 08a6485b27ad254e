"""Typed configuration of the MCP server: the ``[mcp]`` section of ``coach.toml``.

Composed into ``launcher.config.CoachConfig`` by the supervisor; read once at the entry point and passed
down. Every field has a default, so ``McpConfig()`` is a working configuration.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["McpConfig"]


def _collect_agents() -> tuple[str, ...]:
    """Agents whose entries ``collect_turn`` waits for by default: everyone but Pineal itself
    (``blackboard.SYNTHESIS_INPUTS``; imported here, so reading the config does not load the blackboard)."""
    from blackboard import SYNTHESIS_INPUTS

    return SYNTHESIS_INPUTS


class McpConfig(BaseModel):
    """Settings of ``coach mcp``.

    Attributes:
        host: interface the HTTP transport binds (loopback by default: scope headers are trusted, so the
            server must not be reachable by anyone but the supervisor's agents).
        port: HTTP port (0 = any free port; the ready line on stderr names it).
        path: HTTP endpoint path (Claude Code's MCP config ``url`` ends with it).
        max_argument_bytes: largest accepted tool-call arguments, as UTF-8 JSON bytes. Larger calls are
            refused with a plain error (the schemas' own string limits still apply below this).
        collect_deadline_s: how long ``collect_turn`` waits when the model passes no deadline (seconds).
        collect_deadline_max_s: the longest deadline a model may ask ``collect_turn`` for (seconds).
        collect_agents: agents ``collect_turn`` waits for (Shadow first: it is the barrier).
        history_limit: most turns ``get_session_history`` returns.
        hide_other_agents_tools: when the connection's agent is known, ``tools/list`` shows only that
            agent's own write tool (fewer prompt tokens; the call check is enforced either way).
        synthesis_attempts: rejected ``write_synthesis`` attempts per turn after which the server stores
            ``blackboard.fallback_synthesis(brief)`` instead (docs/coaching.md, PINEAL: rejected, repaired once,
            then a deterministic fallback). 0 = never store the fallback (the supervisor does).
        max_concurrent_collects: ``collect_turn`` calls waiting at once (each holds a thread on its own
            limiter, apart from the threads reads and writes use); more wait for a slot.
    """

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    path: str = Field(default="/mcp", pattern=r"^/[A-Za-z0-9_./-]*$")
    max_argument_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    collect_deadline_s: float = Field(default=60.0, gt=0, le=3600)
    collect_deadline_max_s: float = Field(default=300.0, gt=0, le=3600)
    collect_agents: tuple[str, ...] = Field(default_factory=_collect_agents)
    history_limit: int = Field(default=20, ge=1, le=1000)
    hide_other_agents_tools: bool = True
    synthesis_attempts: int = Field(default=2, ge=0, le=10)
    max_concurrent_collects: int = Field(default=256, ge=1, le=10_000)
