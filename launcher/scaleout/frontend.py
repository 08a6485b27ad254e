"""Front ends of scale-out: publish a turn job and follow its row until the turn is done
(docs/scale-out.md).

:func:`submit` creates the job row in PostgreSQL (create-only, with the user's message) and then
publishes a message carrying only ids, with publisher confirms; submitting the same ``job_id`` again
creates nothing new (and re-publishes only while the job is still queued: the first publish may have
failed). :func:`follow` waits on the row (LISTEN/NOTIFY, re-read every half second): the Coach's
reply is reported once, as soon as the row has it, then the result document, exactly the JSON
``coach run --json`` prints in-process. The front end de-duplicates by job id: whatever the broker
redelivers, a job has one row, one reply and one result.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from blackboard._pg_jobs import Job, TurnJobs
from launcher.errors import LauncherError
from launcher.scaleout.broker import AmqpBroker, topology_of
from launcher.scaleout.jobs import JobMessage

__all__ = [
    "BrokerFrontend",
    "TurnJobFailed",
    "follow",
    "new_job_id",
    "run_turn_via_broker",
    "submit",
    "turn_result_from_doc",
]

#: Seconds after which a still-queued job prints a line saying no worker has taken it.
WAITING_NOTE_S = 30.0


class TurnJobFailed(LauncherError):
    """The job was marked failed (dead-lettered after the delivery limit) or did not finish in time."""


def new_job_id() -> str:
    return "j" + uuid.uuid4().hex


async def submit(
    jobs: TurnJobs, broker: Any, user: str, session: str, text: str, job_id: str | None = None
) -> Job:
    """Create the job row, then publish its message (confirmed). Returns the job as created (or found)."""
    job_id = job_id or new_job_id()
    job, created = await anyio.to_thread.run_sync(partial(jobs.create, job_id, user, session, text))
    if created or job.state == "queued":
        await broker.publish(JobMessage(job.job_id, user, session, job.seq))
    return job


async def follow(
    jobs: TurnJobs,
    job_id: str,
    *,
    on_reply: Callable[[str], None] | None = None,
    timeout_s: float = 1800.0,
    on_note: Callable[[str], None] | None = None,
    on_reply_job: Callable[[Job], None] | None = None,
) -> dict[str, Any]:
    """Wait for the job's result document; ``on_reply(text)`` (and ``on_reply_job(job)``, the row with its
    turn id) once, when the Coach's reply is recorded. Raises TurnJobFailed (failed, or not done within
    ``timeout_s``) and the store's StoreUnavailableError (PostgreSQL lost: the job runs on regardless)."""
    end = time.monotonic() + timeout_s
    start = time.monotonic()
    shown = False
    noted = False
    seen: float | None = None
    while True:
        job = await anyio.to_thread.run_sync(partial(jobs.wait, job_id, 1.0, seen=seen))
        if job is None:
            raise TurnJobFailed(f"turn job {job_id} does not exist in PostgreSQL ({jobs!r})")
        seen = job.updated_at
        if job.coach_reply is not None and not shown:
            shown = True
            if on_reply is not None:
                on_reply(job.coach_reply)
            if on_reply_job is not None:
                on_reply_job(job)
        if job.state == "done":
            doc: dict[str, Any] = json.loads(job.result or "{}")
            return doc
        if job.state == "failed":
            raise TurnJobFailed(
                f"turn job {job_id} failed: {job.error or 'no reason recorded'}. Nothing more will "
                "run for it; send the message again (a new job) once the cause is fixed"
            )
        if not noted and job.state == "queued" and time.monotonic() - start > WAITING_NOTE_S and on_note:
            noted = True
            on_note(
                f"waiting: no worker has taken turn job {job_id} for {WAITING_NOTE_S:.0f} s. Is a `coach worker` "
                "running with the same [broker] url, [broker] prefix and [data] url (and schema)?"
            )
        if time.monotonic() > end:
            raise TurnJobFailed(
                f"turn job {job_id} did not finish within {timeout_s:.0f} s (state {job.state}); "
                "it stays queued: follow it again with the same --job-id"
            )


