"""SQLite implementation of the Store protocol, safe for many processes on one machine.

Design (SQLite docs, "Write-Ahead Logging" and "BEGIN IMMEDIATE"): WAL journal so readers never block
the writer; ``busy_timeout`` so a writer waits for the write lock inside SQLite; every write is one
``BEGIN IMMEDIATE`` transaction (the write lock is taken before the version is read, so the
compare-and-swap cannot interleave with another writer); ``SQLITE_BUSY`` that still escapes is retried
here with jittered backoff until ``busy_budget_s``, so "database is locked" never reaches a caller (it
becomes :class:`StoreUnavailableError` only when the budget is spent). ``synchronous=FULL`` by default:
a committed write survives process and power loss.

Tables: ``entries`` (latest version per key) and ``history`` (append-only, one row per version, its
``seq`` is the store-wide commit order; triggers refuse UPDATE/DELETE).
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from ._keys import check_prefix, parse_key
from ._store import Entry, check_write_args, decode_value
from .errors import StoreUnavailableError, VersionConflictError

__all__ = ["DB_FILENAME", "SQLiteStore", "open_store"]

_Entries = list[Entry]

DB_FILENAME = "blackboard.sqlite3"
T = TypeVar("T")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS entries (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version >= 1),
        author TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        seq INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        version INTEGER NOT NULL,
        author TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        UNIQUE (key, version))""",
    """CREATE TRIGGER IF NOT EXISTS history_no_update BEFORE UPDATE ON history
        BEGIN SELECT RAISE(ABORT, 'history is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS history_no_delete BEFORE DELETE ON history
        BEGIN SELECT RAISE(ABORT, 'history is append-only'); END""",
)

_COLS = "key, value, version, author, created_at, updated_at, seq"


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return True
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text or "database table is locked" in text


class SQLiteStore:
    """Store in one SQLite file (created with its parent directory if missing).

    Args:
        path: database file.
        busy_timeout_ms: SQLite's own wait for the write lock per attempt (ms).
        busy_budget_s: total time a call keeps retrying SQLITE_BUSY before StoreUnavailableError (s).
        synchronous: ``"FULL"`` (durable across power loss) or ``"NORMAL"`` (durable across process
            crashes only; faster).

    Raises:
        StoreUnavailableError: the file cannot be opened or is not a blackboard database.

    Thread-safe: one connection per store, serialised by a lock; use one store per process (or
    several: they coordinate through SQLite's file locks like separate processes do).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = 2000,
        busy_budget_s: float = 60.0,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
    ) -> None:
        self.path = Path(path)
        self._busy_budget_s = busy_budget_s
        self._lock = threading.Lock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailableError(f"cannot open blackboard database {self.path}: {exc}") from None
        try:
            self._retry(lambda: self._setup(busy_timeout_ms, synchronous))
        except StoreUnavailableError as exc:
            self._conn.close()
            if exc.retryable:
                raise
            raise StoreUnavailableError(
                f"{self.path} is not a usable blackboard database ({exc}); move it aside or choose another "
                "data directory",
                retryable=False,
            ) from None

    def _setup(self, busy_timeout_ms: int, synchronous: str) -> None:
        c = self._conn
        c.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreUnavailableError(f"cannot switch {self.path} to WAL (got {mode})", retryable=False)
        c.execute(f"PRAGMA synchronous={synchronous}")
        c.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA:
                c.execute(stmt)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    # -- retry machinery -------------------------------------------------------------------------
    def _retry(self, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + self._busy_budget_s
        delay = 0.001
        while True:
            try:
                return fn()
            except sqlite3.Error as exc:
                if not (isinstance(exc, sqlite3.OperationalError) and _is_busy(exc)):
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise StoreUnavailableError(
                        f"blackboard database error: {exc}", retryable=False
                    ) from None
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if time.monotonic() >= deadline:
                    raise StoreUnavailableError(
                        f"blackboard database stayed busy for {self._busy_budget_s:.0f}s; retry later"
                    ) from None
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.05)

    def _call(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreUnavailableError("store is closed", retryable=False)
            return self._retry(fn)

    @staticmethod
    def _row(row: tuple[Any, ...]) -> Entry:
        return Entry(row[0], decode_value(row[1]), row[2], row[3], row[4], row[5], row[6])

    # -- Store protocol ---------------------------------------------------------------------------
    def read(self, key: str) -> Entry | None:
        parse_key(key)

        def op() -> Entry | None:
            row = self._conn.execute(f"SELECT {_COLS} FROM entries WHERE key = ?", (key,)).fetchone()
            return self._row(row) if row else None

        return self._call(op)

    def write(self, key: str, value: dict[str, Any], *, expected_version: int, author: str) -> Entry:
        text = check_write_args(key, value, expected_version, author)

        def op() -> Entry:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                row = c.execute("SELECT version, created_at FROM entries WHERE key = ?", (key,)).fetchone()
                current = row[0] if row else 0
                if current != expected_version:
                    c.execute("ROLLBACK")
                    raise VersionConflictError(
                        key, expected_version=expected_version, current_version=current
                    )
                now = time.time()
                created = row[1] if row else now
                version = current + 1
                cur = c.execute(
                    "INSERT INTO history (key, value, version, author, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (key, text, version, author, created, now),
                )
                seq = cur.lastrowid
                c.execute(
                    f"INSERT INTO entries ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(key) DO UPDATE SET value=excluded.value, version=excluded.version,"
                    " author=excluded.author, updated_at=excluded.updated_at, seq=excluded.seq",
                    (key, text, version, author, created, now, seq),
                )
                c.execute("COMMIT")
            except VersionConflictError:
                raise
            except BaseException:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise
            assert seq is not None
            return Entry(key, decode_value(text), version, author, created, now, seq)

        return self._call(op)

    def list(self, prefix: str) -> _Entries:
        check_prefix(prefix)

        def op() -> _Entries:
            rows = self._conn.execute(
                f"SELECT {_COLS} FROM entries WHERE substr(key, 1, ?) = ? ORDER BY key",
                (len(prefix), prefix),
            ).fetchall()
            return [self._row(r) for r in rows]

        return self._call(op)

    def history(self, key: str) -> _Entries:
        parse_key(key)

        def op() -> _Entries:
            rows = self._conn.execute(
                "SELECT key, value, version, author, created_at, updated_at, seq FROM history"
                " WHERE key = ? ORDER BY version",
                (key,),
            ).fetchall()
            return [self._row(r) for r in rows]

        return self._call(op)

    def integrity_check(self) -> str:
        """Result of ``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        return self._call(lambda: str(self._conn.execute("PRAGMA integrity_check").fetchone()[0]))

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


def open_store(data_dir: str | os.PathLike[str]) -> SQLiteStore:
    """The default store: ``SQLiteStore(data_dir / "blackboard.sqlite3")`` (directory created)."""
    return SQLiteStore(Path(data_dir) / DB_FILENAME)
