"""The MCP HTTP server's secret: ``COACH_MCP_SECRET``, else ``<data dir>/mcp_secret`` (0600, created
atomically, reused); ``coach mcp --http`` always requires scope tokens (it trusted any x-coach-user
header when the variable was unset)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from mcp_server import McpConfigError, Scope, claude_mcp_config, claude_mcp_env, mcp_secret, scope_token


@pytest.fixture(autouse=True)
def _no_env_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COACH_MCP_SECRET", raising=False)


def test_secret_file_is_created_private_and_reused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert mcp_secret(data, create=False) is None and not data.exists()
    first = mcp_secret(data)
    assert first and len(first) == 64
    path = data / "mcp_secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert mcp_secret(data) == first and mcp_secret(data, create=False) == first
    assert [p.name for p in data.iterdir()] == ["mcp_secret"]  # no temporary file left


def test_env_secret_wins_and_empty_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mcp_secret").write_text("\n")
    with pytest.raises(McpConfigError, match="mcp_secret is empty"):
        mcp_secret(tmp_path)
    monkeypatch.setenv("COACH_MCP_SECRET", "from-env")
    assert mcp_secret(tmp_path) == "from-env"


def test_mcp_http_without_env_secret_requires_scope_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_server import cli

    seen: dict[str, Any] = {}

    def fake_build(board: Any, scopes: Any, cfg: Any) -> object:
        seen["scopes"] = scopes
        return object()

    monkeypatch.setattr("mcp_server._server.build_server", fake_build)
    monkeypatch.setattr("mcp_server._server.serve_http", lambda server, cfg, on_ready=None: None)
    cli.run(http=True, data_dir=str(tmp_path))
    secret = (tmp_path / "mcp_secret").read_text().strip()
    scopes = seen["scopes"]
    scope = Scope.create("bob", "s1", "t000001", "coach")
    unsigned = {
        "x-coach-user": "bob",
        "x-coach-session": "s1",
        "x-coach-turn": "t000001",
        "x-coach-agent": "coach",
    }
    with pytest.raises(Exception, match="scope-token"):
        scopes.scope_for(unsigned)
    assert scopes.scope_for({**unsigned, "x-coach-scope-token": scope_token(secret, scope)}) == scope


def test_claude_mcp_config_keeps_the_token_off_the_command_line() -> None:
    scope = Scope.create("u1", "s1", "t000003", "persona")
    cfg = claude_mcp_config("http://h/mcp", scope, secret="k")
    header = cfg["mcpServers"]["coachboard"]["headers"]["x-coach-scope-token"]
    assert header == "${COACH_MCP_SCOPE_TOKEN}" and scope_token("k", scope) not in str(cfg)
    assert claude_mcp_env(scope, "k") == {"COACH_MCP_SCOPE_TOKEN": scope_token("k", scope)}
