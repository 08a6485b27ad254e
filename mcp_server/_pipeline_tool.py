"""``coach_turn``: one full pipeline turn as an MCP tool, for the ``/coach`` command inside Claude Code.

The tool runs the same code as ``coach run``: the deterministic safety screen, then the six agents as
headless Claude Code processes through the proxy, writing to the blackboard through the streamable-HTTP
MCP server (both started in-process by :func:`launcher.stack.running_stack`), then Pineal's synthesis
(:meth:`launcher.supervisor.Supervisor.run_turn`). The user and the session come from the session
server's scope (``COACH_USER`` / ``COACH_SESSION``), never from the model: the tool's only argument is
the user's message.

Result (``structured_content``, which Claude Code shows the model)::

    {"ok": true, "message": "<display text: the Coach's reply, then the synthesis>",
     "turn": "t000003", "coach_reply": "...", "synthesis": "...", "synthesis_source": "model",
     "degraded": false, "missing": [], "crisis_tier": 0}

Logs never contain the message or the replies (only the turn id, durations and the outcome).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from mcp_server._problems import error_result, ok_result
from mcp_server._scope import Scope
from mcp_server._toolkit import ToolSpec

if TYPE_CHECKING:
    from blackboard import Blackboard

__all__ = [
    "COACH_TURN_TOOL",
    "CoachTurnArgs",
    "PipelineRun",
    "TurnSummary",
    "coach_turn_spec",
    "display_text",
    "supervisor_pipeline",
]

log = logging.getLogger("mcp_server")

COACH_TURN_TOOL = "coach_turn"

#: Longest message accepted (characters); a coaching message is a few sentences.
MAX_MESSAGE_CHARS = 8000

_DESCRIPTION = (
    "Run one turn of the coaching pipeline for this user and session with the user's message: a safety "
    "screen, the Coach's immediate reply, the four specialists (Shadow, Persona, Plasticity, Stability) "
    "and Pineal's synthesis, all written to the blackboard. Pass the user's message exactly as written. "
    "Returns the Coach's reply and the synthesis; show both to the user unchanged, the reply first. "
    "Takes from seconds to a few minutes."
)


class CoachTurnArgs(BaseModel):
    """The tool's input: only the user's message (the scope fixes user and session)."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(
        min_length=1,
        max_length=MAX_MESSAGE_CHARS,
        description="The user's message to the coach, exactly as the user wrote it.",
    )


@dataclass
class TurnSummary:
    """What a pipeline turn returns to the tool (a subset of ``launcher.supervisor.TurnResult``)."""

    turn: str
    coach_reply: str
    synthesis: str
    synthesis_source: str
    degraded: bool
    crisis_tier: int
    missing: list[str] = field(default_factory=list)
    coach_reply_s: float | None = None
    synthesis_s: float | None = None


class PipelineRun(Protocol):
    """Runs one turn: ``await run(user, session, message) -> TurnSummary``.

    Raises any exception when the pipeline cannot run at all (bad configuration, no free port, the
    agent files invalid); agent failures inside a turn are reported in the summary, not raised.
    """

    def __call__(self, user: str, session: str, message: str) -> Awaitable[TurnSummary]: ...


def display_text(summary: TurnSummary) -> str:
    """The text the user is shown: the Coach's reply, then the synthesis, then one status line."""
    parts = [f"Coach:\n{summary.coach_reply.strip()}"]
    if summary.synthesis.strip():
        parts.append(f"Synthesis:\n{summary.synthesis.strip()}")
    status = f"(turn {summary.turn}; synthesis: {summary.synthesis_source}"
    if summary.degraded and summary.missing:
        status += f"; missing: {', '.join(summary.missing)}"
    parts.append(status + ")")
    return "\n\n".join(parts)


