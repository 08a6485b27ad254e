"""Removing finished turns' sequencer directories (real filesystem, real file locks, real SQLite):
``Sequencer.remove_turn`` under the turn's lock, and ``Blackboard.prune_turn_barriers`` for closed
sessions only, never a turn that may still be running."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from blackboard import Blackboard, LockTimeoutError, Sequencer, TurnNotOpenError, TurnRecord, session_key
from blackboard._blackboard import STALE_TURN_S

from . import _workers

CTX = _workers.context()


def test_remove_turn_deletes_the_turn_and_its_empty_session_dir_only(tmp_path: Path) -> None:
    seq = Sequencer(tmp_path)
    for t in ("u/s1/t1", "u/s1/t2", "u/s2/t1"):
        seq.open_turn(t)
    seq.mark_written("u/s1/t1", "shadow")
    assert seq.turn_ids("u") == ["u/s1", "u/s2"] and seq.turn_ids("u/s1") == ["u/s1/t1", "u/s1/t2"]
    assert seq.remove_turn("u/s1/t1") is True
    assert not seq.turn_dir("u/s1/t1").exists() and not seq.is_open("u/s1/t1")
    assert seq.is_open("u/s1/t2") and seq.turn_dir("u/s1").is_dir()  # the session still has a turn
    assert seq.remove_turn("u/s1/t1") is False  # already gone
    assert seq.remove_turn("u/s1/t2") is True
    assert not seq.turn_dir("u/s1").exists()  # empty session dir removed with its last turn
    assert seq.is_open("u/s2/t1") and seq.turn_dir("u").is_dir()  # other sessions, the user dir: kept
    assert seq.turn_ids("u/s1") == [] and seq.last_change("u/s1/t1") is None


def test_a_removed_turn_refuses_marks_and_waits_and_is_not_recreated(tmp_path: Path) -> None:
    seq = Sequencer(tmp_path, poll_interval_s=0.01)
    seq.open_turn("u/s/t1")
    seq.remove_turn("u/s/t1")
    with pytest.raises(TurnNotOpenError):
        seq.mark_written("u/s/t1", "shadow")
    with pytest.raises(TurnNotOpenError):
        seq.wait("u/s/t1", ["shadow"], 0.1)
    assert not seq.turn_dir("u/s/t1").exists()


def test_mark_written_racing_a_removal_rechecks_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn is removed between mark_written's first check and its lock: taking the lock recreates the
    directory (filelock creates the lock file's parent); the re-check under the lock removes it again."""
    seq = Sequencer(tmp_path)
    seq.open_turn("u/s/t1")
    seq.remove_turn("u/s/t1")
    monkeypatch.setattr(
        Sequencer, "_required", lambda self, d, turn_id: ["shadow"]
    )  # the check passed before
    with pytest.raises(TurnNotOpenError, match="was removed"):
        seq.mark_written("u/s/t1", "persona")
    assert not seq.turn_dir("u/s/t1").exists()


@pytest.mark.e2e
def test_removal_waits_for_a_process_holding_the_lock(tmp_path: Path) -> None:
    seq = Sequencer(tmp_path, lock_timeout_s=0.2)
    seq.open_turn("u/s/t1")
    ready = CTX.Event()
    holder = CTX.Process(target=_workers.hold_lock, args=(str(seq.turn_dir("u/s/t1") / "lock"), ready))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(LockTimeoutError):
            seq.remove_turn("u/s/t1")
        assert seq.is_open("u/s/t1")  # nothing removed while another process held the lock
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # type: ignore[arg-type]
        holder.join(10)
    assert seq.remove_turn("u/s/t1") and not seq.turn_dir("u/s/t1").exists()


