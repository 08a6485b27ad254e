"""A throwaway PostgreSQL schema per test, for the tests of the PostgreSQL backends.

The server is ``COACH_TEST_DATABASE_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``, the
project machines' trust-auth cluster). :func:`fresh_schema` creates a schema with a unique name and
drops it (CASCADE) afterwards, so runs never see each other's rows. When the server cannot be reached,
:func:`require_postgres` skips the test with one line saying how to start it; under ``CI=true`` it
fails instead (CI must run these tests).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["DEFAULT_TEST_URL", "PgTarget", "fresh_schema", "postgres_problem", "require_postgres", "test_url"]

DEFAULT_TEST_URL = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass(frozen=True)
class PgTarget:
    """Where a test's PostgreSQL backends live: ``url`` and a schema of their own (picklable, so it can
    be handed to worker processes)."""

    url: str
    schema: str


def test_url() -> str:
    """The test server's URL (``COACH_TEST_DATABASE_URL`` or :data:`DEFAULT_TEST_URL`)."""
    return os.environ.get("COACH_TEST_DATABASE_URL") or DEFAULT_TEST_URL


@lru_cache(maxsize=4)
def postgres_problem(url: str) -> str | None:
    """None when ``url`` accepts a connection, else one line naming the server and how to start it."""
    import psycopg

    from blackboard._pg_conn import START_HINT, describe

    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        return (
            f"PostgreSQL test skipped: no server at {describe(url)} ({why}); start it with `{START_HINT}` "
            "or point COACH_TEST_DATABASE_URL at one"
        )
    return None


def require_postgres(url: str | None = None) -> str:
    """The test server's URL; skips the calling test when it is unreachable (fails under CI=true)."""
    import pytest

    url = url or test_url()
    problem = postgres_problem(url)
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and PostgreSQL is required: {problem}")
        pytest.skip(problem)
    return url


def drop_schema(url: str, schema: str) -> None:
    """``DROP SCHEMA IF EXISTS schema CASCADE`` on ``url``."""
    from blackboard._pg_conn import connect
    from blackboard._pg_schema import check_schema_name

    conn = connect(url)
    try:
        conn.execute(f'DROP SCHEMA IF EXISTS "{check_schema_name(schema)}" CASCADE')
    finally:
        conn.close()


@contextmanager
def fresh_schema(prefix: str = "t") -> Iterator[PgTarget]:
    """A unique, not yet created schema name on the test server (the backends create it on open),
    dropped with everything in it on exit. Skips (or fails under CI=true) without a server."""
    url = require_postgres()
    target = PgTarget(url, f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:12]}")
    try:
        yield target
    finally:
        drop_schema(url, target.schema)
