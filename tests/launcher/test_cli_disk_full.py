"""A full disk under the data directory: ``coach run`` and ``coach session close`` say so, with the fix,
and never advise moving the intact database aside. Before the fix a full disk read
``error (store_unavailable): .../blackboard.sqlite3 is not a usable blackboard database (blackboard
database error: disk I/O error); move it aside or choose another data directory`` at start, and a bare
``blackboard database error: database or disk is full`` (no fix) when a write failed.

The store failure is a real SQLite one (its ``-shm`` index cannot be created: a folder holds the name,
as a full disk makes it fail); the free space is the one test double, at the OS boundary
(``os.statvfs``), since filling a real disk needs a mount."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from blackboard import Blackboard, StoreUnavailableError, session_key
from launcher.cli import app
from launcher.errors import SessionError
from launcher.pipeline._data_dir import LOW_SPACE_BYTES


def _store_with_a_turn(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    board = Blackboard(data)
    try:
        board.begin_turn("u1", "s1")
    finally:
        board.close()
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\n[agents]\nwatch = false\n')
    return data, cfg


def _free_space(monkeypatch: pytest.MonkeyPatch, free_bytes: int) -> None:
    real = os.statvfs

    def statvfs(path: Any) -> Any:
        st = real(path)
        return SimpleNamespace(f_bavail=free_bytes // st.f_frsize, f_frsize=st.f_frsize)

    monkeypatch.setattr(os, "statvfs", statvfs)


def _cli(cfg: Path, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--config", str(cfg)], env={"COLUMNS": "400"})


def _session_still_there(data: Path) -> bool:
    board = Blackboard(data)
    try:
        return board.store.read(session_key("u1", "s1")) is not None
    finally:
        board.close()


@pytest.mark.parametrize(
    "command", [["run", "hi", "-u", "u1", "-s", "s1"], ["session", "close", "-u", "u1", "-s", "s1"]]
)
def test_store_that_cannot_open_on_a_full_disk_says_disk_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    data, cfg = _store_with_a_turn(tmp_path)
    (data / "blackboard.sqlite3-shm").mkdir()  # SQLite cannot create its index: the open fails for real
    _free_space(monkeypatch, 60 * 1024)
    res = _cli(cfg, *command)
    assert res.exit_code == 2, (res.output, res.exception)
    assert isinstance(res.exception, SystemExit)
    assert (
        "error (disk_full): the disk holding the data directory" in res.output
        and "(60 KiB free)" in res.output
    )
    assert "do not move the database aside" in res.output and "Fix: free space there" in res.output
    assert "move it aside or choose" not in res.output
    monkeypatch.undo()
    (data / "blackboard.sqlite3-shm").rmdir()
    assert _session_still_there(data)


def test_store_that_cannot_open_with_free_space_keeps_the_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, cfg = _store_with_a_turn(tmp_path)
    (data / "blackboard.sqlite3-shm").mkdir()
    _free_space(monkeypatch, 10 * LOW_SPACE_BYTES)
    res = _cli(cfg, "run", "hi", "-u", "u1", "-s", "s1")
    assert res.exit_code == 2, (res.output, res.exception)
    assert "error (store_unavailable)" in res.output and "disk_full" not in res.output


def test_session_close_whose_write_fails_on_a_full_disk_says_disk_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store opens, then the compaction's write fails (SQLITE_FULL): close_session wraps the store's
    error in a SessionError, whose text alone ('database or disk is full') gave no fix."""
    _data, cfg = _store_with_a_turn(tmp_path)

    async def failing_close(board: Any, user: str, session: str, **kw: Any) -> Any:
        cause = StoreUnavailableError("blackboard database error: database or disk is full")
        raise SessionError(f"cannot close session {session!r} of user {user!r}: {cause}") from cause

    monkeypatch.setattr("launcher.pipeline.sessions.close_session", failing_close)
    _free_space(monkeypatch, 0)
    res = _cli(cfg, "session", "close", "-u", "u1", "-s", "s1")
    assert res.exit_code == 2, (res.output, res.exception)
    assert "error (disk_full):" in res.output and "(0 KiB free)" in res.output
    assert "database or disk is full" in res.output  # the store's own words stay, after the fix
