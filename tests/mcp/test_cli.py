"""``coach mcp`` option handling (in process) and the Claude Code MCP configs for agents."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from launcher.cli import app
from mcp_server import (
    McpConfig,
    McpConfigError,
    Scope,
    claude_mcp_config,
    claude_mcp_env,
    claude_mcp_stdio_config,
    scope_token,
)
from mcp_server.cli import DEFAULT_DATA_DIR, load_config, resolve_data_dir

runner = CliRunner()


def test_stdio_without_scope_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("COACH_USER", "COACH_SESSION", "COACH_TURN", "COACH_AGENT"):
        monkeypatch.delenv(var, raising=False)
    result = runner.invoke(app, ["mcp", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 2
    assert "user is missing" in result.output and "session is missing" in result.output
    assert not (tmp_path / "d").exists()


def test_bad_agent_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["mcp", "--data-dir", str(tmp_path), "--user", "u", "--session", "s", "--agent", "root"]
    )
    assert result.exit_code == 2 and "agent must be one of" in result.output


def test_http_refuses_fixed_scope_options(tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", "--http", "--user", "u", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2 and "x-coach-* headers" in result.output


def test_bad_port_and_bad_config(tmp_path: Path) -> None:
    result = runner.invoke(app, ["mcp", "--http", "--port", "70000", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2 and "port" in result.output
    bad = tmp_path / "coach.toml"
    bad.write_text("[mcp]\nport = 'x'\n", encoding="utf-8")
    result = runner.invoke(app, ["mcp", "--http", "--config", str(bad)])
    assert result.exit_code == 2 and "invalid [mcp] section" in result.output
    bad.write_text("[mcp\n", encoding="utf-8")
    assert runner.invoke(app, ["mcp", "--http", "--config", str(bad)]).exit_code == 2


def test_load_config_and_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "coach.toml"
    path.write_text(
        '[data]\ndir = "/srv/coach"\n[mcp]\nport = 9000\ncollect_deadline_s = 30\n', encoding="utf-8"
    )
    cfg, data_dir = load_config(path)
    assert cfg.port == 9000 and cfg.collect_deadline_s == 30 and data_dir == "/srv/coach"
    assert load_config(None) == (McpConfig(), None)
    with pytest.raises(McpConfigError):
        load_config(tmp_path / "missing.toml")
    monkeypatch.delenv("COACH_DATA_DIR", raising=False)
    assert resolve_data_dir(None, None) == Path(DEFAULT_DATA_DIR)
    assert resolve_data_dir(None, "/srv/coach") == Path("/srv/coach")
    monkeypatch.setenv("COACH_DATA_DIR", "/env/dir")
    assert resolve_data_dir(None, "/srv/coach") == Path("/env/dir")
    assert resolve_data_dir("/cli", "/srv/coach") == Path("/cli")


def test_claude_mcp_configs() -> None:
    scope = Scope.create("u1", "s1", "t000003", "persona")
    assert claude_mcp_config("http://127.0.0.1:8765/mcp", scope) == {
        "mcpServers": {
            "coachboard": {
                "type": "http",
                "url": "http://127.0.0.1:8765/mcp",
                "headers": {
                    "x-coach-user": "u1",
                    "x-coach-session": "s1",
                    "x-coach-turn": "t000003",
                    "x-coach-agent": "persona",
                },
            }
        }
    }
    signed = claude_mcp_config("http://h/mcp", scope, secret="k")["mcpServers"]["coachboard"]["headers"]
    assert signed["x-coach-scope-token"] == "${COACH_MCP_SCOPE_TOKEN}"  # the token goes in the environment
    assert claude_mcp_env(scope, "k")["COACH_MCP_SCOPE_TOKEN"] == scope_token("k", scope)
    stdio = claude_mcp_stdio_config(scope, data_dir="/data", python="/venv/bin/python")["mcpServers"][
        "coachboard"
    ]
    assert stdio["command"] == "/venv/bin/python" and stdio["args"] == ["-m", "mcp_server"]
    assert stdio["env"]["COACH_AGENT"] == "persona" and stdio["env"]["COACH_DATA_DIR"] == "/data"


def test_unusable_data_dir_exits_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    result = runner.invoke(app, ["mcp", "--data-dir", str(blocker / "data"), "--user", "u", "--session", "s"])
    assert result.exit_code == 2 and "cannot open the blackboard" in result.output
