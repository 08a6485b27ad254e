"""Background pipeline turns of the session server: ``coach_turn`` starts one and returns at the first
reply; ``coach_synthesis`` waits (bounded) for the rest.

A turn runs as a task of :meth:`TurnJobs.lifespan`'s task group (the MCP server's lifespan), so it keeps
running after the ``coach_turn`` call has returned. The pipeline (:class:`PipelineRun`) reports the first
reply through ``on_reply`` (``launcher.pipeline.supervisor.Supervisor.run_turn``'s ``on_coach_reply``, see
``launcher.claude_code._hosted_pipeline``); the rest of the turn (specialists, Pineal, delivery) ends with a
:class:`TurnSummary`. Finished turns are kept in memory (the newest :data:`KEEP_FINISHED`); older ones
are read back from the blackboard's ``delivery`` entry by the tool.

Nothing here logs user text: only turn ids and outcomes.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

__all__ = ["KEEP_FINISHED", "EarlyReply", "PipelineRun", "TurnJob", "TurnJobs", "TurnSummary"]

log = logging.getLogger(__name__)

#: Finished turns kept in memory for ``coach_synthesis`` (older ones are read from the blackboard).
KEEP_FINISHED = 32


@dataclass(frozen=True)
class EarlyReply:
    """The first reply of a turn, the moment it exists.

    Attributes:
        turn: the blackboard turn id.
        coach_reply: what the user is shown first: the Coach's reply, a deterministic fallback reply, or the
            safety screen's support (tier 2) / crisis (tier 3) response.
        crisis_tier: the safety screen's tier 0-3 (``launcher.pipeline._screen``); 3: no agent runs, no synthesis.
    """

    turn: str
    coach_reply: str
    crisis_tier: int


@dataclass
class TurnSummary:
    """What a finished pipeline turn returns (a subset of ``launcher.pipeline.supervisor.TurnResult``).

    ``synthesis_source``: ``model`` | ``repaired`` | ``fallback`` | ``crisis``; ``agents``: per-agent
    status (``AgentStatus.to_json()`` by agent name; empty when the pipeline gives none); times in seconds
    from the turn's start."""

    turn: str
    coach_reply: str
    synthesis: str
    synthesis_source: str
    degraded: bool
    crisis_tier: int
    missing: list[str] = field(default_factory=list)
    coach_reply_s: float | None = None
    synthesis_s: float | None = None
    agents: dict[str, Any] = field(default_factory=dict)


class PipelineRun(Protocol):
    """Runs one turn: ``await run(user, session, message, on_reply=cb) -> TurnSummary``.

    ``on_reply(EarlyReply)`` is called at most once, as soon as the first reply exists (before the
    specialists are done); a pipeline that never calls it makes the summary's reply the first reply.
    ``on_stream`` (passed only when the caller streams the reply) is the turn's ``on_reply_stream``
    (``Supervisor.run_turn``: ``ReplyEvent`` delta / retract / end); a pipeline may ignore it.
    Raises any exception when the pipeline cannot run at all (bad configuration, no free port, the agent
    files invalid); agent failures inside a turn are reported in the summary, not raised.
    """

    def __call__(
        self,
        user: str,
        session: str,
        message: str,
        *,
        on_reply: Callable[[EarlyReply], None] | None = None,
        on_stream: Callable[[Any], None] | None = None,
    ) -> Awaitable[TurnSummary]: ...


class TurnJob:
    """One turn in flight or finished. ``reply`` is set at the first reply (or from the summary),
    ``summary`` when the turn finished, ``error`` when the pipeline raised; ``replied`` is set with the
    first of reply / finish / failure, ``done`` when the turn finished or failed."""

    def __init__(self, user: str, session: str) -> None:
        self.user = user
        self.session = session
        self.reply: EarlyReply | None = None
        self.summary: TurnSummary | None = None
        self.error: BaseException | None = None
        self.replied = anyio.Event()
        self.done = anyio.Event()

    @property
    def turn(self) -> str | None:
        return self.reply.turn if self.reply is not None else None


