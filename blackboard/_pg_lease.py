"""Session leases in PostgreSQL: which ``coach worker`` holds a session (its warm ``claude`` processes),
with an epoch that fences a stale holder out (docs/scale-out.md).

One row per session in ``session_leases`` (``worker_id``, ``epoch``, ``expires_at``; schema version 2).
Every operation is one statement, so it is atomic at READ COMMITTED:

* :meth:`Leases.acquire` is an ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` (a compare-and-swap on the
  row): a free or expired lease is taken and its epoch bumped; a lease this worker still holds is
  renewed with the same epoch; a lease another worker holds and has not let expire is refused (None).
* :meth:`Leases.renew` / :meth:`Leases.check` / :meth:`Leases.release` match ``worker_id`` AND
  ``epoch`` AND ``expires_at > now``: once a lease has expired its holder cannot revive it (it must
  acquire again, which bumps the epoch), so a paused or partitioned worker never acts under an epoch
  that somebody else may have superseded.

Time is the server's clock (``clock_timestamp()``): workers whose clocks disagree still agree on expiry.
The turn-job row updates (``blackboard._pg_jobs``) carry the same ``worker_id``/``epoch`` condition, so
a stale holder's writes are refused by the database, not by luck; each refusal is logged in
``stale_refusals``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._keys import check_part
from ._pg_conn import PooledTables, describe
from ._pg_schema import DEFAULT_SCHEMA
from .errors import BlackboardError, InvalidValueError

__all__ = ["NOW_SQL", "Lease", "Leases", "StaleLeaseError"]

#: The server's clock, in Unix seconds.
NOW_SQL = "extract(epoch FROM clock_timestamp())::double precision"


class StaleLeaseError(BlackboardError):
    """This worker no longer holds the session's lease under this epoch (it expired, or another worker
    took the session): the write was refused and nothing was changed. Stop working on the session."""

    code = "stale_lease"
    retryable = False


@dataclass(frozen=True)
class Lease:
    """A held lease: ``epoch`` increases every time the session changes hands (or its lease lapsed)."""

    user: str
    session: str
    worker_id: str
    epoch: int
    expires_at: float


class Leases(PooledTables):
    """The session leases of one schema (see the module docstring).

    Args:
        url / schema: the PostgreSQL deployment (the schema is created or upgraded on open unless
            ``pool`` is given).
        ttl_s: how long a lease lives without renewal (a dead worker's sessions are taken over after it).
        pool: share an open ``psycopg_pool.ConnectionPool`` (then :meth:`close` leaves it open).
    """

    what = "leases"

    def __init__(
        self, url: str, *, schema: str = DEFAULT_SCHEMA, ttl_s: float = 15.0, pool: Any = None
    ) -> None:
        if not isinstance(ttl_s, (int, float)) or isinstance(ttl_s, bool) or ttl_s <= 0:
            raise InvalidValueError(f"lease ttl_s must be a number > 0, got {ttl_s!r}")
        super().__init__(url, schema, pool=pool, pool_size=4, name="leases")
        self.ttl_s = float(ttl_s)

    def __repr__(self) -> str:
        return f"Leases({describe(self.url)!r}, schema={self.schema!r}, ttl_s={self.ttl_s})"

    def acquire(self, user: str, session: str, worker_id: str) -> Lease | None:
        """Take or renew the session's lease for ``worker_id``; None when another worker holds it and it
        has not expired. Taking a free or expired lease bumps its epoch (first holder: epoch 1)."""
        check_part(user, "user")
        check_part(session, "session")
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"INSERT INTO {q}.session_leases AS l (user_id, session_id, worker_id, epoch, expires_at)"
                f" VALUES (%s, %s, %s, 1, {NOW_SQL} + %s)"
                " ON CONFLICT (user_id, session_id) DO UPDATE SET"
                "  epoch = CASE WHEN l.worker_id = excluded.worker_id AND l.expires_at > "
                + NOW_SQL
                + "   THEN l.epoch ELSE l.epoch + 1 END,"
                "  worker_id = excluded.worker_id, expires_at = excluded.expires_at"
                f" WHERE l.worker_id = excluded.worker_id OR l.expires_at <= {NOW_SQL}"
                " RETURNING worker_id, epoch, expires_at",
                (user, session, worker_id, self.ttl_s),
            ).fetchone()
        )
        return Lease(user, session, row[0], int(row[1]), float(row[2])) if row else None

    def renew(self, lease: Lease) -> Lease | None:
        """Extend a lease still held under its epoch; None when it expired or changed hands."""
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"UPDATE {q}.session_leases SET expires_at = {NOW_SQL} + %s"
                f" WHERE user_id = %s AND session_id = %s AND worker_id = %s AND epoch = %s AND expires_at > {NOW_SQL}"
                " RETURNING expires_at",
                (self.ttl_s, lease.user, lease.session, lease.worker_id, lease.epoch),
            ).fetchone()
        )
        return Lease(lease.user, lease.session, lease.worker_id, lease.epoch, float(row[0])) if row else None

    def check(self, lease: Lease) -> bool:
        """Whether ``lease`` is still held (same worker and epoch, not expired)."""
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"SELECT 1 FROM {q}.session_leases WHERE user_id = %s AND session_id = %s AND worker_id = %s"
                f" AND epoch = %s AND expires_at > {NOW_SQL}",
                (lease.user, lease.session, lease.worker_id, lease.epoch),
            ).fetchone()
        )
        return row is not None

    def release(self, lease: Lease) -> bool:
        """Let the lease expire now (the next holder bumps the epoch); False when it was not held."""
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"UPDATE {q}.session_leases SET expires_at = {NOW_SQL} - 0.001"
                f" WHERE user_id = %s AND session_id = %s AND worker_id = %s AND epoch = %s AND expires_at > {NOW_SQL}"
                " RETURNING 1",
                (lease.user, lease.session, lease.worker_id, lease.epoch),
            ).fetchone()
        )
        return row is not None

    def holder(self, user: str, session: str) -> Lease | None:
        """The session's current, unexpired lease (anyone's), or None."""
        q = self._q
        row = self._call(
            lambda c: c.execute(
                f"SELECT worker_id, epoch, expires_at FROM {q}.session_leases WHERE user_id = %s AND session_id = %s"
                f" AND expires_at > {NOW_SQL}",
                (user, session),
            ).fetchone()
        )
        return Lease(user, session, row[0], int(row[1]), float(row[2])) if row else None

    def held_by(self, worker_id: str) -> list[Lease]:
        """Every unexpired lease ``worker_id`` holds."""
        q = self._q
        rows = self._call(
            lambda c: c.execute(
                f"SELECT user_id, session_id, epoch, expires_at FROM {q}.session_leases WHERE worker_id = %s"
                f" AND expires_at > {NOW_SQL}",
                (worker_id,),
            ).fetchall()
        )
        return [Lease(r[0], r[1], worker_id, int(r[2]), float(r[3])) for r in rows]

    def refused(self, lease: Lease, what: str, job_id: str | None = None) -> None:
        """Log a refused write of a stale holder in ``stale_refusals`` (the audit)."""
        q = self._q
        self._call(
            lambda c: c.execute(
                f"INSERT INTO {q}.stale_refusals (job_id, user_id, session_id, worker_id, epoch, what, at)"
                f" VALUES (%s, %s, %s, %s, %s, %s, {NOW_SQL})",
                (job_id, lease.user, lease.session, lease.worker_id, lease.epoch, what),
            )
        )

    def refusals(self) -> list[dict[str, Any]]:
        """Every logged refusal, oldest first."""
        q = self._q
        rows = self._call(
            lambda c: c.execute(
                f"SELECT job_id, user_id, session_id, worker_id, epoch, what, at FROM {q}.stale_refusals ORDER BY id"
            ).fetchall()
        )
        keys = ("job_id", "user", "session", "worker_id", "epoch", "what", "at")
        return [dict(zip(keys, r, strict=True)) for r in rows]
