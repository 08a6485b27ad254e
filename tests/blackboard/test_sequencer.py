"""Sequencer beyond the barrier contract suite (``test_barrier_contract.py``): how the file-lock barrier is
woken (watchfiles, and polling when watchfiles fails)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from blackboard import Sequencer


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
