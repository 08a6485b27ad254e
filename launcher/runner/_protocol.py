"""The runner's data and protocol: :class:`RunnerConfig` (how agent processes are started),
:class:`AgentInvocation` (one agent's model turn), the :class:`AgentOutcome` and :class:`ToolCallRecord`
it returns, and the :class:`AgentRunner` protocol the supervisor calls (``launcher.runner._agent_runner``
holds the Claude Code implementation)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "AgentEvents",
    "AgentInvocation",
    "AgentOutcome",
    "AgentRunner",
    "RunnerConfig",
    "ToolCallRecord",
]


@dataclass(frozen=True)
class RunnerConfig:
    """How agent processes are started.

    Attributes:
        proxy_url: the Anthropic-compatible proxy (``ANTHROPIC_BASE_URL``).
        mcp_url: the shared streamable-HTTP MCP server (e.g. ``http://127.0.0.1:PORT/mcp``).
        api_key: sent as ``ANTHROPIC_API_KEY`` (the proxy ignores or checks it).
        max_warm: most warm processes kept at once (about 235 MiB each); 0 => always one-shot.
        mcp_turn_header: send ``x-coach-turn`` to the MCP server. Warm processes cannot change their
            headers between turns, so with True every process is one-shot; with False (the default) the
            MCP server must resolve the turn server-side (see :mod:`launcher.pipeline._turn_scope`).
        mcp_server_name: the MCP server's name in the config (tool names ``mcp__<name>__<tool>``).
        cli_path: the ``claude`` binary; None => the SDK's bundled one.
        cwd: the processes' working directory (no project settings are loaded from it).
        seed_way: run agents "the seed's way" (benchmarks only): Claude Code's default system prompt
            (the agent prompt appended) and built-in tools, thinking on, none of the plain-request env.
        mcp_secret: signs the MCP scope headers (``x-coach-scope-token``; see ``mcp_server.scope_token``).
        extra_env: added to every process's environment (after ours).
        keep_claude_transcripts: let Claude Code save each conversation (the user's messages) under
            ``$CLAUDE_CONFIG_DIR/projects/``, never pruned: for debugging only. False (the default) passes
            ``--no-session-persistence``; a warm process's conversation lives in the process either way.
    """

    proxy_url: str
    mcp_url: str
    api_key: str = "coachboard-local"
    max_warm: int = 6
    mcp_turn_header: bool = False
    mcp_server_name: str = "coachboard"
    cli_path: str | None = None
    cwd: str | None = None
    mcp_secret: str | None = None
    seed_way: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    keep_claude_transcripts: bool = False
    pool_size: int = 0
    """Started idle processes kept for new sessions, at most one per agent (``launcher.runner._process_pool``;
    needs the in-process proxy and MCP server, which translate a pooled process's identity)."""
    reuse_processes: bool = False
    """When a session is closed, reset each of its pooled warm processes (``/clear``) and return it to
    the pool for another session instead of stopping it (``launcher.runner._reset``: the binding is
    revoked first; a reset not confirmed stops the process). Needs ``pool_size`` > 0."""


@dataclass(frozen=True)
class AgentInvocation:
    """One agent's work for one turn.

    ``prompt`` is the full context pack (for a process that starts a conversation); ``followup`` is what
    a warm process, whose conversation already holds the session, is sent instead.
    """

    agent: str
    user: str
    session: str
    turn: str
    system_prompt: str
    model: str
    tools: tuple[str, ...]
    max_output_tokens: int
    context_budget_tokens: int
    prompt: str
    followup: str
    tool_timeout_s: float = 60.0
    max_turns: int = 6


@dataclass
class ToolCallRecord:
    """One MCP tool call the agent made: bare tool name, its input, and whether it succeeded."""

    name: str
    input: dict[str, Any]
    ok: bool
    result: str = ""


@dataclass
class AgentOutcome:
    """What one agent's run produced. Token counts are summed over the run's model calls."""

    text: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    warm: bool = False
    stopped: str = "end_turn"


class AgentEvents(Protocol):
    """Callbacks the runner makes while an agent runs (called from the runner's task).
    ``on_started``: the process is up and the prompt was sent."""

    def on_started(self) -> None: ...

    def on_first_token(self) -> None: ...

    def on_tool_result(self, call: ToolCallRecord) -> None: ...


class AgentRunner(Protocol):
    """Runs one agent's turn. The supervisor applies deadlines by cancelling :meth:`run`.

    ``run`` raises :class:`~launcher.errors.AgentFailedError` on failure (``retryable`` says whether one
    retry may help); on cancellation the process is discarded so no late write can land in a later turn.
    """

    async def run(self, invocation: AgentInvocation, events: AgentEvents) -> AgentOutcome: ...

    async def prestart(self, invocation: AgentInvocation, *, evict: bool = True) -> bool: ...

    async def close_session(self, user: str, session: str) -> None: ...

    async def aclose(self) -> None: ...
