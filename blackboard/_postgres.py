"""PostgreSQL implementation of the Store protocol, for processes on several machines.

Design (PostgreSQL docs 13.2.1, "Read Committed Isolation Level"): every write is one transaction at
READ COMMITTED. Compare-and-swap is ``UPDATE entries ... WHERE key = $k AND version = $expected``: a
writer blocked by another's row lock re-evaluates the condition on the committed row once that one
commits, so exactly one of two racing writers matches and the other sees 0 rows (a conflict, nothing
written); no SERIALIZABLE retries are needed. Create-only is ``INSERT ... ON CONFLICT (key) DO
NOTHING``, then a check of whether a row came back. The history row and the store-wide ``seq`` are
written in the same transaction; ``seq`` comes from the one-row ``commit_seq`` counter, taken after the
entry's row lock and held until commit, so ``seq`` order is commit order (as with SQLite's single
writer). Tables and triggers: ``blackboard._pg_schema``.
"""

from __future__ import annotations

import time
from typing import Any

from ._keys import check_prefix, parse_key
from ._pg_conn import PooledTables, describe
from ._pg_schema import DEFAULT_SCHEMA, LATEST_VERSION, refuse_newer, schema_version
from ._store import Entry, check_write_args, decode_value
from .errors import StoreUnavailableError, VersionConflictError

__all__ = ["PostgresStore"]

_Entries = list[Entry]
_COLS = "key, value, version, author, created_at, updated_at, seq"


class _Conflict(Exception):
    """Raised inside a transaction to roll it back; carries the stored version."""

    def __init__(self, current: int) -> None:
        self.current = current


class PostgresStore(PooledTables):
    """Store in one PostgreSQL schema, shared by every process that opens the same URL and schema.

    Args:
        url: libpq URI, e.g. ``postgresql://postgres@127.0.0.1:5432/coachboard``.
        schema: the deployment's schema (created if missing; see ``blackboard._pg_schema``).
        upgrade: apply missing migrations on open (``coach db upgrade`` does only that); False refuses
            a schema that is not at this code's version instead.
        pool_size: most connections this store holds at once (threads beyond it wait for one).

    Raises:
        StoreUnavailableError: ``database_unreachable`` (host, port and how to start PostgreSQL in the
            message), ``database_missing`` (the server has no such database: create it),
            ``login_refused`` (wrong user or password), ``schema_too_new`` (written by a newer coachboard), ``schema_outdated``
            (``upgrade=False`` and migrations are missing).
        InvalidValueError: not a PostgreSQL URL, or a bad schema name.

    Thread-safe; one store per process is enough (its pool serves every thread).
    """

    def __init__(
        self, url: str, *, schema: str = DEFAULT_SCHEMA, upgrade: bool = True, pool_size: int = 8
    ) -> None:
        super().__init__(url, schema, upgrade=upgrade, pool_size=pool_size, name="store")
        if not upgrade:
            with self._pool.connection() as conn:
                version = schema_version(conn, self.schema)
            refuse_newer(version, self.schema)
            if version < LATEST_VERSION:
                self._pool.close()
                raise StoreUnavailableError(
                    f"PostgreSQL schema {self.schema!r} at {describe(url)} is at version {version}, this "
                    f"coachboard needs {LATEST_VERSION}. Fix: run `coach db upgrade` (stored rows are kept)",
                    code="schema_outdated",
                    retryable=False,
                )

    def __repr__(self) -> str:
        return f"PostgresStore({describe(self.url)!r}, schema={self.schema!r})"

    # -- plumbing --------------------------------------------------------------------------------
    @staticmethod
    def _row(row: tuple[Any, ...]) -> Entry:
        return Entry(row[0], decode_value(row[1]), row[2], row[3], row[4], row[5], row[6])

    # -- Store protocol ---------------------------------------------------------------------------
    def read(self, key: str) -> Entry | None:
        parse_key(key)

        def op(conn: Any) -> Entry | None:
            row = conn.execute(f"SELECT {_COLS} FROM {self._q}.entries WHERE key = %s", (key,)).fetchone()
            return self._row(row) if row else None

        return self._call(op)

    def write(self, key: str, value: dict[str, Any], *, expected_version: int, author: str) -> Entry:
        text = check_write_args(key, value, expected_version, author)
        q = self._q

        def op(conn: Any) -> Entry:
            now = time.time()
            try:
                with conn.transaction():
                    if expected_version == 0:
                        row = conn.execute(
                            f"INSERT INTO {q}.entries ({_COLS}) VALUES (%s, %s, 1, %s, %s, %s, 0)"
                            " ON CONFLICT (key) DO NOTHING RETURNING created_at",
                            (key, text, author, now, now),
                        ).fetchone()
                    else:
                        row = conn.execute(
                            f"UPDATE {q}.entries SET value = %s, version = version + 1, author = %s,"
                            " updated_at = %s WHERE key = %s AND version = %s RETURNING created_at",
                            (text, author, now, key, expected_version),
                        ).fetchone()
                    if row is None:
                        got = conn.execute(
                            f"SELECT version FROM {q}.entries WHERE key = %s", (key,)
                        ).fetchone()
                        raise _Conflict(got[0] if got else 0)
                    created = row[0]
                    version = expected_version + 1
                    seq = conn.execute(
                        f"WITH s AS (UPDATE {q}.commit_seq SET seq = seq + 1 RETURNING seq),"
                        f" h AS (INSERT INTO {q}.history (seq, key, value, version, author, created_at, updated_at)"
                        "  SELECT s.seq, %s, %s, %s, %s, %s, %s FROM s RETURNING seq)"
                        f" UPDATE {q}.entries SET seq = (SELECT seq FROM h) WHERE key = %s RETURNING seq",
                        (key, text, version, author, created, now, key),
                    ).fetchone()[0]
            except _Conflict as c:
                raise VersionConflictError(
                    key, expected_version=expected_version, current_version=c.current
                ) from None
            return Entry(key, decode_value(text), version, author, created, now, seq)

        return self._call(op)

    def list(self, prefix: str) -> _Entries:
        check_prefix(prefix)

        def op(conn: Any) -> _Entries:
            rows = conn.execute(
                f'SELECT {_COLS} FROM {self._q}.entries WHERE left(key, %s) = %s ORDER BY key COLLATE "C"',
                (len(prefix), prefix),
            ).fetchall()
            return [self._row(r) for r in rows]

        return self._call(op)

    def history(self, key: str) -> _Entries:
        parse_key(key)

        def op(conn: Any) -> _Entries:
            rows = conn.execute(
                f"SELECT {_COLS} FROM {self._q}.history WHERE key = %s ORDER BY version", (key,)
            ).fetchall()
            return [self._row(r) for r in rows]

        return self._call(op)
