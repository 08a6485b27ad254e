"""Connections to PostgreSQL for the blackboard, the barrier and the budgets: URL checks, a pool, and
errors that say which server could not be reached and how to start it (never a bare psycopg traceback).

URLs are libpq URIs (``postgresql://user@host:port/dbname``). Connections are in autocommit mode; every
multi-statement change runs in an explicit ``conn.transaction()`` at READ COMMITTED (PostgreSQL's
default isolation).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from .errors import InvalidValueError, LockTimeoutError, StoreUnavailableError

__all__ = [
    "START_HINT",
    "PooledTables",
    "call_pooled",
    "check_url",
    "describe",
    "open_pool",
    "unreachable",
    "upgrade_schema",
]

T = TypeVar("T")

#: How to start the machine's PostgreSQL (Debian's cluster tools), quoted in every "cannot reach" error.
START_HINT = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"

#: Seconds libpq waits for a TCP connection before giving up.
CONNECT_TIMEOUT_S = 5


def check_url(url: object) -> str:
    """Return ``url`` when it is a ``postgresql://`` / ``postgres://`` URI; InvalidValueError otherwise."""
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        raise InvalidValueError(
            f"database url {str(url)[:80]!r} is not a PostgreSQL URL: use postgresql://user@host:port/dbname "
            "([data] url or COACH_DATABASE_URL), or leave it unset for the SQLite blackboard in [data] dir"
        )
    return url


def describe(url: str) -> str:
    """``host:port/dbname`` of ``url`` (no password), for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(url)
    except Exception:  # a malformed URL: psycopg's own error says why when connecting
        return "(unparsable URL)"
    host = str(info.get("host") or "localhost (socket)")
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


_NO_DATABASE = re.compile(r'database "([^"]+)" does not exist')
_LOGIN_REFUSED = re.compile(
    r'password authentication failed|role "[^"]+" does not exist|no password supplied'
)


def unreachable(url: str, exc: BaseException) -> StoreUnavailableError:
    """The error for a server that refused or never answered: names host, port and database, and how to
    start PostgreSQL on this machine. Retryable (the server may come up). A server that answered but has
    no such database (``database_missing``) or refused the login (``login_refused``) is told apart, with
    its own fix, and is not retryable: starting the server would not help."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    missing = _NO_DATABASE.search(first)
    if missing:
        name = missing.group(1)
        return StoreUnavailableError(
            f"PostgreSQL at {describe(url)} is running but has no database {name!r}. Fix: create it "
            f"(createdb {name}, or CREATE DATABASE {name}), or name an existing one in [data] url / "
            "COACH_DATABASE_URL",
            code="database_missing",
            retryable=False,
        )
    if _LOGIN_REFUSED.search(first):
        return StoreUnavailableError(
            f"PostgreSQL at {describe(url)} refused the login ({first}). Fix: correct the user or password in "
            "[data] url / COACH_DATABASE_URL (or the server's pg_hba.conf)",
            code="login_refused",
            retryable=False,
        )
    return StoreUnavailableError(
        f"cannot reach PostgreSQL at {describe(url)} ({first}). Fix: start it ({START_HINT}), or correct "
        "[data] url / COACH_DATABASE_URL; unset both to use the SQLite blackboard instead",
        code="database_unreachable",
    )


def connect(url: str) -> Any:
    """One autocommit psycopg Connection. Raises StoreUnavailableError (``database_unreachable``)."""
    import psycopg

    try:
        return psycopg.connect(check_url(url), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        raise unreachable(url, exc) from None


def upgrade_schema(url: str, schema: str) -> tuple[int, int]:
    """Run :func:`blackboard._pg_schema.upgrade` on a fresh connection (``coach db upgrade`` and every
    start). Returns ``(version_before, version_after)``. Raises StoreUnavailableError."""
    import psycopg

    from ._pg_schema import upgrade

    conn = connect(url)
    try:
        return upgrade(conn, schema)
    except psycopg.Error as exc:
        raise StoreUnavailableError(
            f"cannot create or upgrade PostgreSQL schema {schema!r} at {describe(url)}: {exc}",
            retryable=False,
        ) from None
    finally:
        conn.close()


def open_pool(url: str, *, min_size: int = 1, max_size: int = 8, name: str = "coachboard") -> Any:
    """An open ``psycopg_pool.ConnectionPool`` of autocommit connections (one checked at once, so an
    unreachable server fails here). Raises StoreUnavailableError (``database_unreachable``)."""
    import psycopg
    from psycopg_pool import ConnectionPool, PoolTimeout

    pool = ConnectionPool(
        check_url(url),
        min_size=min_size,
        max_size=max_size,
        open=False,
        name=name,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
    )
    try:
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 1)
    except (PoolTimeout, psycopg.Error) as exc:
        pool.close()
        try:  # the pool only says "timeout": a direct connection gives the server's reason
            connect(url).close()
        except StoreUnavailableError as direct:
            raise direct from None
        raise unreachable(url, exc) from None
    return pool


