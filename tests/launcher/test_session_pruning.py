"""Closing a session removes its finished turns' sequencer directories (``<data>/sequencer/<user>/<session>/``),
keeps a turn that is still running until a later close, and never fails the close over it. Real
supervisor, real SQLite blackboard and file-lock sequencer on tmp_path; the agent runner is the fake at
its boundary."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from blackboard import Blackboard, TurnRecord
from launcher.pipeline.sessions import close_session
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import FakeRunner, fake_screen, specs

pytestmark = pytest.mark.anyio


def _sup(board: Blackboard) -> tuple[Supervisor, FakeRunner]:
    runner = FakeRunner(board)
    s = specs()
    return Supervisor(board, runner, lambda: s, screen=fake_screen), runner


async def test_close_removes_the_sessions_turn_directories(board: Blackboard, tmp_path: Path) -> None:
    sup, runner = _sup(board)
    first = await sup.run_turn("ana", "s1", "I want to run more")
    second = await sup.run_turn("ana", "s1", "I ran twice")
    other = await sup.run_turn("ana", "s2", "a session that stays open")
    seq_dir = tmp_path / "data" / "sequencer" / "ana"
    assert (seq_dir / "s1" / first.turn_id / "state.json").is_file()

    res = await close_session(board, "ana", "s1", runner=runner)
    assert res.pruned_turns == (f"s1/{first.turn_id}", f"s1/{second.turn_id}")
    assert not (seq_dir / "s1").exists()
    assert (seq_dir / "s2" / other.turn_id / "state.json").is_file()  # the open session keeps its turns
    # the blackboard itself is untouched: the turns' entries are still there
    assert {"record", "coach", "pineal"} <= set(board.read_turn("ana", "s1", first.turn_id))
    again = await close_session(board, "ana", "s1")
    assert again.already_closed and again.pruned_turns == ()


async def test_a_turn_still_running_is_kept_until_a_later_close(board: Blackboard, tmp_path: Path) -> None:
    sup, _ = _sup(board)
    await sup.run_turn("ana", "s1", "I want to run more")
    running = board.begin_turn("ana", "s1")  # begun (e.g. by another process), no record yet
    res = await close_session(board, "ana", "s1")
    assert len(res.pruned_turns) == 1 and board.sequencer.is_open(f"ana/s1/{running}")
    board.write_turn_record(
        TurnRecord(user="ana", session="s1", turn=running)
    )  # it ends (the supervisor's record)
    await sup.run_turn("ana", "s2", "next session")
    res2 = await close_session(board, "ana", "s2")  # a later close of any session of the user
    assert (
        f"s1/{running}" in res2.pruned_turns and not (tmp_path / "data" / "sequencer" / "ana" / "s1").exists()
    )


async def test_a_pruning_failure_never_fails_the_close(
    board: Blackboard, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sup, _ = _sup(board)
    turn = await sup.run_turn("ana", "s1", "I want to run more")

    def broken(user: str, **kw: object) -> object:
        raise PermissionError(13, "Permission denied", "sequencer/ana/s1")

    monkeypatch.setattr(board, "prune_turn_barriers", broken)
    with caplog.at_level(logging.WARNING, logger="launcher.pipeline.sessions"):
        res = await close_session(board, "ana", "s1")
    assert not res.already_closed and res.profile_version == 1 and res.pruned_turns == ()
    assert "next session close retries" in caplog.text and "run more" not in caplog.text
    assert board.sequencer.is_open(f"ana/s1/{turn.turn_id}")
