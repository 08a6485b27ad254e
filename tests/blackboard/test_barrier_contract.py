"""The ONE contract suite of the per-turn barrier (the Barrier protocol), run against the file-lock
Sequencer (woken by watchfiles, and by polling) and PgBarrier (LISTEN/NOTIFY plus re-checks), in one
process and across real processes."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blackboard import (
    InvalidKeyError,
    InvalidValueError,
    LockTimeoutError,
    TurnAlreadyOpenError,
    TurnNotOpenError,
    turn_entry_key,
)
from blackboard._barrier import Barrier

from . import _barrier_workers as bw
from . import _workers

CTX = _workers.context()
SLACK_S = 0.35  # allowed lateness past a deadline on a shared 2-core machine


@pytest.fixture(params=["filelock-watchfiles", "filelock-polling", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> bw.Spec:
    if request.param == "postgres":
        target = request.getfixturevalue("pg_target")
        return ("pg", target.url, target.schema)
    return ("file", str(tmp_path), request.param == "filelock-watchfiles")


def _close(b: Barrier) -> None:
    if hasattr(b, "close"):  # PgBarrier's connections; the file-lock Sequencer holds none
        b.close()


@pytest.fixture
def seq(spec: bw.Spec) -> Iterator[Barrier]:
    b = bw.make_barrier(spec)
    yield b
    _close(b)


def test_implements_protocol(seq: Barrier) -> None:
    assert isinstance(seq, Barrier)


def test_wait_returns_at_once_when_required_agents_already_wrote(seq: Barrier) -> None:
    seq.open_turn("u/s/t1")
    seq.mark_written("u/s/t1", "shadow")
    seq.mark_written("u/s/t1", "shadow")  # idempotent
    r = seq.wait("u/s/t1", ["shadow"], 5.0)
    assert (r.arrived, r.missing, r.timed_out) == (("shadow",), (), False)
    assert r.waited_s < 1.0
    assert seq.is_open("u/s/t1") and seq.arrived("u/s/t1", ["persona", "shadow"]) == ["shadow"]


def test_required_agents_are_always_waited_for(seq: Barrier) -> None:
    seq.open_turn("u/s/t1", required=("shadow", "stability"))
    seq.mark_written("u/s/t1", "persona")
    r = seq.wait("u/s/t1", ["persona"], 0.05)
    assert r.arrived == ("persona",) and set(r.missing) == {"shadow", "stability"} and r.timed_out


def test_missing_writer_times_out_within_deadline_plus_slack(seq: Barrier) -> None:
    seq.open_turn("u/s/t1")
    t0 = time.monotonic()
    r = seq.wait("u/s/t1", ["shadow", "persona"], 0.3)
    elapsed = time.monotonic() - t0
    assert r.missing == ("shadow", "persona") and r.arrived == () and r.timed_out
    assert 0.3 <= elapsed <= 0.3 + SLACK_S


def test_waiter_wakes_when_another_thread_marks(seq: Barrier) -> None:
    seq.open_turn("u/s/t1")
    go = threading.Event()

    def writer() -> None:
        go.wait(5)
        seq.mark_written("u/s/t1", "shadow")

    th = threading.Thread(target=writer)
    th.start()
    go.set()
    r = seq.wait("u/s/t1", ["shadow"], 10.0)
    th.join()
    assert r.arrived == ("shadow",) and not r.timed_out and r.waited_s < 2.0


def test_reopen_is_an_error_not_a_reset(seq: Barrier) -> None:
    seq.open_turn("u/s/t1")
    seq.mark_written("u/s/t1", "shadow")
    with pytest.raises(TurnAlreadyOpenError):
        seq.open_turn("u/s/t1", required=("persona",))
    assert seq.wait("u/s/t1", [], 0).arrived == ("shadow",)  # state kept


def test_unopened_turns_are_refused(seq: Barrier) -> None:
    with pytest.raises(TurnNotOpenError):
        seq.mark_written("u/s/nope", "shadow")
    with pytest.raises(TurnNotOpenError):
        seq.wait("u/s/nope", ["shadow"], 0.1)
    assert not seq.is_open("u/s/nope")


@pytest.mark.parametrize("turn_id", ["", "../x", "u/../t", "a/b/c/d/e", "u/s t", "u//t"])
def test_bad_turn_ids_are_refused(seq: Barrier, turn_id: str) -> None:
    with pytest.raises(InvalidKeyError):
        seq.open_turn(turn_id)


def test_bad_arguments_are_refused(seq: Barrier) -> None:
    seq.open_turn("u/s/t1")
    with pytest.raises(InvalidValueError):
        seq.wait("u/s/t1", ["shadow"], -1)
    with pytest.raises(InvalidValueError):
        seq.wait("u/s/t1", "shadow", 1)
    with pytest.raises(InvalidValueError):
        seq.open_turn("u/s/t2", required="shadow")
    with pytest.raises(InvalidKeyError):
        seq.mark_written("u/s/t1", "../shadow")


def test_turn_ids_last_change_and_remove(seq: Barrier) -> None:
    before = time.time()
    for t in ("t2", "t1"):
        seq.open_turn(f"u/s/{t}")
    seq.open_turn("u/s2/t1")
    assert seq.turn_ids("u") == ["u/s", "u/s2"]
    assert seq.turn_ids("u/s") == ["u/s/t1", "u/s/t2"] and seq.turn_ids("nobody") == []
    changed = seq.last_change("u/s/t1")
    assert changed is not None and changed >= before - 2
    assert seq.last_change("u/s/none") is None
    assert seq.remove_turn("u/s/t1") is True and seq.remove_turn("u/s/t1") is False
    assert not seq.is_open("u/s/t1") and seq.turn_ids("u/s") == ["u/s/t2"]
    with pytest.raises(TurnNotOpenError):
        seq.mark_written("u/s/t1", "shadow")


@pytest.mark.e2e
def test_reopen_from_another_process_is_refused(spec: bw.Spec) -> None:
    first = bw.make_barrier(spec)
    first.open_turn("u/s/t1")
    _close(first)
    out: Any = CTX.Queue()
    p = CTX.Process(target=bw.try_open_turn, args=(spec, "u/s/t1", out))
    p.start()
    assert out.get(timeout=60) == "turn_already_open"
    p.join(10)


@pytest.mark.e2e
def test_a_killed_writer_blocks_nobody(spec: bw.Spec) -> None:
    seq = bw.make_barrier(spec, lock_timeout_s=0.2)
    seq.open_turn("u/s/t1")
    ready = CTX.Event()
    holder = CTX.Process(target=bw.hold_turn, args=(spec, "u/s/t1", ready))
    holder.start()
    assert ready.wait(60)
    with pytest.raises(LockTimeoutError):  # really held
        seq.mark_written("u/s/t1", "shadow")
    os.kill(holder.pid, signal.SIGKILL)  # type: ignore[arg-type]
    holder.join(10)
    patient = bw.make_barrier(spec, lock_timeout_s=10)
    patient.mark_written("u/s/t1", "shadow")  # the dead holder's lock does not block
    assert patient.wait("u/s/t1", ["shadow"], 1).arrived == ("shadow",)
    _close(patient)
    _close(seq)


def _results(out: Any, expected: int) -> dict[tuple[str, int], dict[str, Any]]:
    got: dict[tuple[str, int], dict[str, Any]] = {}
    while len(got) < expected:
        who, trial, data = out.get(timeout=60)
        assert "error" not in data, data.get("error")
        got[(who, trial)] = data
    return got


@pytest.mark.e2e
def test_collectors_wait_for_shadow_and_exactly_one_of_two_racing_collectors_proceeds(spec: bw.Spec) -> None:
    board = bw.make_board(spec)
    shadow_in: Any = CTX.Queue()
    coll_in: dict[str, Any] = {"c1": CTX.Queue(), "c2": CTX.Queue()}
    out: Any = CTX.Queue()
    procs = [CTX.Process(target=bw.shadow_agent, args=(spec, shadow_in, out))]
    procs += [
        CTX.Process(target=bw.collector_agent, args=(spec, name, q, out)) for name, q in coll_in.items()
    ]
    for p in procs:
        p.start()
    rng = random.Random(2026)
    trials = 120
    try:
        for trial in range(trials):
            turn = board.begin_turn("u", "s")
            shadow_in.put((trial, turn, rng.uniform(0, 0.008)))
            for q in coll_in.values():
                q.put((trial, turn, rng.uniform(0, 0.008), 20.0))
            got = _results(out, 3)
            shadow, colls = got[("shadow", trial)], [got[(n, trial)] for n in coll_in]
            assert [c["won"] for c in colls].count(True) == 1, f"trial {trial}: not exactly one collector"
            winner = next(c for c in colls if c["won"])
            assert shadow["seq"] < winner["seq"], f"trial {trial}: collector committed before Shadow"
            for c in colls:
                assert c["arrived"] == ["shadow"] and not c["timed_out"], trial
                assert "shadow" in c["present"], trial  # the collector actually read Shadow's entry
            s_hist = board.store.history(turn_entry_key("u", "s", turn, "shadow"))
            c_hist = board.store.history(turn_entry_key("u", "s", turn, "collected"))
            assert len(c_hist) == 1 and s_hist[0].seq < c_hist[0].seq
        # a Shadow that never writes: "missing" within the deadline plus a small slack; still one claim
        for trial in range(trials, trials + 3):
            turn = board.begin_turn("u", "s")
            for q in coll_in.values():
                q.put((trial, turn, 0.0, 0.25))
            colls = list(_results(out, 2).values())
            assert [c["won"] for c in colls].count(True) == 1
            for c in colls:
                assert c["missing"] == ["shadow"] and c["timed_out"] and "shadow" not in c["present"]
                assert 0.25 <= c["elapsed"] <= 0.25 + SLACK_S
    finally:
        shadow_in.put(None)
        for q in coll_in.values():
            q.put(None)
        for p in procs:
            p.join(30)
        board.close()
    assert [p.exitcode for p in procs] == [0, 0, 0]
