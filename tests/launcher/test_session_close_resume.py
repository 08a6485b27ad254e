"""A close cut off between closing the session and writing the profile (a full disk, kill -9, Ctrl-C)
is finished by the next close of the same session: the profile gets the session's merge exactly once.
Real supervisor, real SQLite blackboard and sequencer on tmp_path; the agent runner is the fake at its
boundary; the failure is injected at the one step it interrupts."""

from __future__ import annotations

import pytest

import launcher.pipeline.sessions as sessions
from blackboard import Blackboard, SessionClosedError, StoreUnavailableError, session_key
from launcher.errors import SessionError
from launcher.pipeline.sessions import close_session
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import FakeRunner, fake_screen, specs

pytestmark = pytest.mark.anyio


async def _one_turn(board: Blackboard, user: str = "ana", session: str = "s1") -> None:
    s = specs()
    await Supervisor(board, FakeRunner(board), lambda: s, screen=fake_screen).run_turn(
        user, session, "I want to run more"
    )


def _disk_full(*_a: object, **_k: object) -> None:
    raise StoreUnavailableError("database or disk is full")


async def test_close_cut_off_before_the_profile_write_is_finished_by_the_next_close(
    board: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _one_turn(board)
    monkeypatch.setattr(board, "update_profile", _disk_full)
    with pytest.raises(SessionError):
        await close_session(board, "ana", "s1")
    assert board.read_profile("ana") is None
    with pytest.raises(SessionClosedError):  # closed all the same: it takes no new turns
        board.begin_turn("ana", "s1")
    monkeypatch.undo()

    res = await close_session(board, "ana", "s1")
    assert not res.already_closed and res.merged == ("persona", "shadow") and res.profile_version == 1
    prof = board.read_profile("ana")
    assert prof is not None and prof.sessions_seen == 1 and prof.last_session == "s1"
    again = await close_session(board, "ana", "s1")
    assert again.already_closed and again.profile_version == 1


async def test_close_cut_off_after_the_profile_write_does_not_merge_twice(
    board: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _one_turn(board)
    monkeypatch.setattr(sessions, "_mark_compacted", _disk_full)
    with pytest.raises(SessionError):
        await close_session(board, "ana", "s1")
    profile = board.store.read("users/ana/profile")
    assert profile is not None and profile.version == 1
    monkeypatch.undo()

    res = await close_session(board, "ana", "s1")
    assert not res.already_closed and res.profile_version == 1  # the merge is not done again
    assert board.store.read(session_key("ana", "s1")).value["compacted"] is True  # type: ignore[union-attr]
    assert (await close_session(board, "ana", "s1")).already_closed


async def test_a_session_closed_before_the_marker_existed_counts_as_compacted(board: Blackboard) -> None:
    await _one_turn(board)
    key = session_key("ana", "s1")
    cur = board.store.read(key)
    assert cur is not None
    board.store.write(key, {**cur.value, "closed_at": 1.0}, expected_version=cur.version, author="test")
    res = await close_session(board, "ana", "s1")
    assert res.already_closed and res.profile_version == 0 and board.read_profile("ana") is None
