"""PostgresStore beyond the contract suite: real processes racing on one key, the schema's versioning
(created on open, ``upgrade`` idempotent, newer schemas refused, nothing stored lost) and clear errors."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from blackboard import InvalidValueError, StoreUnavailableError, turn_entry_key
from blackboard._pg_conn import connect
from blackboard._pg_schema import LATEST_VERSION, upgrade
from blackboard._postgres import PostgresStore
from testsupport.postgres import PgTarget

from . import _pg_workers, _workers

CTX = _workers.context()
COUNTER = turn_entry_key("u", "s", "t", "counter")


@pytest.mark.e2e
def test_six_processes_cas_increments_end_at_exact_sum(pg_target: PgTarget) -> None:
    procs, per_proc = 6, 100
    PostgresStore(pg_target.url, schema=pg_target.schema).close()
    start = CTX.Barrier(procs)
    out: Any = CTX.Queue()
    workers = [
        CTX.Process(
            target=_pg_workers.pg_cas_incrementer,
            args=(pg_target.url, pg_target.schema, COUNTER, per_proc, start, out),
        )
        for _ in range(procs)
    ]
    for w in workers:
        w.start()
    reports = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert [r["errors"] for r in reports] == [[]] * procs
    store = PostgresStore(pg_target.url, schema=pg_target.schema)
    try:
        final = store.read(COUNTER)
        assert final is not None and final.value["n"] == procs * per_proc == final.version  # no lost update
        hist = store.history(COUNTER)
        assert [h.version for h in hist] == list(range(1, procs * per_proc + 1))
        assert [h.value["n"] for h in hist] == list(range(1, procs * per_proc + 1))
        assert all(a.seq < b.seq for a, b in itertools.pairwise(hist))
    finally:
        store.close()


def test_reopen_keeps_entries_and_upgrade_is_idempotent(pg_target: PgTarget) -> None:
    s = PostgresStore(pg_target.url, schema=pg_target.schema)
    e = s.write(COUNTER, {"n": 1}, expected_version=0, author="a")
    s.close()
    conn = connect(pg_target.url)
    try:
        assert upgrade(conn, pg_target.schema) == (LATEST_VERSION, LATEST_VERSION)
    finally:
        conn.close()
    s = PostgresStore(pg_target.url, schema=pg_target.schema, upgrade=False)
    try:
        assert s.read(COUNTER) == e and len(s.history(COUNTER)) == 1
    finally:
        s.close()


def test_history_is_append_only(pg_target: PgTarget) -> None:
    import psycopg

    s = PostgresStore(pg_target.url, schema=pg_target.schema)
    s.write(COUNTER, {"n": 1}, expected_version=0, author="a")
    s.close()
    conn = connect(pg_target.url)
    try:
        for stmt in ("UPDATE {s}.history SET author = 'x'", "DELETE FROM {s}.history"):
            with pytest.raises(psycopg.Error, match="append-only"):
                conn.execute(stmt.replace("{s}", f'"{pg_target.schema}"'))
    finally:
        conn.close()


def test_a_schema_from_a_newer_version_is_refused_and_left_alone(pg_target: PgTarget) -> None:
    s = PostgresStore(pg_target.url, schema=pg_target.schema)
    s.write(COUNTER, {"n": 1}, expected_version=0, author="a")
    s.close()
    conn = connect(pg_target.url)
    try:
        conn.execute(f'UPDATE "{pg_target.schema}".schema_version SET version = %s', (LATEST_VERSION + 1,))
        with pytest.raises(StoreUnavailableError) as info:
            PostgresStore(pg_target.url, schema=pg_target.schema)
        assert info.value.code == "schema_too_new" and not info.value.retryable
        assert "upgrade coachboard" in str(info.value)
        row = conn.execute(f'SELECT value FROM "{pg_target.schema}".entries').fetchone()
        assert row == ('{"n":1}',)  # nothing stored was lost or changed
    finally:
        conn.close()


def test_an_outdated_schema_without_upgrade_says_to_run_coach_db_upgrade(pg_target: PgTarget) -> None:
    conn = connect(pg_target.url)
    try:
        conn.execute(f'CREATE SCHEMA "{pg_target.schema}"')
        conn.execute(
            f'CREATE TABLE "{pg_target.schema}".schema_version (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE, '
            "version INTEGER NOT NULL, upgraded_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        conn.execute(f'INSERT INTO "{pg_target.schema}".schema_version (version) VALUES (0)')
    finally:
        conn.close()
    with pytest.raises(StoreUnavailableError) as info:
        PostgresStore(pg_target.url, schema=pg_target.schema, upgrade=False)
    assert info.value.code == "schema_outdated" and "coach db upgrade" in str(info.value)


def test_an_unreachable_server_names_host_port_and_how_to_start_it(free_port: int) -> None:
    with pytest.raises(StoreUnavailableError) as info:
        PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port}/test")
    msg = str(info.value)
    assert info.value.code == "database_unreachable" and info.value.retryable
    assert f"127.0.0.1:{free_port}" in msg and "pg_ctlcluster" in msg and "COACH_DATABASE_URL" in msg


def _with(url: str, **parts: str) -> str:
    """``url`` (postgresql://user@host:port/db) with another user or database."""
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(url)
    netloc = f"{parts.get('user', u.username)}@{u.hostname}:{u.port or 5432}"
    return urlunsplit((u.scheme, netloc, "/" + parts.get("db", u.path.lstrip("/")), u.query, ""))


def test_a_missing_database_says_create_it_not_start_it(pg_target: Any) -> None:
    url = _with(pg_target.url, db="coachboard_no_such_db")
    with pytest.raises(StoreUnavailableError) as info:
        PostgresStore(url)
    msg = str(info.value)
    assert info.value.code == "database_missing" and not info.value.retryable
    assert "createdb coachboard_no_such_db" in msg and "start it" not in msg


def test_a_refused_login_names_the_fix(pg_target: Any) -> None:
    url = _with(pg_target.url, user="coachboard_no_such_role")
    with pytest.raises(StoreUnavailableError) as info:
        PostgresStore(url)
    assert info.value.code == "login_refused" and "user or password" in str(info.value)


@pytest.mark.parametrize("url", ["sqlite:///x", "http://127.0.0.1:5432/test", ""])
def test_a_url_that_is_not_postgresql_is_refused(url: str) -> None:
    with pytest.raises(InvalidValueError, match="not a PostgreSQL URL"):
        PostgresStore(url)


@pytest.mark.parametrize("schema", ["", "Bad", "1abc", "pg_x", "a-b", "a;drop", "x" * 64])
def test_bad_schema_names_are_refused(schema: str) -> None:
    with pytest.raises(InvalidValueError, match="schema name"):
        PostgresStore("postgresql://postgres@127.0.0.1:5432/test", schema=schema)
