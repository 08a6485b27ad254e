"""``coach_turn`` on the broker (:class:`BrokerPipeline`): with ``[broker] url`` set, the session mode is a
scale-out front end like ``coach chat --broker`` (docs/scale-out.md). Each turn is published as a job and
followed; a ``coach worker`` runs it. The first reply reaches ``coach_turn`` the moment the worker records
it in the job row (with the job's turn id, and the safety tier the worker's supervisor wrote in the turn's
``message`` entry on the shared blackboard); the rest ends as a :class:`TurnSummary` built from the
job's result document, the one ``coach run --json`` prints.

The front end itself (job rows in PostgreSQL, RabbitMQ) is handed in (``launcher.scaleout.frontend.
BrokerFrontend``, by ``coach mcp``): this package does not import ``launcher.scaleout`` (docs/layout.md).
No agent process runs here.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from launcher.claude_code._turn_jobs import EarlyReply, TurnSummary

__all__ = ["BrokerPipeline", "summary_from_doc"]

log = logging.getLogger("mcp_server")


def summary_from_doc(doc: dict[str, Any]) -> TurnSummary:
    """The :class:`TurnSummary` of a job's result document (``TurnResult.to_json()``)."""
    return TurnSummary(
        turn=str(doc["turn_id"]),
        coach_reply=str(doc.get("coach_reply", "")),
        synthesis=str(doc.get("synthesis", "")),
        synthesis_source=str(doc.get("synthesis_source", "none")),
        degraded=bool(doc.get("degraded")),
        crisis_tier=int(doc.get("crisis_tier", 0)),
        missing=list(doc.get("missing", [])),
        coach_reply_s=doc.get("coach_reply_s"),
        synthesis_s=doc.get("synthesis_s"),
        agents=dict(doc.get("agents") or {}),
    )


def _tier(board: Any, user: str, session: str, turn: str) -> int:
    try:
        entry = board.read_turn(user, session, turn).get("message")
    except Exception:  # the tier only labels the reply; the summary has it again
        return 0
    tier = entry.value.get("crisis_tier") if entry is not None else None
    return int(tier) if isinstance(tier, int) else 0


class BrokerPipeline:
    """A ``PipelineRun`` that publishes and follows turn jobs (see the module docstring).

    Args:
        board: the shared (PostgreSQL) blackboard the workers write.
        front: a ``launcher.scaleout.frontend.BrokerFrontend`` (``open``, ``submit``, ``follow``, ``close``).

    Raises (from a call): the front end's errors (``BrokerError``: RabbitMQ unreachable; the store's
    ``StoreUnavailableError``: PostgreSQL unreachable; ``TurnJobFailed``: the job was dead-lettered).
    """

    def __init__(self, board: Any, front: Any) -> None:
        self.board = board
        self.front = front
        self._opened = False

    async def _open(self) -> None:
        if not self._opened:
            await self.front.open()
            self._opened = True

    @contextlib.asynccontextmanager
    async def lifespan(self, server: Any = None) -> AsyncIterator[None]:
        """Keep the front end's connections for the server's lifetime (opened at the first turn)."""
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.front.close()
            self._opened = False

    async def __call__(
        self,
        user: str,
        session: str,
        message: str,
        *,
        on_reply: Callable[[EarlyReply], None] | None = None,
        on_stream: Callable[[Any], None] | None = None,
    ) -> TurnSummary:
        """One turn through the broker. ``on_stream`` is ignored: a worker runs the Coach, and the
        reply reaches this process whole (nothing streams on the broker path)."""
        await self._open()
        job = await self.front.submit(user, session, message)
        rows: list[Any] = []
        got = anyio.Event()

        async def announce() -> None:  # the tier is read off the event loop, then the reply passed on
            await got.wait()
            if rows and on_reply is not None and rows[0].turn_id:
                row = rows[0]
                tier = await anyio.to_thread.run_sync(partial(_tier, self.board, user, session, row.turn_id))
                on_reply(EarlyReply(turn=row.turn_id, coach_reply=row.coach_reply, crisis_tier=tier))

        def seen(row: Any) -> None:
            rows.append(row)
            got.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(announce)
            try:
                doc = await self.front.follow(job.job_id, on_reply_job=seen)
            finally:
                got.set()
        log.info("session mode: job %s done as turn %s", job.job_id, doc.get("turn_id"))
        return summary_from_doc(doc)

    async def close_session(self, board: Any, user: str, session: str) -> Any:
        """Close ``session`` on the shared blackboard (compaction into the profile); the worker holding
        its warm agent processes lets them go when its lease lapses."""
        from launcher.pipeline.sessions import close_session

        return await close_session(board, user, session)
