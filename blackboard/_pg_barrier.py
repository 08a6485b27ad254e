"""Per-turn barrier in PostgreSQL (the :class:`~blackboard._barrier.Barrier` protocol), shared by
processes on any number of machines.

Rows: ``barrier_turns`` (one per opened turn: its required agents) and ``barrier_marks`` (one per
agent marked written). Opening is ``INSERT ... ON CONFLICT DO NOTHING`` (a second open finds the row
and is refused, never a reset). A trigger on the blackboard's ``entries`` marks an agent in the same
transaction as its entry (``blackboard._pg_schema``), so a crash can never leave an entry without its
mark or a mark without its entry; :meth:`PgBarrier.mark_written` stays for callers that mark
explicitly (idempotent). A trigger on ``barrier_marks`` sends ``NOTIFY coachboard_barrier`` with
``"{schema} {turn_id}"``; PostgreSQL delivers it only after the commit (docs, "NOTIFY"), so a woken
waiter always finds the committed rows. Notifications sent while a listener is disconnected are lost,
so waiters also re-check every ``recheck_s`` seconds.

A writer killed in the middle of a transaction blocks nobody: the server rolls the transaction back
and releases its row locks when the connection drops; waits for a row lock are bounded by
``lock_timeout_s`` (PostgreSQL's ``lock_timeout``), then LockTimeoutError.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ._barrier import check_turn_id
from ._keys import check_part
from ._pg_conn import PooledTables, describe
from ._pg_schema import CHANNEL, DEFAULT_SCHEMA
from ._sequencer import WaitResult
from .errors import (
    InvalidValueError,
    TurnAlreadyOpenError,
    TurnNotOpenError,
)

__all__ = ["PgBarrier"]


class PgBarrier(PooledTables):
    """Barrier rows in one PostgreSQL schema (see module docstring). Thread-safe.

    Args:
        url: libpq URI; schema: the deployment's schema (the same as the store's).
        lock_timeout_s: longest wait for a turn's row lock held by another transaction (s).
        recheck_s: a waiter re-reads the marks at least this often, notification or not (s).
        upgrade: create or upgrade the schema on open (as :class:`~blackboard._postgres.PostgresStore`).
        pool_size: most connections held at once; each waiting thread holds one while it waits.

    Raises:
        StoreUnavailableError: unreachable server, schema too new; InvalidValueError: bad URL/schema.
    """

    what = "barrier"

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        lock_timeout_s: float = 10.0,
        recheck_s: float = 0.5,
        upgrade: bool = True,
        pool_size: int = 8,
    ) -> None:
        super().__init__(url, schema, upgrade=upgrade, pool_size=pool_size, name="barrier")
        self.lock_timeout_s = lock_timeout_s
        self.recheck_s = recheck_s

    def __repr__(self) -> str:
        return f"PgBarrier({describe(self.url)!r}, schema={self.schema!r})"

    # -- plumbing --------------------------------------------------------------------------------
    def _required(self, conn: Any, turn_id: str) -> list[str]:
        row = conn.execute(
            f"SELECT required FROM {self._q}.barrier_turns WHERE turn_id = %s", (turn_id,)
        ).fetchone()
        if row is None:
            raise TurnNotOpenError(f"turn {turn_id} is not open; call open_turn (begin_turn) first")
        return list(row[0])

    def _marked(self, conn: Any, turn_id: str, agents: Sequence[str]) -> set[str]:
        rows = conn.execute(
            f"SELECT agent FROM {self._q}.barrier_marks WHERE turn_id = %s AND agent = ANY(%s)",
            (turn_id, list(agents)),
        ).fetchall()
        return {r[0] for r in rows}

    # -- Barrier protocol -------------------------------------------------------------------------
    def open_turn(self, turn_id: str, required: Sequence[str] = ("shadow",)) -> None:
        if isinstance(required, str):
            raise InvalidValueError("required must be a sequence of agent names, not a string")
        req = [check_part(a, "agent") for a in dict.fromkeys(required)]
        check_turn_id(turn_id)

        def op(conn: Any) -> bool:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{int(self.lock_timeout_s * 1000)}ms'")
                row = conn.execute(
                    f"INSERT INTO {self._q}.barrier_turns (turn_id, required, opened_at) VALUES (%s, %s, %s)"
                    " ON CONFLICT (turn_id) DO NOTHING RETURNING 1",
                    (turn_id, req, time.time()),
                ).fetchone()
            return row is not None

        if not self._call(op):
            raise TurnAlreadyOpenError(f"turn {turn_id} is already open; reopening is not allowed")

    def is_open(self, turn_id: str) -> bool:
        check_turn_id(turn_id)
        return self._call(
            lambda c: (
                c.execute(f"SELECT 1 FROM {self._q}.barrier_turns WHERE turn_id = %s", (turn_id,)).fetchone()
                is not None
            )
        )

    def mark_written(self, turn_id: str, agent: str) -> None:
        import psycopg

        check_part(agent, "agent")
        check_turn_id(turn_id)

        def op(conn: Any) -> None:
            try:
                with conn.transaction():
                    conn.execute(f"SET LOCAL lock_timeout = '{int(self.lock_timeout_s * 1000)}ms'")
                    conn.execute(
                        f"INSERT INTO {self._q}.barrier_marks (turn_id, agent, at) VALUES (%s, %s, %s)"
                        " ON CONFLICT DO NOTHING",
                        (turn_id, agent, time.time()),
                    )
            except psycopg.errors.ForeignKeyViolation:
                raise TurnNotOpenError(f"turn {turn_id} is not open (never begun, or removed)") from None

        self._call(op)

    def arrived(self, turn_id: str, agents: Sequence[str]) -> list[str]:
        check_turn_id(turn_id)
        names = [check_part(a, "agent") for a in agents]
        got = self._call(lambda c: self._marked(c, turn_id, names))
        return [a for a in names if a in got]

    def wait(self, turn_id: str, agents: Sequence[str], deadline_s: float) -> WaitResult:
        if isinstance(agents, str):
            raise InvalidValueError("agents must be a sequence of agent names, not a string")
        if isinstance(deadline_s, bool) or not isinstance(deadline_s, (int, float)) or deadline_s < 0:
            raise InvalidValueError(f"deadline_s must be a number >= 0, got {deadline_s!r}")
        check_turn_id(turn_id)
        names = [check_part(a, "agent") for a in agents]
        start = time.monotonic()
        end = start + float(deadline_s)
        payload = f"{self.schema} {turn_id}"

        def op(conn: Any) -> WaitResult:
            wanted = list(dict.fromkeys([*self._required(conn, turn_id), *names]))
            conn.execute(f"LISTEN {CHANNEL}")  # before the first check: no mark can slip in between
            try:
                return wait_on(conn, wanted)
            finally:  # the connection goes back to the pool: it must not keep listening
                conn.execute(f"UNLISTEN {CHANNEL}")

        def wait_on(conn: Any, wanted: list[str]) -> WaitResult:
            while True:
                got = self._marked(conn, turn_id, wanted)
                now = time.monotonic()
                if len(got) == len(wanted) or now >= end:
                    return WaitResult.of(wanted, got, now - start)
                pause = min(self.recheck_s, end - now)
                for note in conn.notifies(timeout=pause):
                    if note.payload == payload:
                        break

        return self._call(op)

    def turn_ids(self, prefix: str) -> list[str]:
        check_turn_id(prefix)
        head = prefix + "/"
        rows = self._call(
            lambda c: c.execute(
                f"SELECT DISTINCT split_part(substr(turn_id, %s), '/', 1) FROM {self._q}.barrier_turns"
                " WHERE left(turn_id, %s) = %s",
                (len(head) + 1, len(head), head),
            ).fetchall()
        )
        return sorted(f"{prefix}/{r[0]}" for r in rows if r[0])

    def last_change(self, turn_id: str) -> float | None:
        check_turn_id(turn_id)
        row = self._call(
            lambda c: c.execute(
                f"SELECT greatest(t.opened_at, (SELECT max(at) FROM {self._q}.barrier_marks m WHERE m.turn_id = t.turn_id))"
                f" FROM {self._q}.barrier_turns t WHERE t.turn_id = %s",
                (turn_id,),
            ).fetchone()
        )
        return float(row[0]) if row else None

    def remove_turn(self, turn_id: str) -> bool:
        check_turn_id(turn_id)
        head = turn_id + "/"

        def op(conn: Any) -> bool:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{int(self.lock_timeout_s * 1000)}ms'")
                if conn.execute(
                    f"SELECT 1 FROM {self._q}.barrier_turns WHERE left(turn_id, %s) = %s LIMIT 1",
                    (len(head), head),
                ).fetchone():
                    raise InvalidValueError(f"{turn_id} holds other turns; remove those instead")
                row = conn.execute(
                    f"DELETE FROM {self._q}.barrier_turns WHERE turn_id = %s RETURNING 1", (turn_id,)
                ).fetchone()
            return row is not None

        return self._call(op)