@pytest.mark.e2e
def test_a_writer_and_a_remover_waiting_on_the_same_lock_leave_no_directory(tmp_path: Path) -> None:
    """Both wait on a lock another process holds; whichever gets it first, the turn ends removed and the
    writer either marked before the removal or got TurnNotOpenError (never a recreated directory)."""
    seq = Sequencer(tmp_path, lock_timeout_s=30, poll_interval_s=0.01)
    seq.open_turn("u/s/t1")
    ready = CTX.Event()
    holder = CTX.Process(target=_workers.hold_lock, args=(str(seq.turn_dir("u/s/t1") / "lock"), ready))
    holder.start()
    outcome: dict[str, Any] = {}

    def write() -> None:
        try:
            Sequencer(tmp_path, lock_timeout_s=30).mark_written("u/s/t1", "shadow")
            outcome["writer"] = "marked"
        except TurnNotOpenError:
            outcome["writer"] = "turn_not_open"

    def remove() -> None:
        outcome["remover"] = Sequencer(tmp_path, lock_timeout_s=30).remove_turn("u/s/t1")

    try:
        assert ready.wait(60)
        threads = [threading.Thread(target=write), threading.Thread(target=remove)]
        for th in threads:
            th.start()
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # type: ignore[arg-type]
        holder.join(10)
    for th in threads:
        th.join(60)
    assert outcome["remover"] is True and outcome["writer"] in ("marked", "turn_not_open")
    assert not seq.turn_dir("u/s/t1").exists() and seq.turn_ids("u/s") == []


# -- Blackboard.prune_turn_barriers ------------------------------------------------------------------


def _finish(board: Blackboard, user: str, session: str, turn: str) -> None:
    board.write_turn_record(TurnRecord(user=user, session=session, turn=turn, finished_at=time.time()))


def _close(board: Blackboard, user: str, session: str) -> None:
    cur = board.store.read(session_key(user, session))
    assert cur is not None
    board.store.write(
        session_key(user, session),
        {**cur.value, "closed_at": time.time()},
        expected_version=cur.version,
        author="test",
    )


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    for p in [path, *path.iterdir()]:
        os.utime(p, (then, then))


def test_prune_removes_finished_turns_of_closed_sessions_and_keeps_running_ones(tmp_path: Path) -> None:
    board = Blackboard(tmp_path)
    try:
        seq = board.sequencer
        t1, t2 = board.begin_turn("ana", "s1"), board.begin_turn("ana", "s1")
        _finish(board, "ana", "s1", t1)
        open_turn = board.begin_turn("ana", "s2")  # an open session: never touched, finished or not
        _finish(board, "ana", "s2", open_turn)
        other = board.begin_turn("bob", "s1")
        _finish(board, "bob", "s1", other)
        _close(board, "bob", "s1")

        assert board.prune_turn_barriers("ana") == ((), ())  # s1 is not closed yet
        _close(board, "ana", "s1")
        res = board.prune_turn_barriers("ana")
        assert res.removed == (f"s1/{t1}",) and res.kept == (f"s1/{t2}",)  # t2 may still be running
        assert not seq.turn_dir(f"ana/s1/{t1}").exists() and seq.is_open(f"ana/s1/{t2}")
        assert seq.is_open(f"ana/s2/{open_turn}") and seq.is_open(f"bob/s1/{other}")  # other user untouched

        _age(seq.turn_dir(f"ana/s1/{t2}"), STALE_TURN_S - 60)
        assert board.prune_turn_barriers("ana").kept == (f"s1/{t2}",)  # not stale yet
        _age(seq.turn_dir(f"ana/s1/{t2}"), STALE_TURN_S + 60)  # abandoned: its process died
        assert board.prune_turn_barriers("ana") == ((f"s1/{t2}",), ())
        assert not seq.turn_dir("ana/s1").exists() and seq.turn_ids("ana") == ["ana/s2"]
        # the store is not changed: every entry is still readable
        assert set(board.read_turn("ana", "s1", t1)) == {"meta", "record"} and board.read_turn(
            "ana", "s1", t2
        )
        assert board.prune_turn_barriers("ana") == ((), ())  # idempotent
    finally:
        board.close()


def test_prune_refuses_a_negative_stale_bound(tmp_path: Path) -> None:
    from blackboard import InvalidValueError

    board = Blackboard(tmp_path)
    try:
        with pytest.raises(InvalidValueError):
            board.prune_turn_barriers("ana", stale_after_s=-1)
    finally:
        board.close()
