"""``coach worker``'s core: consume turn jobs, run them with the Supervisor, PostgreSQL holding the truth
(docs/scale-out.md).

How one job message is handled (:meth:`Worker.on_job`):

1. Read the job row. A terminal job (``done``/``failed``) is acknowledged at once: a duplicate.
2. Take the session's lease (:class:`blackboard._pg_lease.Leases`, compare-and-swap with an epoch). If
   another live worker holds it, send that worker a hint (its own queue) and wait, holding the
   message unacknowledged, until the job is terminal (then ack) or the lease lapses (the holder died:
   take it over). The hint is re-sent every few seconds while the job waits.
3. Holding the lease: run the session's jobs that are not terminal, oldest first, up to this one
   (:meth:`Worker.drain`; a session's turns run in the order they were submitted). Each is claimed
   (``running``, attempts + 1, under the epoch), run with ``Supervisor.run_turn(hooks=...)``, which
   resumes the blackboard turn a previous attempt began and runs only the agents whose entries are
   missing, the Coach's reply is recorded in the row the moment it exists, and the row is marked
   ``done`` with the result document. Every row update is refused by the database when the epoch is
   stale, and the lease is checked before each agent's dispatch.
4. Acknowledge only then: the turn's state is durable before the broker forgets the message.

A hint (:meth:`Worker.on_hint`) runs step 3 for its session when this worker holds the lease.

Attempts, not deliveries, decide when a turn is given up. RabbitMQ counts a delivery every time a
message goes back to the queue, also when a connection dropped while the job was only *waiting* for its
session's holder (step 2), so its ``x-delivery-limit`` alone would dead-letter a job no worker ever
crashed on. The job row counts real attempts instead (``attempts``: one per claim, i.e. per start of
the turn). A dead-lettered message (:meth:`Worker.on_dead`) whose job was started at most
``delivery_limit`` times is published again (``requeues`` + 1, at most :data:`MAX_REQUEUES` times); one
started more often is marked ``failed`` once nobody holds its session. A job already started more than
``delivery_limit`` times is failed instead of started again, whichever message or hint led to it
(:meth:`Worker.run_job`; a session's older job can be run on a younger job's delivery).

Leases are renewed every ``ttl/3`` while this worker keeps the session's processes warm (at most
``capacity`` sessions; the least recently used beyond that is released), so a session's next turns
come back here; a worker that dies stops renewing and its sessions are taken over after ``ttl``.

Test hook: ``COACH_WORKER_CRASH_ON=<job id>`` makes the worker ``os._exit(70)`` right after claiming
that job (a poison turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from blackboard._pg_jobs import Job, TurnJobs
from blackboard._pg_lease import Lease, Leases, StaleLeaseError
from launcher.scaleout.broker import AmqpBroker, ack
from launcher.scaleout.hooks import TurnHooks
from launcher.scaleout.jobs import JobMessage

__all__ = ["CRASH_ENV", "Worker", "WorkerStats", "new_worker_id", "result_from_board"]

log = logging.getLogger(__name__)

CRASH_ENV = "COACH_WORKER_CRASH_ON"
#: Seconds between re-sent hints while a job waits for its session's holder.
HINT_EVERY_S = 5.0
#: A dead-lettered job whose row has not changed for this long is failed even if its session is held.
STUCK_S = 600.0
#: Times a dead-lettered job that was not really attempted often is put back on the queue before it is
#: failed anyway (a bound on a job that keeps being dead-lettered without being started, e.g. a worker
#: that dies before it claims the job).
MAX_REQUEUES = 10


def new_worker_id() -> str:
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname())[:24] or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass
class WorkerStats:
    """What ``/metrics`` reports."""

    turns_done: int = 0
    turns_failed: int = 0
    turns_resumed: int = 0
    duplicates_acked: int = 0
    stale_refused: int = 0
    hints_sent: int = 0
    requeued: int = 0
    running: int = 0
    latencies: list[float] = field(default_factory=list)

    def observe(self, seconds: float) -> None:
        self.latencies.append(seconds)
        del self.latencies[:-1000]


def result_from_board(board: Any, job: Job) -> dict[str, Any] | None:
    """The result document of a job whose turn finished on the board (its ``delivery`` is written) but
    whose row was not marked done (the worker died in between); None when the turn is not finished."""
    if not job.turn_id:
        return None
    entries = board.read_turn(job.user, job.session, job.turn_id)
    delivery = entries.get("delivery")
    if delivery is None:
        return None
    d = delivery.value
    meta = entries.get("meta")
    record = entries.get("record")
    rv = record.value if record is not None else {}
    return {
        "turn_id": job.turn_id,
        "coach_reply": d.get("coach_reply", ""),
        "synthesis": d.get("synthesis", ""),
        "degraded": bool(d.get("degraded")),
        "crisis_tier": int(rv.get("crisis_tier", meta.value.get("crisis_tier", 0) if meta else 0)),
        "missing": list(d.get("missing", [])),
        "synthesis_source": d.get("synthesis_source", "none"),
        "safety_raises": list(rv.get("safety_raises", [])),
        "safety_refused": list(rv.get("safety_refused", [])),
        "coach_fallback": False,
        "coach_reply_s": None,
        "synthesis_s": None,
        "agents": dict(d.get("agents", {})),
    }


class Worker:
    """Runs turn jobs (see the module docstring).

    Args:
        supervisor: the Supervisor (its board must be the PostgreSQL blackboard of ``jobs``).
        jobs / leases: the job rows and session leases (same schema).
        broker: the :class:`AmqpBroker`.
        capacity: sessions this worker keeps warm and runs at once (the broker prefetch too).
        worker_id: this worker's id (unique per process).
    """

    def __init__(
        self,
        supervisor: Any,
        jobs: TurnJobs,
        leases: Leases,
        broker: AmqpBroker,
        *,
        capacity: int = 1,
        worker_id: str | None = None,
        close_session: Callable[[str, str], Any] | None = None,
    ) -> None:
        self.supervisor = supervisor
        self.board = supervisor.board
        self.jobs = jobs
        self.leases = leases
        self.broker = broker
        self.capacity = max(1, int(capacity))
        self.worker_id = worker_id or new_worker_id()
        self.stats = WorkerStats()
        self._held: OrderedDict[tuple[str, str], Lease] = OrderedDict()
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        self._slots = anyio.Semaphore(self.capacity)
        self._close_session = close_session
        self._crash_on = os.environ.get(CRASH_ENV) or None
        self.draining = False

    # -- PostgreSQL, off the event loop ----------------------------------------------------------------
    async def _db(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await anyio.to_thread.run_sync(partial(fn, *args, **kw))

    @property
    def sessions_held(self) -> int:
        return len(self._held)

    # -- leases ------------------------------------------------------------------------------------------
    async def _take(self, user: str, session: str) -> Lease | None:
        lease = await self._db(self.leases.acquire, user, session, self.worker_id)
        if lease is None:
            return None
        key = (user, session)
        prev = self._held.get(key)
        if prev is not None and prev.epoch != lease.epoch:
            log.info(
                "session %s/%s: lease re-taken under epoch %d (was %d)",
                user,
                session,
                lease.epoch,
                prev.epoch,
            )
        self._held[key] = lease
        self._held.move_to_end(key)
        await self._evict()
        return lease

    async def _evict(self) -> None:
        """Release the least recently used sessions beyond capacity that are not running a turn."""
        while len(self._held) > self.capacity:
            victim = next((k for k in self._held if not self._lock(k).locked()), None)
            if victim is None:
                return
            lease = self._held.pop(victim)
            with contextlib.suppress(Exception):
                await self._db(self.leases.release, lease)
            if self._close_session is not None:
                with contextlib.suppress(Exception):
                    await self._close_session(*victim)

    def _lock(self, key: tuple[str, str]) -> anyio.Lock:
        return self._locks.setdefault(key, anyio.Lock())

    async def renew_forever(self) -> None:
        """Renew every held lease and this worker's heartbeat every ttl/3; a lease that could not be
        renewed is dropped (another worker may take the session)."""
        every = max(0.2, self.leases.ttl_s / 3)
        while True:
            for key, lease in list(self._held.items()):
                try:
                    renewed = await self._db(self.leases.renew, lease)
                except Exception as exc:
                    log.warning("renewing the lease of %s/%s failed: %s", *key, exc)
                    continue
                if renewed is None:
                    log.warning("lost the lease of session %s/%s (epoch %d)", key[0], key[1], lease.epoch)
                    if self._held.get(key) == lease:
                        del self._held[key]
                elif self._held.get(key, None) is not None and self._held[key].epoch == lease.epoch:
                    self._held[key] = renewed
            with contextlib.suppress(Exception):
                await self._db(
                    self.jobs.heartbeat, self.worker_id, socket.gethostname(), os.getpid(), self.capacity
                )
            await anyio.sleep(every)

    async def release_all(self) -> None:
        for lease in list(self._held.values()):
            with contextlib.suppress(Exception):
                await self._db(self.leases.release, lease)
        self._held.clear()

    # -- handlers ----------------------------------------------------------------------------------------
    async def on_job(self, msg: JobMessage, incoming: Any) -> None:
        """A job from the shared queue; acknowledged only once its row is terminal."""
        redelivered = bool(getattr(incoming, "redelivered", False))
        last_hint = 0.0
        while True:
            job = await self._db(self.jobs.get, msg.job_id)
            if job is None:
                log.warning("job %s has no row in PostgreSQL; dropping its message", msg.job_id)
                await ack(incoming)
                return
            if job.terminal:
                if redelivered or job.attempts:
                    self.stats.duplicates_acked += 1
                await ack(incoming)
                return
            lease = await self._take(job.user, job.session)
            if lease is not None:
                await self.drain(job.user, job.session, job.seq, lease)
                continue  # re-read: terminal now, unless the lease went stale meanwhile
            holder = await self._db(self.leases.holder, job.user, job.session)
            if (
                holder is not None
                and holder.worker_id != self.worker_id
                and time.monotonic() - last_hint > HINT_EVERY_S
            ):
                last_hint = time.monotonic()
                with contextlib.suppress(Exception):
                    if await self.broker.hint(holder.worker_id, msg):
                        self.stats.hints_sent += 1
            await self._db(self.jobs.wait, job.job_id, min(2.0, self.leases.ttl_s / 2), seen=job.updated_at)

    async def on_hint(self, msg: JobMessage, incoming: Any) -> None:
        """A hint: a job of a session this worker holds is waiting on another worker."""
        await ack(incoming)  # disposable: the waiting worker re-sends it
        key = (msg.user, msg.session)
        if key not in self._held:
            return
        lease = await self._take(msg.user, msg.session)
        if lease is not None:
            await self.drain(msg.user, msg.session, msg.seq, lease)

    async def on_dead(self, msg: JobMessage, incoming: Any) -> None:
        """A dead-lettered job (see the module docstring): put back on the queue when it was started at
        most ``delivery_limit`` times, else marked failed once nobody is working on it."""
        limit = self.broker.topology.delivery_limit
        last_change: tuple[float, float] | None = None
        while True:
            job = await self._db(self.jobs.get, msg.job_id)
            if job is None or job.terminal:
                await ack(incoming)
                return
            if job.attempts <= limit and msg.requeues < MAX_REQUEUES:
                again = JobMessage(job.job_id, job.user, job.session, job.seq, requeues=msg.requeues + 1)
                await self.broker.publish(again)  # before the ack: a lost ack only duplicates the message
                self.stats.requeued += 1
                log.warning(
                    "job %s was dead-lettered after %d real attempts (limit %d: the other deliveries were "
                    "returned without a start, e.g. dropped connections); queued again (%d of %d)",
                    job.job_id,
                    job.attempts,
                    limit,
                    again.requeues,
                    MAX_REQUEUES,
                )
                await ack(incoming)
                return
            if last_change is None or last_change[0] != job.updated_at:
                last_change = (job.updated_at, time.monotonic())
            stuck = time.monotonic() - last_change[1] > STUCK_S  # held, but nothing happens to it
            holder = await self._db(self.leases.holder, job.user, job.session)
            if holder is None or stuck or job.state == "queued" or holder.worker_id != job.worker_id:
                await self._fail(job, _dead_reason(job.attempts, limit, msg.requeues))
                await ack(incoming)
                return
            # its session is held by a live worker that may still finish it: look again later
            await self._db(self.jobs.wait, job.job_id, min(2.0, self.leases.ttl_s / 2), seen=job.updated_at)

    async def _fail(self, job: Job, why: str) -> None:
        if await self._db(self.jobs.fail, job.job_id, why):
            self.stats.turns_failed += 1
            log.error("job %s of session %s/%s failed: %s", job.job_id, job.user, job.session, why)

    # -- running -----------------------------------------------------------------------------------------
    async def drain(self, user: str, session: str, upto_seq: int, lease: Lease) -> None:
        """Run the session's non-terminal jobs up to ``upto_seq``, oldest first, under ``lease``."""
        async with self._lock((user, session)), self._slots:
            while True:
                current = self._held.get((user, session))
                if current is None or current.epoch != lease.epoch:
                    return  # lost meanwhile
                pending = await self._db(self.jobs.pending, user, session, upto_seq)
                if not pending:
                    return
                try:
                    await self.run_job(pending[0], current)
                except StaleLeaseError as exc:
                    self.stats.stale_refused += 1
                    log.warning("stopped session %s/%s: %s", user, session, exc)
                    self._held.pop((user, session), None)
                    return
                except Exception:
                    # not the turn's agents (they never raise): let the session go, so the job's next delivery
                    # can run anywhere and the delivery limit applies
                    self._held.pop((user, session), None)
                    with contextlib.suppress(Exception):
                        await self._db(self.leases.release, current)
                    raise

    async def run_job(self, job: Job, lease: Lease) -> None:
        limit = self.broker.topology.delivery_limit
        if job.attempts > limit:  # started that often and never finished: not started again
            await self._fail(job, _dead_reason(job.attempts, limit, 0))
            return
        claimed = await self._db(self.jobs.claim, job.job_id, lease)
        if claimed.terminal:
            return
        if self._crash_on and claimed.job_id == self._crash_on:
            log.error("%s=%s: crashing on purpose", CRASH_ENV, claimed.job_id)
            os._exit(70)
        t0 = time.monotonic()
        self.stats.running += 1
        try:
            if claimed.attempts > 1:
                self.stats.turns_resumed += 1
                log.info(
                    "job %s: attempt %d (resuming turn %s)", claimed.job_id, claimed.attempts, claimed.turn_id
                )
            finished = await self._db(result_from_board, self.board, claimed)
            if finished is not None:  # the turn ended on the board, the row was not marked: mark it
                await self._finish(claimed, lease, finished)
                return
            text = await self._db(self.jobs.message, claimed.job_id)
            if text is None:
                raise StaleLeaseError(f"job {claimed.job_id} vanished")
            replies: list[Any] = []

            async def on_begun(turn: str) -> str:
                return str(await self._db(self.jobs.set_turn, claimed.job_id, lease, turn))

            async def before_dispatch(agent: str) -> None:
                if not await self._db(self.leases.check, lease):
                    await self._db(self.leases.refused, lease, f"dispatch {agent}", claimed.job_id)
                    raise StaleLeaseError(
                        f"lease of {job.user}/{job.session} epoch {lease.epoch} is stale: "
                        f"{agent} of job {claimed.job_id} not started"
                    )

            loop = asyncio.get_running_loop()

            def on_reply(reply: str) -> None:
                fut = loop.run_in_executor(None, self.jobs.record_coach_reply, claimed.job_id, lease, reply)
                replies.append(fut)

            hooks = TurnHooks(resume_turn=claimed.turn_id, on_begun=on_begun, before_dispatch=before_dispatch)
            try:
                result = await self.supervisor.run_turn(
                    job.user, job.session, text, on_coach_reply=on_reply, hooks=hooks
                )
            except BaseException as exc:
                for fut in replies:  # not awaited now: their errors (a stale lease) are this one's
                    fut.add_done_callback(_retrieve)
                stale = _find(exc, StaleLeaseError)
                if stale is not None:
                    raise stale from None
                raise
            for fut in replies:
                with contextlib.suppress(StaleLeaseError):
                    await fut
            await self._finish(claimed, lease, result.to_json())
            self.stats.observe(time.monotonic() - t0)
        finally:
            self.stats.running -= 1

    async def _finish(self, job: Job, lease: Lease, doc: dict[str, Any]) -> None:
        if not await self._db(self.leases.check, lease):
            await self._db(self.leases.refused, lease, "finish (checked)", job.job_id)
            raise StaleLeaseError(
                f"lease of {job.user}/{job.session} epoch {lease.epoch} is stale: job "
                f"{job.job_id} not marked done"
            )
        now = await self._db(self.jobs.get, job.job_id)
        if now is not None and now.coach_reply is not None:
            doc = {**doc, "coach_reply": now.coach_reply}  # the reply the user was shown first stays
        done = await self._db(
            self.jobs.finish,
            job.job_id,
            lease,
            result=json.dumps(doc, ensure_ascii=False),
            coach_reply=str(doc.get("coach_reply", "")),
            synthesis=str(doc.get("synthesis", "")),
        )
        if done is not None:
            self.stats.turns_done += 1
            log.info(
                "job %s done: turn %s of %s/%s (epoch %d)",
                job.job_id,
                doc.get("turn_id"),
                job.user,
                job.session,
                lease.epoch,
            )

    async def run(self, *, ready: Callable[[], None] | None = None) -> None:
        """Consume until cancelled."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.renew_forever)
            tg.start_soon(
                partial(
                    self.broker.consume_forever,
                    worker_id=self.worker_id,
                    prefetch=self.capacity,
                    on_job=self.on_job,
                    on_hint=self.on_hint,
                    on_dead=self.on_dead,
                )
            )
            if ready is not None:
                await self.broker.connected.wait()
                ready()


def _dead_reason(attempts: int, limit: int, requeues: int) -> str:
    if attempts <= limit:
        return (
            f"dead-lettered by RabbitMQ {requeues + 1} times without being started more than {limit} times "
            f"(started {attempts}); given up after {MAX_REQUEUES} requeues"
        )
    return (
        f"dead-lettered after {attempts} attempts ([broker] delivery_limit {limit}): every worker that "
        "started it stopped before finishing it"
    )


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Mark a finished reply record's exception as retrieved (asyncio logs "Future exception was never
    retrieved" with a traceback otherwise): a stale lease is the turn's own error, already reported; any
    other is logged by its type (never its text, which may quote the reply)."""
    if fut.cancelled():
        return
    exc = fut.exception()
    if exc is not None and not isinstance(exc, StaleLeaseError):
        log.warning("recording the Coach's reply failed too (%s)", type(exc).__name__)


def _find(exc: BaseException, kind: type[BaseException]) -> Any:
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()) or ():
        got = _find(inner, kind)
        if got is not None:
            return got
    return None
