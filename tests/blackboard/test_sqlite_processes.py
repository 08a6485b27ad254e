"""SQLiteStore with real processes: contended CAS increments, SIGKILL mid-write, and file-level checks."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from blackboard import SQLiteStore, StoreUnavailableError, open_store, turn_entry_key

from . import _workers

CTX = _workers.context()
COUNTER = turn_entry_key("u", "s", "t", "counter")


@pytest.mark.e2e
def test_six_processes_cas_increments_end_at_exact_sum(tmp_path: Path) -> None:
    procs, per_proc = 6, 300
    db = str(tmp_path / "bb.sqlite3")
    start = CTX.Barrier(procs)
    out: Any = CTX.Queue()
    workers = [
        CTX.Process(target=_workers.cas_incrementer, args=(db, COUNTER, per_proc, start, out))
        for _ in range(procs)
    ]
    for w in workers:
        w.start()
    reports = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert [r["errors"] for r in reports] == [[]] * procs  # no "database is locked" reached a caller
    assert sum(r["done"] for r in reports) == procs * per_proc
    store = SQLiteStore(db)
    final = store.read(COUNTER)
    assert final is not None
    assert final.value["n"] == procs * per_proc == final.version  # zero lost updates
    hist = store.history(COUNTER)
    assert [h.value["n"] for h in hist] == list(range(1, procs * per_proc + 1))
    assert store.integrity_check() == "ok"
    store.close()


def _check_consistent(db: str) -> int:
    store = SQLiteStore(db)  # opens cleanly after the crash
    try:
        assert store.integrity_check() == "ok"
        counter = store.read(COUNTER)
        if counter is None:
            return 0
        assert counter.value["n"] == counter.version
        assert [h.version for h in store.history(COUNTER)] == list(range(1, counter.version + 1))
        blobs = [e for e in store.list("users/u/sessions/s/turns/") if e.key.endswith("/blob")]
        for e in blobs:
            assert e.value == {"i": e.value["i"], "blob": "y" * 20_000} and e.version == 1
        # each step writes the counter, then that step's blob: the kill may fall between the two
        steps = {e.value["i"] for e in blobs}
        assert steps in (set(range(1, counter.version + 1)), set(range(1, counter.version)))
    finally:
        store.close()
    raw = sqlite3.connect(db)
    try:
        # latest rows match their last history row exactly: no partial entry anywhere
        mismatched = raw.execute(
            "SELECT COUNT(*) FROM entries e WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.seq = e.seq "
            "AND h.key = e.key AND h.version = e.version AND h.value = e.value) OR e.version != "
            "(SELECT MAX(version) FROM history h2 WHERE h2.key = e.key)"
        ).fetchone()[0]
        assert mismatched == 0
        orphans = raw.execute(
            "SELECT COUNT(DISTINCT key) FROM history WHERE key NOT IN (SELECT key FROM entries)"
        )
        assert orphans.fetchone()[0] == 0
    finally:
        raw.close()
    return counter.version


@pytest.mark.e2e
def test_sigkill_in_write_loop_leaves_a_clean_database(tmp_path: Path) -> None:
    db = str(tmp_path / "bb.sqlite3")
    rng = random.Random(7)
    last = 0
    for _round in range(3):
        reached = CTX.Event()
        w = CTX.Process(target=_workers.write_loop, args=(db, COUNTER, rng.randint(20, 60), reached))
        w.start()
        assert reached.wait(60), "writer never reached its report point"
        os.kill(w.pid, signal.SIGKILL)  # type: ignore[arg-type]
        w.join(10)
        assert w.exitcode == -signal.SIGKILL
        version = _check_consistent(db)
        assert version > last  # progress was made and kept
        last = version


def test_reopen_keeps_entries_and_history(tmp_path: Path) -> None:
    s = open_store(tmp_path / "data")
    s.write(COUNTER, {"n": 1}, expected_version=0, author="a")
    s.write(COUNTER, {"n": 2}, expected_version=1, author="a")
    s.close()
    assert (tmp_path / "data" / "blackboard.sqlite3").exists()
    s = open_store(tmp_path / "data")
    assert s.read(COUNTER).value == {"n": 2}  # type: ignore[union-attr]
    assert [h.value["n"] for h in s.history(COUNTER)] == [1, 2]
    s.close()


def test_history_table_is_append_only(tmp_path: Path) -> None:
    db = tmp_path / "bb.sqlite3"
    s = SQLiteStore(db)
    s.write(COUNTER, {"n": 1}, expected_version=0, author="a")
    s.close()
    raw = sqlite3.connect(db)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute("UPDATE history SET value = '{}'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute("DELETE FROM history")
    raw.close()


def test_wal_mode_and_busy_timeout_are_set(tmp_path: Path) -> None:
    db = tmp_path / "bb.sqlite3"
    SQLiteStore(db).close()
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bb.sqlite3"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreUnavailableError) as info:
        SQLiteStore(bad)
    assert "not a usable blackboard database" in str(info.value) and not info.value.retryable
    assert bad.read_bytes() == b"this is not sqlite" * 100  # nothing overwritten


def test_a_directory_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError):
        SQLiteStore(tmp_path)


def test_writer_holding_the_lock_makes_others_wait_not_fail(tmp_path: Path) -> None:
    """A second connection holding the write lock past busy_timeout: the store retries internally and
    reports StoreUnavailableError (retryable) only after its budget -- never a raw 'database is locked'."""
    db = tmp_path / "bb.sqlite3"
    s = SQLiteStore(db, busy_timeout_ms=10, busy_budget_s=0.3)
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreUnavailableError) as info:
        s.write(COUNTER, {"n": 1}, expected_version=0, author="a")
    assert info.value.retryable and "locked" not in str(info.value)
    raw.execute("ROLLBACK")
    assert s.write(COUNTER, {"n": 1}, expected_version=0, author="a").version == 1
    raw.close()
    s.close()