def call_pooled(pool: Any, fn: Callable[[Any], T], *, url: str, what: str, closed: bool) -> T:
    """Run ``fn(conn)`` on a connection of ``pool``, with psycopg's errors as the blackboard's: a row lock
    held past ``lock_timeout`` is :class:`~blackboard.errors.LockTimeoutError` (retryable); a closed
    ``what`` ("store", "barrier") or pool, no free connection, a lost connection (a write in flight may or
    may not have committed) and any other database error are
    :class:`~blackboard.errors.StoreUnavailableError`, naming the server, never a bare traceback."""
    import psycopg
    from psycopg_pool import PoolClosed, PoolTimeout

    if closed:
        raise StoreUnavailableError(f"{what} is closed", retryable=False)
    try:
        with pool.connection() as conn:
            return fn(conn)
    except PoolClosed:
        raise StoreUnavailableError(f"{what} is closed", retryable=False) from None
    except PoolTimeout:
        raise StoreUnavailableError(
            f"no PostgreSQL connection to {describe(url)} became free in time; retry later"
        ) from None
    except psycopg.errors.LockNotAvailable:
        raise LockTimeoutError(
            f"a row of the {what} stayed locked by another transaction past lock_timeout; retry"
        ) from None
    except psycopg.OperationalError as exc:
        raise StoreUnavailableError(
            f"lost the PostgreSQL connection to {describe(url)} ({str(exc).strip()[:200]}); a write in "
            "flight may or may not have committed: read it again before retrying"
        ) from None
    except psycopg.Error as exc:
        raise StoreUnavailableError(f"{what} database error: {exc}", retryable=False) from None


class PooledTables:
    """The plumbing every PostgreSQL class of the blackboard shares (the store, the barrier, the turn jobs,
    the leases): one schema, its tables reached through a connection pool, errors as the blackboard's.

    Args:
        url / schema: the deployment; the schema name is checked (InvalidValueError).
        pool: share an open ``psycopg_pool.ConnectionPool`` (then nothing is upgraded here and
            :meth:`close` leaves the pool open); None: open one of ``pool_size`` connections named
            ``{name}-{schema}``, after :func:`upgrade_schema` when ``upgrade``.

    Raises StoreUnavailableError (``database_unreachable``: which server, how to start it). Subclasses
    set :attr:`what` (the noun of "... is closed" errors) and run their statements with :meth:`_call`.
    Thread-safe.
    """

    what: ClassVar[str] = "store"

    def __init__(
        self,
        url: str,
        schema: str,
        *,
        pool: Any = None,
        upgrade: bool = True,
        pool_size: int = 8,
        name: str = "coachboard",
    ) -> None:
        from ._pg_schema import check_schema_name

        self.url = url
        self.schema = check_schema_name(schema)
        self._q = f'"{self.schema}"'
        self._own_pool = pool is None
        if pool is None:
            if upgrade:
                upgrade_schema(url, self.schema)
            pool = open_pool(url, max_size=pool_size, name=f"{name}-{self.schema}")
        self._pool = pool
        self._closed = False
        self._lock = threading.Lock()

    def _call(self, fn: Callable[[Any], T]) -> T:
        """``fn(conn)`` on a pooled connection (:func:`call_pooled`)."""
        return call_pooled(self._pool, fn, url=self.url, what=self.what, closed=self._closed)

    def close(self) -> None:
        """Release the connections (a shared pool stays open); further calls raise
        StoreUnavailableError. Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._own_pool:
                    self._pool.close()