def turn_result_from_doc(doc: dict[str, Any]) -> Any:
    """A ``TurnResult`` equal to the one whose ``to_json()`` gave ``doc`` (for the text output)."""
    from launcher.pipeline._turn_status import AgentStatus, TurnResult

    agents = {name: AgentStatus(**a) for name, a in (doc.get("agents") or {}).items()}
    return TurnResult(
        turn_id=doc["turn_id"],
        coach_reply=doc.get("coach_reply", ""),
        synthesis=doc.get("synthesis", ""),
        synthesis_source=doc.get("synthesis_source", "none"),
        degraded=bool(doc.get("degraded")),
        crisis_tier=int(doc.get("crisis_tier", 0)),
        missing=list(doc.get("missing", [])),
        agents=agents,
        coach_fallback=bool(doc.get("coach_fallback")),
        coach_reply_s=doc.get("coach_reply_s"),
        synthesis_s=doc.get("synthesis_s"),
        safety_raises=list(doc.get("safety_raises", [])),
        safety_refused=list(doc.get("safety_refused", [])),
    )


class BrokerFrontend:
    """A front end's connection to scale-out: the job rows (PostgreSQL) and the broker (RabbitMQ), opened
    once and used for many turns (``coach chat --broker``, the Claude Code session mode, ``coach run
    --broker``).

    Args:
        config: the ``CoachConfig`` (``[data] url`` / ``schema``, ``[broker] prefix`` / ``delivery_limit``).
        broker_url: the RabbitMQ URL (``--broker`` or ``[broker] url``).
    """

    def __init__(self, config: Any, broker_url: str) -> None:
        self.config = config
        self.broker_url = broker_url
        self.jobs: TurnJobs | None = None
        self.broker = AmqpBroker(
            broker_url,
            topology_of(config),
            name="coach front end",
        )

    async def open(self, *, check_broker: bool = True) -> BrokerFrontend:
        """Open the job rows and (``check_broker``) connect to RabbitMQ now. Raises StackError (no
        ``[data] url``), the store's StoreUnavailableError (PostgreSQL unreachable: which server, how to
        start it) and BrokerError (RabbitMQ unreachable: which URL, how to start it)."""
        from launcher.errors import StackError

        if not self.config.data.url:
            raise StackError(
                "--broker needs the PostgreSQL blackboard the workers use: set [data] url or "
                "COACH_DATABASE_URL (docs/postgresql.md)"
            )
        if self.jobs is None:
            url, schema = self.config.data.url, self.config.data.db_schema
            self.jobs = await anyio.to_thread.run_sync(lambda: TurnJobs(url, schema=schema))
        if check_broker:
            await self.broker.check()
        return self

    def _rows(self) -> TurnJobs:
        if self.jobs is None:
            raise RuntimeError("BrokerFrontend.open() first")
        return self.jobs

    async def submit(self, user: str, session: str, text: str, job_id: str | None = None) -> Job:
        """:func:`submit` on this front end's rows and broker (the same ``job_id`` again: no second job)."""
        return await submit(self._rows(), self.broker, user, session, text, job_id)

    async def follow(
        self,
        job_id: str,
        *,
        on_reply: Callable[[str], None] | None = None,
        on_reply_job: Callable[[Job], None] | None = None,
        on_note: Callable[[str], None] | None = None,
        timeout_s: float = 1800.0,
    ) -> dict[str, Any]:
        """:func:`follow` on this front end's rows."""
        return await follow(
            self._rows(),
            job_id,
            on_reply=on_reply,
            on_reply_job=on_reply_job,
            on_note=on_note,
            timeout_s=timeout_s,
        )

    async def close(self) -> None:
        await self.broker.close()
        if self.jobs is not None:
            self.jobs.close()
            self.jobs = None


async def run_turn_via_broker(
    config: Any,
    broker_url: str,
    user: str,
    session: str,
    text: str,
    *,
    on_reply: Callable[[str], None] | None = None,
    job_id: str | None = None,
    on_note: Callable[[str], None] | None = None,
    timeout_s: float = 1800.0,
) -> Any:
    """``coach run --broker``: submit, follow, and return the ``TurnResult`` (from the job's document)."""
    front = BrokerFrontend(config, broker_url)
    try:
        await front.open(check_broker=False)
        job = await front.submit(user, session, text, job_id)
        await front.broker.close()
        doc = await front.follow(job.job_id, on_reply=on_reply, on_note=on_note, timeout_s=timeout_s)
        return turn_result_from_doc(doc)
    finally:
        await front.close()