class TurnJobs:
    """Starts pipeline turns in the background and waits for them (see the module docstring).

    Args:
        run: the pipeline (:class:`PipelineRun`).
        keep: finished turns kept in memory (the newest).
        on_busy: called with True when the first turn starts running and False when none runs any more
            (the session server keeps the session from idle-closing meanwhile).
    """

    def __init__(
        self, run: PipelineRun, *, keep: int = KEEP_FINISHED, on_busy: Callable[[bool], None] | None = None
    ) -> None:
        self._run = run
        self._keep = keep
        self._on_busy = on_busy
        self._tg: TaskGroup | None = None
        self._jobs: OrderedDict[str, TurnJob] = OrderedDict()
        self._running = 0

    @property
    def busy(self) -> bool:
        """True while a turn runs."""
        return self._running > 0

    @contextlib.asynccontextmanager
    async def lifespan(self, server: Any = None) -> AsyncIterator[None]:
        """Host the background turns while the server runs; on exit the turns still running are
        cancelled (the server is going away with its pipeline)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    def get(self, turn: str) -> TurnJob | None:
        """The job of ``turn`` started by this server (None: unknown here or evicted)."""
        return self._jobs.get(turn)

    async def start(
        self, user: str, session: str, message: str, *, on_stream: Callable[[Any], None] | None = None
    ) -> TurnJob:
        """Start a turn and return its job once the first reply exists (``job.reply``; the turn goes on
        in the background). Without a running :meth:`lifespan` the turn runs to its end first.
        ``on_stream``: the reply as it is written (see :class:`PipelineRun`).

        Raises: whatever the pipeline raised before any reply (it could not run at all).
        """
        job = TurnJob(user, session)
        if self._tg is None:
            await self._run_job(job, message, on_stream)
        else:
            self._tg.start_soon(self._run_job, job, message, on_stream)
            await job.replied.wait()
        if job.reply is None:
            assert job.error is not None
            raise job.error
        return job

    async def wait(self, job: TurnJob, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for ``job`` to finish. Returns True when it finished (or
        failed: see ``job.error``), False on timeout (the turn goes on)."""
        with anyio.move_on_after(max(0.0, timeout_s)):
            await job.done.wait()
        return job.done.is_set()

    def _register(self, job: TurnJob, reply: EarlyReply) -> None:
        if job.reply is not None:
            return
        job.reply = reply
        self._jobs[reply.turn] = job
        self._evict()
        job.replied.set()

    def _evict(self) -> None:
        finished = [t for t, j in self._jobs.items() if j.done.is_set()]
        for turn in finished[: max(0, len(finished) - self._keep)]:
            del self._jobs[turn]

    async def _run_job(self, job: TurnJob, message: str, on_stream: Callable[[Any], None] | None) -> None:
        self._running += 1
        if self._running == 1 and self._on_busy is not None:
            self._on_busy(True)
        try:
            streamed: dict[str, Any] = {"on_stream": on_stream} if on_stream is not None else {}
            summary = await self._run(
                job.user, job.session, message, on_reply=lambda r: self._register(job, r), **streamed
            )
            job.summary = summary
            self._register(job, EarlyReply(summary.turn, summary.coach_reply, summary.crisis_tier))
            log.info(
                "turn %s done: source=%s degraded=%s reply_s=%s synthesis_s=%s",
                summary.turn,
                summary.synthesis_source,
                summary.degraded,
                summary.coach_reply_s,
                summary.synthesis_s,
            )
        except Exception as exc:  # reported to the caller of start (before a reply) or of coach_synthesis
            job.error = exc
            log.error("turn %s failed: %s", job.turn or "(not begun)", type(exc).__name__)
            log.debug("turn traceback", exc_info=True)
        finally:
            job.done.set()
            job.replied.set()
            self._running -= 1
            if self._running == 0 and self._on_busy is not None:
                self._on_busy(False)
            self._evict()
