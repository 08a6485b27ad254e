"""Turn jobs in PostgreSQL: the truth about every turn run by ``coach worker`` (docs/scale-out.md).

A front end creates the job row (create-only: ``INSERT ... ON CONFLICT DO NOTHING``, so submitting the
same job id twice makes one job) with the user's message, then publishes a broker message that carries
only ids. The row then moves ``queued -> running -> done`` (or ``failed``, set by the dead-letter
consumer once the broker gave up on the job). Every update a worker makes is guarded by the session's
lease (:mod:`blackboard._pg_lease`): ``... AND EXISTS (a lease row with this worker_id and epoch, not
expired)`` in the same statement, so a worker whose lease went stale has its write refused by the
database; the refusal is logged (``stale_refusals``) and :class:`~blackboard._pg_lease.StaleLeaseError`
raised. The Coach's reply is recorded once (``coach_reply IS NULL``) and the result once (``state =
'running'``): a redelivered job can never record a second reply or a second synthesis.

A trigger sends ``NOTIFY coachboard_jobs, '{schema} {job_id}'`` on every change (:meth:`TurnJobs.wait`
listens for it and re-reads every ``recheck_s`` too, since notifications sent while disconnected are
lost). The message text is never logged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._keys import check_part
from ._pg_conn import PooledTables, describe
from ._pg_lease import NOW_SQL, Lease, StaleLeaseError
from ._pg_schema import DEFAULT_SCHEMA, JOBS_CHANNEL
from ._text import check_turn_text
from .errors import InvalidValueError

__all__ = ["TERMINAL", "Job", "TurnJobs"]

#: States after which a job never changes again.
TERMINAL = frozenset({"done", "failed"})

_COLS = (
    "job_id, seq, user_id, session_id, state, attempts, turn_id, worker_id, epoch, coach_reply, "
    "coach_reply_at, synthesis, result, error, created_at, started_at, finished_at, updated_at"
)
_MAX_MESSAGE = 64_000


def _check_message(message: Any) -> None:
    """Raise InvalidValueError (not retryable: the same text fails again) unless ``message`` is text a
    PostgreSQL ``TEXT`` column holds: non-empty, at most ``_MAX_MESSAGE`` characters, and
    :func:`blackboard._text.check_turn_text` (UTF-8, no NUL). The error names the problem and the fix,
    never the text."""
    if not isinstance(message, str) or not message.strip():
        raise InvalidValueError("a turn message must be non-empty text: type something")
    if len(message) > _MAX_MESSAGE:
        raise InvalidValueError(
            f"a turn message is at most {_MAX_MESSAGE} characters (this one has {len(message)}): shorten it"
        )
    check_turn_text(message)


@dataclass(frozen=True)
class Job:
    """One turn job row (without the message text: :meth:`TurnJobs.message` reads it)."""

    job_id: str
    seq: int
    user: str
    session: str
    state: str
    attempts: int
    turn_id: str | None
    worker_id: str | None
    epoch: int | None
    coach_reply: str | None
    coach_reply_at: float | None
    synthesis: str | None
    result: str | None
    error: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


def _job(row: Sequence[Any]) -> Job:
    return Job(
        row[0],
        int(row[1]),
        row[2],
        row[3],
        row[4],
        int(row[5]),
        row[6],
        row[7],
        None if row[8] is None else int(row[8]),
        *row[9:],
    )


def check_job_id(job_id: object) -> str:
    """A job id: the key-part alphabet ([A-Za-z0-9_.-], 1-64 chars)."""
    return check_part(job_id, "job id")


class TurnJobs(PooledTables):
    """The ``turn_jobs`` table of one schema (see the module docstring).

    Args:
        url / schema: the PostgreSQL deployment (created or upgraded on open unless ``pool`` is given).
        pool: share an open ``psycopg_pool.ConnectionPool``.
        recheck_s: how often :meth:`wait` re-reads without a notification.
    """

    what = "turn jobs"

    def __init__(
        self, url: str, *, schema: str = DEFAULT_SCHEMA, pool: Any = None, recheck_s: float = 0.5
    ) -> None:
        super().__init__(url, schema, pool=pool, pool_size=6, name="jobs")
        self.recheck_s = recheck_s

    def __repr__(self) -> str:
        return f"TurnJobs({describe(self.url)!r}, schema={self.schema!r})"

    def _guard(self) -> str:
        return (
            f"EXISTS (SELECT 1 FROM {self._q}.session_leases l WHERE l.user_id = j.user_id AND "
            f"l.session_id = j.session_id AND l.worker_id = %s AND l.epoch = %s AND l.expires_at > {NOW_SQL})"
        )

    # -- front end ---------------------------------------------------------------------------------
    def create(self, job_id: str, user: str, session: str, message: str) -> tuple[Job, bool]:
        """Create the job (state ``queued``) unless ``job_id`` exists; returns ``(job, created)``. A job id
        already used for another user or session, or for another message, is refused
        (InvalidValueError): the same id again follows the job it names, so other text would be dropped
        without a word (the comparison runs in PostgreSQL; neither text is put in the error)."""
        check_job_id(job_id)
        check_part(user, "user")
        check_part(session, "session")
        _check_message(message)
        q = self._q

        def op(conn: Any) -> tuple[Job, bool, bool]:
            now = time.time()
            made = conn.execute(
                f"INSERT INTO {q}.turn_jobs (job_id, user_id, session_id, message, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (job_id) DO NOTHING RETURNING 1",
                (job_id, user, session, message, now, now),
            ).fetchone()
            row = conn.execute(
                f"SELECT {_COLS}, message = %s FROM {q}.turn_jobs WHERE job_id = %s", (message, job_id)
            ).fetchone()
            return (_job(row[:-1]), made is not None, bool(row[-1]))

        job, created, same = self._call(op)
        if (job.user, job.session) != (user, session):
            raise InvalidValueError(f"job id {job_id} belongs to another user or session: use a new job id")
        if not same:
            raise InvalidValueError(
                f"job id {job_id} was sent with another message: to follow it, send its own message again "
                "(or give no --job-id to send this one as a new turn)"
            )
        return job, created

    def get(self, job_id: str) -> Job | None:
        q = self._q
        row = self._call(
            lambda c: c.execute(f"SELECT {_COLS} FROM {q}.turn_jobs WHERE job_id = %s", (job_id,)).fetchone()
        )
        return _job(row) if row else None

    def message(self, job_id: str) -> str | None:
        """The user's message of the job (never logged)."""
        q = self._q
        row = self._call(
            lambda c: c.execute(f"SELECT message FROM {q}.turn_jobs WHERE job_id = %s", (job_id,)).fetchone()
        )
        return row[0] if row else None

    def wait(self, job_id: str, timeout_s: float, *, seen: float | None = None) -> Job | None:
        """Block until the job's ``updated_at`` is later than ``seen`` (None: return at once), a
        notification or re-check shows it, or ``timeout_s`` passes; returns the job as it is then."""
        q = self._q
        payload = f"{self.schema} {job_id}"
        end = time.monotonic() + timeout_s

        def op(conn: Any) -> Job | None:
            conn.execute(f"LISTEN {JOBS_CHANNEL}")
            try:
                while True:
                    row = conn.execute(
                        f"SELECT {_COLS} FROM {q}.turn_jobs WHERE job_id = %s", (job_id,)
                    ).fetchone()
                    job = _job(row) if row else None
                    now = time.monotonic()
                    if job is None or seen is None or job.updated_at > seen or now >= end:
                        return job
                    for note in conn.notifies(timeout=min(self.recheck_s, end - now)):
                        if note.payload == payload:
                            break
            finally:
                conn.execute(f"UNLISTEN {JOBS_CHANNEL}")

        job: Job | None = self._call(op)
        return job

    # -- worker ------------------------------------------------------------------------------------
    def _refuse(self, job_id: str, lease: Lease, what: str) -> None:
        """After a guarded update matched nothing: raise StaleLeaseError when the lease is the reason
        (logging the refusal); return when the job is simply terminal already."""
        q = self._q

        def op(conn: Any) -> bool:
            ok = conn.execute(
                f"SELECT 1 FROM {q}.session_leases WHERE user_id = %s AND session_id = %s AND worker_id = %s"
                f" AND epoch = %s AND expires_at > {NOW_SQL}",
                (lease.user, lease.session, lease.worker_id, lease.epoch),
            ).fetchone()
            if ok is None:
                conn.execute(
                    f"INSERT INTO {q}.stale_refusals (job_id, user_id, session_id, worker_id, epoch, what, at)"
                    f" VALUES (%s, %s, %s, %s, %s, %s, {NOW_SQL})",
                    (job_id, lease.user, lease.session, lease.worker_id, lease.epoch, what),
                )
            return ok is not None

        if not self._call(op):
            raise StaleLeaseError(
                f"worker {lease.worker_id} no longer holds session {lease.session} under epoch {lease.epoch}: "
                f"{what} of job {job_id} refused (another worker took the session, or the lease expired)"
            )

    def claim(self, job_id: str, lease: Lease) -> Job:
        """Mark the job ``running`` under ``lease`` (attempts + 1). Returns the job; a terminal job is
        returned unchanged. Raises StaleLeaseError when the lease is not held."""
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"UPDATE {q}.turn_jobs j SET state = 'running', attempts = attempts + 1, worker_id = %s, epoch = %s,"
                " started_at = COALESCE(started_at, %s), updated_at = %s"
                f" WHERE job_id = %s AND state IN ('queued', 'running') AND (epoch IS NULL OR epoch <= %s)"
                f" AND {self._guard()} RETURNING {_COLS}",
                (
                    lease.worker_id,
                    lease.epoch,
                    time.time(),
                    time.time(),
                    job_id,
                    lease.epoch,
                    lease.worker_id,
                    lease.epoch,
                ),
            ).fetchone()
        )
        if row:
            return _job(row)
        job = self.get(job_id)
        if job is None:
            raise InvalidValueError(f"no turn job {job_id}")
        if job.terminal:
            return job
        self._refuse(job_id, lease, "claim")
        raise StaleLeaseError(f"job {job_id} is held under a newer epoch than {lease.epoch}")

    def _running_update(
        self, job_id: str, lease: Lease, sets: str, args: tuple[Any, ...], what: str, extra: str = ""
    ) -> Job | None:
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"UPDATE {q}.turn_jobs j SET {sets}, updated_at = %s WHERE job_id = %s AND state = 'running'"
                f" AND worker_id = %s AND epoch = %s{extra} AND {self._guard()} RETURNING {_COLS}",
                (*args, time.time(), job_id, lease.worker_id, lease.epoch, lease.worker_id, lease.epoch),
            ).fetchone()
        )
        if row:
            return _job(row)
        self._refuse(job_id, lease, what)
        return None

    def set_turn(self, job_id: str, lease: Lease, turn_id: str) -> str:
        """Record the blackboard turn the job runs as (kept when one is recorded already); returns the
        recorded turn id. Raises StaleLeaseError."""
        job = self._running_update(job_id, lease, "turn_id = COALESCE(turn_id, %s)", (turn_id,), "set_turn")
        if job is None or job.turn_id is None:
            raise StaleLeaseError(f"job {job_id} is no longer running under epoch {lease.epoch}")
        return job.turn_id

    def record_coach_reply(self, job_id: str, lease: Lease, reply: str) -> bool:
        """Record the Coach's reply once; False when one was recorded before (the user saw that one).
        Raises StaleLeaseError."""
        job = self._running_update(
            job_id,
            lease,
            "coach_reply = %s, coach_reply_at = %s",
            (reply, time.time()),
            "coach_reply",
            extra=" AND coach_reply IS NULL",
        )
        return job is not None

    def finish(
        self, job_id: str, lease: Lease, *, result: str, coach_reply: str, synthesis: str
    ) -> Job | None:
        """Mark the job ``done`` with its result document (JSON text), once: the Coach reply already
        recorded is kept. Returns the job, or None when it was terminal already. Raises StaleLeaseError."""
        return self._running_update(
            job_id,
            lease,
            "state = 'done', result = %s, synthesis = %s, coach_reply = COALESCE(coach_reply, %s),"
            " coach_reply_at = COALESCE(coach_reply_at, %s), finished_at = %s",
            (result, synthesis, coach_reply, time.time(), time.time()),
            "finish",
        )

    def fail(self, job_id: str, error: str) -> bool:
        """Mark a job that is not terminal ``failed`` (the dead-letter consumer: the broker gave up on it).
        Returns whether it changed."""
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"UPDATE {q}.turn_jobs SET state = 'failed', error = %s, finished_at = %s, updated_at = %s"
                " WHERE job_id = %s AND state IN ('queued', 'running') RETURNING 1",
                (error[:500], time.time(), time.time(), job_id),
            ).fetchone()
        )
        return row is not None

    def pending(self, user: str, session: str, upto_seq: int) -> list[Job]:
        """The session's jobs not yet terminal with ``seq <= upto_seq``, oldest first."""
        q = self._q
        rows = self._call(
            lambda c: c.execute(
                f"SELECT {_COLS} FROM {q}.turn_jobs WHERE user_id = %s AND session_id = %s AND seq <= %s"
                " AND state IN ('queued', 'running') ORDER BY seq",
                (user, session, upto_seq),
            ).fetchall()
        )
        return [_job(r) for r in rows]

    def all(self) -> list[Job]:
        q = self._q
        return [
            _job(r)
            for r in self._call(
                lambda c: c.execute(f"SELECT {_COLS} FROM {q}.turn_jobs ORDER BY seq").fetchall()
            )
        ]

    def counts(self) -> dict[str, int]:
        """Jobs per state."""
        q = self._q
        rows = self._call(
            lambda c: c.execute(f"SELECT state, count(*) FROM {q}.turn_jobs GROUP BY state").fetchall()
        )
        return {r[0]: int(r[1]) for r in rows}

    # -- workers' heartbeats -------------------------------------------------------------------------
    def heartbeat(self, worker_id: str, host: str, pid: int, capacity: int) -> None:
        q = self._q
        self._call(
            lambda c: c.execute(
                f"INSERT INTO {q}.workers (worker_id, host, pid, capacity, started_at, heartbeat_at)"
                f" VALUES (%s, %s, %s, %s, {NOW_SQL}, {NOW_SQL}) ON CONFLICT (worker_id) DO UPDATE"
                f" SET heartbeat_at = {NOW_SQL}, capacity = excluded.capacity",
                (worker_id, host, pid, capacity),
            )
        )
