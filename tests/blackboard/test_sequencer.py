"""Sequencer: per-turn barrier on file locks, in one process and across real processes."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from blackboard import (
    InvalidKeyError,
    InvalidValueError,
    LockTimeoutError,
    Sequencer,
    TurnAlreadyOpenError,
    TurnNotOpenError,
    turn_entry_key,
)

from . import _workers

CTX = _workers.context()
SLACK_S = 0.35  # allowed lateness past a deadline on a shared 2-core machine


@pytest.fixture(params=[True, False], ids=["watchfiles", "polling"])
def seq(request: pytest.FixtureRequest, tmp_path: Path) -> Sequencer:
    return Sequencer(tmp_path, use_watchfiles=request.param, poll_interval_s=0.01)


def test_wait_returns_at_once_when_required_agents_already_wrote(seq: Sequencer) -> None:
    seq.open_turn("u/s/t1")
    seq.mark_written("u/s/t1", "shadow")
    seq.mark_written("u/s/t1", "shadow")  # idempotent
    r = seq.wait("u/s/t1", ["shadow"], 5.0)
    assert (r.arrived, r.missing, r.timed_out) == (("shadow",), (), False)
    assert r.waited_s < 1.0


def test_required_agents_are_always_waited_for(seq: Sequencer) -> None:
    seq.open_turn("u/s/t1", required=("shadow", "stability"))
    seq.mark_written("u/s/t1", "persona")
    r = seq.wait("u/s/t1", ["persona"], 0.05)
    assert r.arrived == ("persona",) and set(r.missing) == {"shadow", "stability"} and r.timed_out


def test_missing_writer_times_out_within_deadline_plus_slack(seq: Sequencer) -> None:
    seq.open_turn("u/s/t1")
    t0 = time.monotonic()
    r = seq.wait("u/s/t1", ["shadow", "persona"], 0.3)
    elapsed = time.monotonic() - t0
    assert r.missing == ("shadow", "persona") and r.arrived == () and r.timed_out
    assert 0.3 <= elapsed <= 0.3 + SLACK_S


def test_waiter_wakes_when_another_thread_marks(seq: Sequencer) -> None:
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


def test_reopen_is_an_error_not_a_reset(seq: Sequencer) -> None:
    seq.open_turn("u/s/t1")
    seq.mark_written("u/s/t1", "shadow")
    with pytest.raises(TurnAlreadyOpenError):
        seq.open_turn("u/s/t1", required=("persona",))
    assert seq.wait("u/s/t1", [], 0).arrived == ("shadow",)  # state kept


def test_unopened_turns_are_refused(seq: Sequencer) -> None:
    with pytest.raises(TurnNotOpenError):
        seq.mark_written("u/s/nope", "shadow")
    with pytest.raises(TurnNotOpenError):
        seq.wait("u/s/nope", ["shadow"], 0.1)
    assert not seq.is_open("u/s/nope")


@pytest.mark.parametrize("turn_id", ["", "../x", "u/../t", "a/b/c/d/e", "u/s t", "u//t"])
def test_bad_turn_ids_are_refused(seq: Sequencer, turn_id: str) -> None:
    with pytest.raises(InvalidKeyError):
        seq.open_turn(turn_id)


def test_bad_arguments_are_refused(seq: Sequencer) -> None:
    seq.open_turn("u/s/t1")
    with pytest.raises(InvalidValueError):
        seq.wait("u/s/t1", ["shadow"], -1)
    with pytest.raises(InvalidValueError):
        seq.wait("u/s/t1", "shadow", 1)
    with pytest.raises(InvalidKeyError):
        seq.mark_written("u/s/t1", "../shadow")


@pytest.mark.e2e
def test_reopen_from_another_process_is_refused(tmp_path: Path) -> None:
    Sequencer(tmp_path).open_turn("u/s/t1")
    out: Any = CTX.Queue()
    p = CTX.Process(target=_workers.try_open_turn, args=(str(tmp_path), "u/s/t1", out))
    p.start()
    assert out.get(timeout=60) == "turn_already_open"
    p.join(10)


@pytest.mark.e2e
def test_lock_of_a_killed_holder_is_recovered(tmp_path: Path) -> None:
    seq = Sequencer(tmp_path, lock_timeout_s=0.2)
    seq.open_turn("u/s/t1")
    ready = CTX.Event()
    holder = CTX.Process(target=_workers.hold_lock, args=(str(seq.turn_dir("u/s/t1") / "lock"), ready))
    holder.start()
    assert ready.wait(60)
    with pytest.raises(LockTimeoutError):  # really held
        seq.mark_written("u/s/t1", "shadow")
    os.kill(holder.pid, signal.SIGKILL)  # type: ignore[arg-type]
    holder.join(10)
    patient = Sequencer(tmp_path, lock_timeout_s=10)
    patient.mark_written("u/s/t1", "shadow")  # the stale lock does not block
    assert patient.wait("u/s/t1", ["shadow"], 1).arrived == ("shadow",)


def _collect_results(out: Any, expected: int) -> dict[tuple[str, int], dict[str, Any]]:
    got: dict[tuple[str, int], dict[str, Any]] = {}
    while len(got) < expected:
        who, trial, data = out.get(timeout=60)
        assert "error" not in data, data.get("error")
        got[(who, trial)] = data
    return got


@pytest.mark.e2e
def test_collector_never_proceeds_before_shadow_committed_across_processes(tmp_path: Path) -> None:
    board = _workers.fast_board(str(tmp_path))
    shadow_in: Any = CTX.Queue()
    coll_in: Any = CTX.Queue()
    out: Any = CTX.Queue()
    procs = [
        CTX.Process(target=_workers.shadow_agent, args=(str(tmp_path), shadow_in, out)),
        CTX.Process(target=_workers.collector_agent, args=(str(tmp_path), coll_in, out)),
    ]
    for p in procs:
        p.start()
    rng = random.Random(2026)
    trials = 220  # 200 woken by watchfiles, 20 by the polling fallback
    try:
        for trial in range(trials):
            turn = board.begin_turn("u", "s")
            shadow_in.put((trial, turn, rng.uniform(0, 0.008)))
            coll_in.put((trial, turn, rng.uniform(0, 0.008), 20.0, trial < 200))
            got = _collect_results(out, 2)
            shadow, coll = got[("shadow", trial)], got[("collector", trial)]
            assert shadow["seq"] < coll["seq"], f"trial {trial}: collector committed before Shadow"
            assert coll["arrived"] == ["shadow"] and not coll["timed_out"], trial
            assert "shadow" in coll["present"], trial  # the collector actually read Shadow's entry
            # commit order again, from the store's own history
            s_hist = board.store.history(turn_entry_key("u", "s", turn, "shadow"))
            c_hist = board.store.history(turn_entry_key("u", "s", turn, "collected"))
            assert s_hist[0].seq < c_hist[0].seq
        # a Shadow that never writes: "missing" within the deadline plus a small slack
        for trial in range(trials, trials + 4):
            turn = board.begin_turn("u", "s")
            coll_in.put((trial, turn, 0.0, 0.25, trial % 2 == 0))
            coll = _collect_results(out, 1)[("collector", trial)]
            assert coll["missing"] == ["shadow"] and coll["timed_out"]
            assert "shadow" in coll["missing"] and "shadow" not in coll["present"]
            assert 0.25 <= coll["elapsed"] <= 0.25 + SLACK_S
    finally:
        shadow_in.put(None)
        coll_in.put(None)
        for p in procs:
            p.join(30)
        board.close()
    assert [p.exitcode for p in procs] == [0, 0]


def test_watchfiles_wakes_the_waiter_long_before_the_poll_period(tmp_path: Path) -> None:
    seq = Sequencer(tmp_path, use_watchfiles=True, poll_interval_s=3.0)
    seq.open_turn("u/s/t1")

    def writer() -> None:
        threading.Event().wait(0.3)  # simulated agent work, then the write
        seq.mark_written("u/s/t1", "shadow")

    th = threading.Thread(target=writer)
    th.start()
    r = seq.wait("u/s/t1", ["shadow"], 10.0)
    th.join()
    assert r.arrived == ("shadow",)
    assert r.waited_s < 1.5  # a missed inotify event would only be seen at the 3 s re-check


def test_falls_back_to_polling_when_watchfiles_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import watchfiles

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("inotify watch limit reached")

    monkeypatch.setattr(watchfiles, "watch", broken)
    seq = Sequencer(tmp_path, use_watchfiles=True, poll_interval_s=0.01)
    seq.open_turn("u/s/t1")
    th = threading.Thread(target=lambda: (threading.Event().wait(0.1), seq.mark_written("u/s/t1", "shadow")))
    th.start()
    r = seq.wait("u/s/t1", ["shadow"], 5.0)
    th.join()
    assert r.arrived == ("shadow",) and not r.timed_out