def coach_turn_spec(run: PipelineRun, *, on_done: Callable[[TurnSummary], None] | None = None) -> ToolSpec:
    """The ``coach_turn`` tool over ``run`` (see :class:`PipelineRun`).

    ``on_done(summary)`` is called after a turn completes (the session server uses it to start a new
    manual turn for subagent writes). Errors: an ``is_error`` result with code ``pipeline_failed``
    naming the exception type and what to check; nothing stored is changed by a failed start.
    """

    async def handler(scope: Scope, args: CoachTurnArgs, raw: dict[str, Any]) -> CallToolResult:
        try:
            summary = await run(scope.user, scope.session, args.message)
        except Exception as exc:  # any failure to run the pipeline becomes a plain tool error
            log.error("coach_turn failed: %s", type(exc).__name__)
            log.debug("coach_turn traceback", exc_info=True)
            return error_result(
                COACH_TURN_TOOL,
                f"FAILED to run the pipeline: {type(exc).__name__}: {_first_line(exc)}",
                code="pipeline_failed",
                retryable=False,
                advice="show this error to the user. Check coach.toml ([upstream] url: the model server "
                "must be running) and the agent files (`coach agents check`), then try /coach again.",
            )
        if on_done is not None:
            on_done(summary)
        log.info(
            "coach_turn turn=%s source=%s degraded=%s reply_s=%s synthesis_s=%s",
            summary.turn, summary.synthesis_source, summary.degraded, summary.coach_reply_s, summary.synthesis_s,
        )
        return ok_result(
            {
                "turn": summary.turn,
                "coach_reply": summary.coach_reply,
                "synthesis": summary.synthesis,
                "synthesis_source": summary.synthesis_source,
                "degraded": summary.degraded,
                "missing": list(summary.missing),
                "crisis_tier": summary.crisis_tier,
            },
            note=display_text(summary),
        )

    return ToolSpec(
        name=COACH_TURN_TOOL,
        title="Run one coaching turn",
        description=_DESCRIPTION,
        input_model=CoachTurnArgs,
        handler=handler,
        read_only=False,
        idempotent=False,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "(no message)"


def supervisor_pipeline(config: Any, board: Blackboard) -> PipelineRun:
    """The real pipeline: what ``coach run`` does for one message, over ``board``.

    Args:
        config: a ``launcher.config.CoachConfig`` (upstream, proxy, MCP, safety, agents folder).
        board: the blackboard the session server already uses (same data directory).

    Per call: the agent files are loaded (so edits apply to the next turn), the proxy and the HTTP MCP
    server start on free loopback ports, the agents run as one-shot ``claude`` processes, and all of it
    stops when the turn ends.

    Raises (from the returned callable): ``launcher`` errors (``AgentSpecError``, ``StackError``) and
    ``blackboard`` errors when the store is unusable.
    """

    async def run(user: str, session: str, message: str) -> TurnSummary:
        from launcher._agent_runner import ClaudeAgentRunner, RunnerConfig
        from launcher._screen import SafetyScreen
        from launcher._turn_scope import TurnDirectory
        from launcher.agents import load_agents
        from launcher.stack import running_stack
        from launcher.supervisor import Supervisor

        specs = load_agents(config.agents.dir)
        directory = TurnDirectory()
        async with running_stack(
            board=board, directory=directory, proxy_config=config.proxy_config(), mcp_config=config.mcp,
            agents=specs,
        ) as urls:
            runner_cfg = RunnerConfig(proxy_url=urls.proxy_url, mcp_url=urls.mcp_url, max_warm=0)
            async with ClaudeAgentRunner(runner_cfg) as runner:
                supervisor = Supervisor(
                    board, runner, lambda: specs, screen=SafetyScreen(config.safety), directory=directory
                )
                result = await supervisor.run_turn(user, session, message)
        return TurnSummary(
            turn=result.turn_id,
            coach_reply=result.coach_reply,
            synthesis=result.synthesis,
            synthesis_source=result.synthesis_source,
            degraded=result.degraded,
            crisis_tier=result.crisis_tier,
            missing=list(result.missing),
            coach_reply_s=result.coach_reply_s,
            synthesis_s=result.synthesis_s,
        )

    return run
