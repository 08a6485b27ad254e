"""``coach mcp --config``: an unreadable or invalid file is a plain error with exit 2 (no traceback)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from launcher.cli import app

runner = CliRunner()


def test_config_that_is_not_utf8_exits_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "coach.toml"
    bad.write_bytes(b"\xff\xfe[mcp]\nport = 1\n")
    result = runner.invoke(app, ["mcp", "--http", "--config", str(bad), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert f"cannot read config {bad}" in result.output and "UTF-8" in result.output


def test_invalid_mcp_section_names_the_field_and_value_without_pydantic_noise(tmp_path: Path) -> None:
    bad = tmp_path / "coach.toml"
    bad.write_text("[mcp]\nport = -5\n", encoding="utf-8")
    result = runner.invoke(app, ["mcp", "--http", "--config", str(bad), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 2, result.output
    assert "invalid [mcp] section" in result.output and "port:" in result.output and "-5" in result.output
    assert "errors.pydantic.dev" not in result.output


def test_unknown_key_in_data_section_is_refused_like_other_commands(tmp_path: Path) -> None:
    bad = tmp_path / "coach.toml"
    bad.write_text(f'[data]\ndirr = "{tmp_path / "d"}"\n', encoding="utf-8")
    result = runner.invoke(app, ["mcp", "--http", "--config", str(bad), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 2, result.output
    assert "[data] dirr: unknown key (did you mean 'dir'?)" in result.output
    assert not (tmp_path / "d").exists()


def test_port_in_use_is_a_plain_error_naming_the_port(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = runner.invoke(
            app,
            ["mcp", "--http", "--port", str(port), "--data-dir", str(tmp_path / "d")],
            env={"COACH_MCP_SECRET": "k"},
        )
    assert result.exit_code == 1, result.output  # README: 1 a port is taken (as coach proxy / serve)
    assert isinstance(result.exception, SystemExit), result.exception
    assert f"cannot listen on 127.0.0.1:{port}" in result.output and "--port 0" in result.output


def test_session_mode_with_a_data_dir_that_is_a_file_exits_2_plainly(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("keep me")
    result = runner.invoke(
        app,
        ["mcp"],
        env={
            "COACH_MCP_SESSION": "1",
            "COACH_DATA_DIR": str(a_file),
            "COACH_USER": "u",
            "COACH_SESSION": "s",
            "COLUMNS": "300",
        },
    )
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert f"the data directory {a_file} cannot be used" in result.output and a_file.read_text() == "keep me"
