"""``launcher.cli._common``: the helpers every ``coach`` subcommand uses to refuse bad input (exit 2 with
one plain error line, before anything starts) and to unwrap a runtime's exception group."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from launcher.cli._common import check_ids, check_session_open, check_user, load_config_or_exit, run_async


def test_check_ids_and_check_user_refuse_bad_key_parts(capsys: pytest.CaptureFixture[str]) -> None:
    check_ids("ana", "s1")
    check_user("ana.b-1")
    with pytest.raises(typer.Exit) as ids:
        check_ids("ana", "../s1")
    assert ids.value.exit_code == 2 and capsys.readouterr().err.startswith("error: --user/--session: ")
    with pytest.raises(typer.Exit) as user:
        check_user("a b")
    assert user.value.exit_code == 2 and capsys.readouterr().err.startswith("error: --user: ")


def test_load_config_or_exit_loads_or_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "coach.toml"
    good.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n')
    assert Path(load_config_or_exit(good).data.dir) == tmp_path / "d"
    bad = tmp_path / "bad.toml"
    bad.write_text("[data\n")
    with pytest.raises(typer.Exit) as exc:
        load_config_or_exit(bad)
    assert exc.value.exit_code == 2 and capsys.readouterr().err.startswith("error: ")


def test_check_session_open_refuses_a_closed_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    from blackboard import Blackboard
    from launcher.pipeline.sessions import close_session

    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n')
    config = load_config_or_exit(cfg)
    (tmp_path / "d").mkdir()
    check_session_open(config, "ana", "s1")  # a session with no turns yet is open
    board = Blackboard(tmp_path / "d")
    try:
        board.begin_turn("ana", "s1")
        anyio.run(close_session, board, "ana", "s1")
    finally:
        board.close()
    with pytest.raises(typer.Exit) as exc:
        check_session_open(config, "ana", "s1")
    assert exc.value.exit_code == 2 and "s1" in capsys.readouterr().err


def test_run_async_unwraps_a_single_error_and_keeps_a_group_of_several() -> None:
    async def one() -> None:
        raise ExceptionGroup("tg", [ExceptionGroup("inner", [ValueError("the one")])])

    async def two() -> None:
        raise ExceptionGroup("tg", [ValueError("a"), KeyError("b")])

    async def fine(x: int) -> int:
        return x + 1

    assert run_async(fine, 1) == 2
    with pytest.raises(ValueError, match="the one"):
        run_async(one)
    with pytest.raises(ExceptionGroup):
        run_async(two)
