"""The real pipeline behind ``coach_turn`` (:class:`HostedPipeline`): ``launcher.pipeline._runtime.coach_runtime``
and :meth:`launcher.pipeline.supervisor.Supervisor.run_turn`, exactly what ``coach run`` uses, kept running for the
session server's lifetime.

The first reply reaches the caller through the supervisor's ``on_coach_reply`` callback (the one ``coach
chat`` / ``coach demo`` / ``coach replay`` print from): the moment it fires, the turn's ``message`` entry
(written by the supervisor when the turn began, with the safety screen's ``crisis_tier``) names the turn
id, and ``on_reply(EarlyReply)`` is called while the specialists go on.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus

from blackboard import session_key
from launcher.claude_code._turn_jobs import EarlyReply, TurnSummary

__all__ = ["HostedPipeline", "message_turn"]

log = logging.getLogger(__name__)


def message_turn(store: Any, user: str, session: str, message: str) -> tuple[str, int] | None:
    """The newest turn of the session whose supervisor-written ``message`` entry holds ``message``, as
    ``(turn id, crisis_tier)`` (turn order: the ``meta`` entry's ``index``); None when there is none.
    Turns of one session run one at a time in the supervisor, so this is the running turn."""
    prefix = session_key(user, session) + "/turns/"
    index: dict[str, int] = {}
    found: dict[str, int] = {}
    for entry in store.list(prefix):
        turn, _, kind = entry.key[len(prefix) :].partition("/")
        if kind == "meta" and isinstance(entry.value.get("index"), int):
            index[turn] = int(entry.value["index"])
        elif kind == "message" and entry.author == "supervisor" and entry.value.get("text") == message:
            tier = entry.value.get("crisis_tier")
            found[turn] = int(tier) if isinstance(tier, int) else 0
    if not found:
        return None
    turn = max(found, key=lambda t: (index.get(t, -1), t))
    return turn, found[turn]


class HostedPipeline:
    """The real pipeline (``launcher.claude_code._turn_jobs.PipelineRun``): ``launcher.pipeline._runtime.coach_runtime``
    (blackboard, agent registry, in-process proxy and signed HTTP MCP server, agent runner, supervisor),
    kept running for the session server's lifetime so the agents' Claude Code processes stay warm
    between turns (``[agents] warm_process_limit``; about 235 MiB each).

    Use :meth:`lifespan` as (part of) the MCP server's lifespan: the runtime starts on the first turn, in
    a task owned by the lifespan, and stops (every agent process with it) when the server shuts down.
    Without a running lifespan each call starts and stops its own runtime. Agent files are re-read
    before every turn (an invalid edit keeps the previous version; see ``launcher.agents.AgentRegistry``).

    Args:
        config: a ``launcher.config.CoachConfig`` (upstream, proxy, MCP, safety, agents, data dir).
        runtime: ``runtime(config)`` -> async context manager yielding the runtime (``board``,
            ``registry``, ``runner``, ``supervisor``); default ``launcher.pipeline._runtime.coach_runtime`` (tests
            pass one with a fake agent runner).

    Raises (from a call): ``launcher.agents.AgentSpecError`` (invalid agent files),
    ``launcher.errors.StackError`` (a server could not start), ``blackboard`` errors (store unusable,
    ``SessionClosedError``).
    """

    def __init__(
        self, config: Any, *, runtime: Callable[[Any], AbstractAsyncContextManager[Any]] | None = None
    ) -> None:
        self.config = config
        self._factory = runtime
        self._tg: TaskGroup | None = None
        self._runtime: Any = None
        self._stop = anyio.Event()
        self._starting = anyio.Lock()
        #: ``() -> (user, session)`` of the session to prewarm when the server starts (None: none)
        self.prewarm_for: Callable[[], tuple[str, str]] | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, server: Any = None) -> AsyncIterator[None]:
        """Host the runtime while the server runs (``MCPServer(lifespan=pipeline.lifespan)``)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self.prewarm_for is not None:
                tg.start_soon(self._prewarm, self.prewarm_for)
            try:
                yield
            finally:
                self._tg = None
                self._stop.set()

    async def _prewarm(self, target: Callable[[], tuple[str, str]]) -> None:
        """Start the runtime and the session's agent processes now, while the person works on in Claude
        Code, so the first ``/coach`` turn starts like a warm one (``Supervisor.prewarm``: only free warm
        slots, at most two starting at once, the safety screen's one-time cost paid first). Never
        raises: a runtime that cannot start is started again, and its error reported, by the first turn."""
        try:
            runtime = await self._ensure()
            if runtime is None:
                return
            user, session = await anyio.to_thread.run_sync(target)
            started = await runtime.supervisor.prewarm(user, session)
            log.info("session mode: %d agent processes prewarmed", len(started))
        except Exception as exc:  # the first turn tries again and reports it
            log.warning("session mode: prewarm failed (%s)", type(exc).__name__)

    def _open_runtime(self) -> AbstractAsyncContextManager[Any]:
        if self._factory is not None:
            return self._factory(self.config)
        from launcher.pipeline._runtime import coach_runtime

        return coach_runtime(self.config)

    async def _host(self, *, task_status: TaskStatus[Any] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            async with self._open_runtime() as runtime:
                started = True
                task_status.started(runtime)
                await self._stop.wait()
        except Exception:
            if not started:
                raise  # reaches the caller of tg.start (the turn that tried to start it)
            log.error(
                "the pipeline runtime stopped with an error; the next turn starts a new one", exc_info=True
            )
        finally:
            self._runtime = None

    async def _ensure(self) -> Any:
        async with self._starting:
            if self._runtime is None and self._tg is not None:
                self._runtime = await self._tg.start(self._host)
            return self._runtime

    async def __call__(
        self,
        user: str,
        session: str,
        message: str,
        *,
        on_reply: Callable[[EarlyReply], None] | None = None,
        on_stream: Callable[[Any], None] | None = None,
    ) -> TurnSummary:
        """One turn; ``on_stream`` is passed to ``Supervisor.run_turn(on_reply_stream=...)``."""
        runtime = await self._ensure()
        if runtime is None:  # no lifespan running: one runtime for this turn only
            async with self._open_runtime() as one_off:
                return await _run(one_off, user, session, message, on_reply, on_stream)
        runtime.registry.reload()
        return await _run(runtime, user, session, message, on_reply, on_stream)

    async def close_session(self, board: Any, user: str, session: str) -> Any:
        """Close ``session`` (``launcher.pipeline.sessions.close_session``: compaction into the profile) and stop its
        warm agent processes when the runtime is up. Returns the ``CloseResult``; raises ``SessionError``."""
        from launcher.pipeline.sessions import close_session

        runner = self._runtime.runner if self._runtime is not None else None
        return await close_session(board, user, session, runner=runner)


async def _run(
    runtime: Any,
    user: str,
    session: str,
    message: str,
    on_reply: Callable[[EarlyReply], None] | None,
    on_stream: Callable[[Any], None] | None = None,
) -> TurnSummary:
    """One ``Supervisor.run_turn``; ``on_reply`` gets the first reply (from ``on_coach_reply``) with the
    turn id and crisis tier of the turn's ``message`` entry, while the turn goes on."""
    texts: list[str] = []
    replied = anyio.Event()

    def on_coach_reply(text: str) -> None:
        texts.append(text)
        replied.set()

    async def announce() -> None:
        await replied.wait()
        if not texts or on_reply is None:
            return
        found = await anyio.to_thread.run_sync(
            partial(message_turn, runtime.board.store, user, session, message)
        )
        if found is None:  # cannot name the turn: the caller gets the reply with the whole result
            log.warning("first reply of a turn of session %s: its message entry was not found", session)
            return
        on_reply(EarlyReply(turn=found[0], coach_reply=texts[0], crisis_tier=found[1]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        try:
            result = await runtime.supervisor.run_turn(
                user, session, message, on_coach_reply=on_coach_reply, on_reply_stream=on_stream
            )
        except BaseException:
            tg.cancel_scope.cancel()
            raise
        replied.set()
    return _summary(result)


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
        agents={name: status.to_json() for name, status in result.agents.items()},
    )
