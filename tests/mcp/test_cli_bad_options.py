"""``coach mcp`` refuses bad command-line options with one plain line naming the option and exit 2,
never a traceback or a raw pydantic dump (fresh-eyes pass; each failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from launcher.cli import app


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--port", "99999"],
            "invalid option --port: Input should be less than or equal to 65535 (got 99999)",
        ),
        (["--port", "0", "--path", "nope"], "invalid option --path: String should match pattern"),
        (["--port", "0", "--log-level", "chatty"], "--log-level 'chatty' is not a log level"),
    ],
)
def test_bad_option_exits_2_with_one_plain_line(tmp_path: Path, args: list[str], expected: str) -> None:
    r = CliRunner().invoke(
        app, ["mcp", "--http", "--data-dir", str(tmp_path / "d"), *args], env={"COLUMNS": "400"}
    )
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "errors.pydantic.dev" not in r.output and "validation error" not in r.output
    assert expected in r.output
    assert not (tmp_path / "d").exists()  # refused before the blackboard is opened


def test_tilde_data_dir_is_the_home_folder_as_in_the_other_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_server.cli import resolve_data_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COACH_DATA_DIR", "~/coach-data")
    assert resolve_data_dir(None, None) == tmp_path / "coach-data"


def test_http_reads_coach_toml_of_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[mcp]`` and ``[data] dir`` of ./coach.toml apply without --config (README, Configuration); they
    were ignored, so ``coach mcp --http`` served ./.coachboard/data on port 8765 instead."""
    import socket

    monkeypatch.delenv("COACH_DATA_DIR", raising=False)
    monkeypatch.delenv("COACH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        (tmp_path / "coach.toml").write_text(f'[data]\ndir = "{tmp_path / "board"}"\n[mcp]\nport = {port}\n')
        r = CliRunner().invoke(app, ["mcp", "--http"], env={"COLUMNS": "400"})
    assert r.exit_code != 0 and f"cannot listen on 127.0.0.1:{port}" in r.output, r.output
    assert (tmp_path / "board").is_dir() and not (tmp_path / ".coachboard").exists()


def test_coach_config_naming_no_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COACH_CONFIG", str(tmp_path / "missing.toml"))
    r = CliRunner().invoke(app, ["mcp", "--http", "--data-dir", str(tmp_path / "d")], env={"COLUMNS": "400"})
    assert r.exit_code == 2 and "COACH_CONFIG=" in r.output and "does not exist" in r.output, r.output
