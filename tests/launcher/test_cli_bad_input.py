"""Bad input to ``coach run`` / ``coach session close``: a clear error and exit 2, never a traceback, and
nothing stored is lost. Found by the fresh-eyes pass (each case failed before its fix)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launcher.cli import app


@pytest.fixture
def no_runtime(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The runtime must not be started for bad input; records it if it is."""
    started: list[Any] = []

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        started.append(config)
        raise AssertionError("the runtime must not start")
        yield  # pragma: no cover

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    return started


def _config(tmp_path: Path, data_dir: Path) -> Path:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data_dir}"\n')
    return cfg


@pytest.mark.parametrize("message", ["", "   ", "\n\t"])
def test_run_refuses_an_empty_message(tmp_path: Path, no_runtime: list[Any], message: str) -> None:
    res = CliRunner().invoke(
        app, ["run", message, "-u", "u1", "-s", "s1", "--config", str(_config(tmp_path, tmp_path / "d"))]
    )
    assert res.exit_code == 2, res.output
    assert "MESSAGE is empty" in res.output and not no_runtime
    assert res.exception is None or isinstance(res.exception, SystemExit)


@pytest.mark.parametrize("command", [["run", "hello"], ["session", "close"]])
def test_data_dir_that_is_a_file_is_a_clear_error(
    tmp_path: Path, no_runtime: list[Any], command: list[str]
) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("keep me")
    for data_dir in (a_file, a_file / "sub"):
        res = CliRunner().invoke(
            app, [*command, "-u", "u1", "-s", "s1", "--config", str(_config(tmp_path, data_dir))]
        )
        assert res.exit_code == 2, res.output
        assert isinstance(res.exception, SystemExit), res.exception
        assert (
            f"the data directory {data_dir} cannot be used" in res.output and "COACH_DATA_DIR" in res.output
        )
    assert a_file.read_text() == "keep me"


@pytest.mark.parametrize("command", [["run", "hello"], ["session", "close"]])
def test_corrupt_blackboard_is_a_clear_error_and_left_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    junk = b"not a database" * 400
    (data / "blackboard.sqlite3").write_bytes(junk)

    @contextlib.asynccontextmanager
    async def real_board_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        from blackboard import Blackboard  # what coach_runtime opens first

        board = Blackboard(config.data.dir)
        try:
            yield None
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", real_board_runtime)
    res = CliRunner().invoke(
        app, [*command, "-u", "u1", "-s", "s1", "--config", str(_config(tmp_path, data))]
    )
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit), res.exception
    assert "store_unavailable" in res.output and "move it aside" in res.output
    assert (data / "blackboard.sqlite3").read_bytes() == junk


MARKUP = "Try [bold]this[/bold], [/x] and [link=http://a]x[/link] \\[ok] [red]"


def test_model_text_with_rich_markup_is_printed_verbatim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model reply or synthesis is text: brackets must be shown as written, and a stray closing tag
    ("[/x]") must not crash the command after the turn (rich raised MarkupError)."""
    from blackboard import Blackboard
    from launcher.pipeline.supervisor import Supervisor
    from tests.launcher.fakes import FakeRunner, fake_screen, specs

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        board = Blackboard(config.data.dir)
        runner = FakeRunner(board, behaviours={"coach": lambda inv, n: {"reply": MARKUP}}, pineal_text=MARKUP)
        try:
            yield type(
                "RT", (), {"supervisor": Supervisor(board, runner, lambda: specs(), screen=fake_screen)}
            )()
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    res = CliRunner().invoke(
        app,
        ["run", "hello", "-u", "u1", "-s", "s1", "--config", str(_config(tmp_path, tmp_path / "d"))],
        env={"COLUMNS": "400"},
    )
    assert res.exit_code == 0, (res.output, res.exception)
    assert f"Coach: {MARKUP}" in res.output
    assert f"Synthesis: {MARKUP}" in res.output


def test_errors_with_brackets_are_printed_verbatim(tmp_path: Path) -> None:
    """``[agents] dir`` in an error is text; rich markup used to swallow it ("set  dir in coach.toml")."""
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n[agents]\ndir = "{tmp_path / "no-agents"}"\n')
    res = CliRunner().invoke(
        app, ["run", "hello", "-u", "u1", "-s", "s1", "--config", str(cfg)], env={"COLUMNS": "400"}
    )
    assert res.exit_code == 2, res.output
    assert "set [agents] dir in coach.toml" in res.output


def test_a_turn_where_no_agent_reached_the_model_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Model server down: the fallback reply and synthesis look like coaching; stderr must say they are
    fallbacks and name the upstream URL (it used to exit 0 with only 'HTTP 529' in a table cell)."""
    from blackboard import Blackboard
    from launcher.pipeline.supervisor import Supervisor
    from tests.launcher.fakes import FakeRunner, fake_screen, specs

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        board = Blackboard(config.data.dir)
        runner = FakeRunner(
            board,
            behaviours={
                a: (lambda inv, n: "error")
                for a in ("coach", "shadow", "persona", "plasticity", "stability", "pineal")
            },
        )
        try:
            yield type(
                "RT", (), {"supervisor": Supervisor(board, runner, lambda: specs(), screen=fake_screen)}
            )()
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n[upstream]\nurl = "http://127.0.0.1:1"\n')
    res = CliRunner().invoke(
        app, ["run", "hello", "-u", "u1", "-s", "s1", "--json", "--config", str(cfg)], env={"COLUMNS": "400"}
    )
    assert res.exit_code == 0, res.output
    assert "warning: no agent got an answer from the model (http://127.0.0.1:1)" in res.output
    assert "COACH_UPSTREAM_URL" in res.output
