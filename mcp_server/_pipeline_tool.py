"""``coach_turn``: one full pipeline turn as an MCP tool, for the ``/coach`` command inside Claude Code.

The tool runs the same code as ``coach run`` (``launcher._runtime.coach_runtime`` and
:meth:`launcher.supervisor.Supervisor.run_turn`): the deterministic safety screen, then the six agents as
headless Claude Code processes through the in-process proxy, writing to the blackboard through the
in-process streamable-HTTP MCP server, then Pineal's synthesis. :class:`HostedPipeline` keeps that
runtime (and the agents' warm processes) for the session server's lifetime. The user and the session
come from the session server's scope (``COACH_USER`` / ``COACH_SESSION``), never from the model: the
tool's only argument is the user's message.

Result (``structured_content``, which Claude Code shows the model)::

    {"ok": true, "message": "<display text: the Coach's reply, then the synthesis>",
     "turn": "t000003", "coach_reply": "...", "synthesis": "...", "synthesis_source": "model",
     "degraded": false, "missing": [], "crisis_tier": 0}

Logs never contain the message or the replies (only the turn id, durations and the outcome).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from mcp_server._problems import error_result, ok_result
from mcp_server._scope import Scope
from mcp_server._toolkit import ToolSpec

__all__ = [
    "COACH_TURN_TOOL",
    "CoachTurnArgs",
    "HostedPipeline",
    "PipelineRun",
    "TurnSummary",
    "coach_turn_spec",
    "display_text",
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


class HostedPipeline:
    """The real pipeline (:class:`PipelineRun`): ``launcher._runtime.coach_runtime``, exactly what
    ``coach run`` uses (blackboard, agent registry, in-process proxy and signed HTTP MCP server, agent
    runner, supervisor), kept running for the session server's lifetime so the agents' Claude Code
    processes stay warm between turns (``[agents] warm_process_limit``; about 200 MiB each).

    Use :meth:`lifespan` as the MCP server's lifespan: the runtime starts on the first turn, in a task
    owned by the lifespan, and stops (every agent process with it) when the server shuts down. Without
    a running lifespan each call starts and stops its own runtime. Agent files are re-read before every
    turn (an invalid edit keeps the previous version; see ``launcher.agents.AgentRegistry``).

    Args:
        config: a ``launcher.config.CoachConfig`` (upstream, proxy, MCP, safety, agents, data dir).

    Raises (from a call): ``launcher.agents.AgentSpecError`` (invalid agent files),
    ``launcher.errors.StackError`` (a server could not start), ``blackboard`` errors (store unusable).
    """

    def __init__(self, config: Any) -> None:
        self.config = config
        self._tg: TaskGroup | None = None
        self._runtime: Any = None
        self._stop = anyio.Event()
        self._starting = anyio.Lock()

    @contextlib.asynccontextmanager
    async def lifespan(self, server: Any = None) -> AsyncIterator[None]:
        """Host the runtime while the server runs (``MCPServer(lifespan=pipeline.lifespan)``)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self._tg = None
                self._stop.set()

    async def _host(self, *, task_status: TaskStatus[Any] = anyio.TASK_STATUS_IGNORED) -> None:
        from launcher._runtime import coach_runtime

        started = False
        try:
            async with coach_runtime(self.config) as runtime:
                started = True
                task_status.started(runtime)
                await self._stop.wait()
        except Exception:
            if not started:
                raise  # reaches the caller of tg.start (the turn that tried to start it)
            log.error("the pipeline runtime stopped with an error; the next turn starts a new one", exc_info=True)
        finally:
            self._runtime = None

    async def _ensure(self) -> Any:
        async with self._starting:
            if self._runtime is None and self._tg is not None:
                self._runtime = await self._tg.start(self._host)
            return self._runtime

    async def __call__(self, user: str, session: str, message: str) -> TurnSummary:
        runtime = await self._ensure()
        if runtime is None:  # no lifespan running: one runtime for this turn only
            from launcher._runtime import coach_runtime

            async with coach_runtime(self.config) as one_off:
                return _summary(await one_off.supervisor.run_turn(user, session, message))
        runtime.registry.reload()
        return _summary(await runtime.supervisor.run_turn(user, session, message))


def _summary(result: Any) -> TurnSummary:
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
