"""Claude Code MCP configurations for reaching this server, as the supervisor passes them to each agent
(``ClaudeAgentOptions(mcp_servers=...)`` or ``claude --mcp-config '<json>'``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp_server._scope import ENV_VARS, HEADERS, SCOPE_TOKEN_HEADER, Scope, scope_token

__all__ = ["claude_mcp_config", "claude_mcp_stdio_config"]


def claude_mcp_config(
    url: str, scope: Scope, *, secret: str | None = None, name: str = "coachboard"
) -> dict[str, Any]:
    """MCP config JSON for one agent on the shared HTTP server.

    Example result (``url="http://127.0.0.1:8765/mcp"``)::

        {"mcpServers": {"coachboard": {"type": "http", "url": "http://127.0.0.1:8765/mcp",
          "headers": {"x-coach-user": "u1", "x-coach-session": "s1", "x-coach-turn": "3",
                      "x-coach-agent": "persona"}}}}

    With ``secret`` (the server's ``COACH_MCP_SECRET``) an ``x-coach-scope-token`` header is added.
    The agent's tools are then named ``mcp__coachboard__<tool>``.
    """
    headers = {HEADERS["user"]: scope.user, HEADERS["session"]: scope.session}
    if scope.turn is not None:
        headers[HEADERS["turn"]] = scope.turn
    if scope.agent is not None:
        headers[HEADERS["agent"]] = scope.agent
    if secret is not None:
        headers[SCOPE_TOKEN_HEADER] = scope_token(secret, scope)
    return {"mcpServers": {name: {"type": "http", "url": url, "headers": headers}}}


def claude_mcp_stdio_config(
    scope: Scope, *, data_dir: str, python: str | None = None, name: str = "coachboard"
) -> dict[str, Any]:
    """MCP config JSON that starts a private stdio server (``python -m mcp_server``) for one agent.

    Costs 0.8-1.5 s of start-up per Claude Code process (DESIGN.md); prefer :func:`claude_mcp_config`.
    """
    # The repository root on PYTHONPATH, so the server imports even where coachboard is not installed.
    root = str(Path(__file__).resolve().parent.parent)
    env = {
        ENV_VARS["user"]: scope.user,
        ENV_VARS["session"]: scope.session,
        "COACH_DATA_DIR": data_dir,
        "PYTHONPATH": root,
    }
    if scope.turn is not None:
        env[ENV_VARS["turn"]] = scope.turn
    if scope.agent is not None:
        env[ENV_VARS["agent"]] = scope.agent
    return {
        "mcpServers": {
            name: {"type": "stdio", "command": python or sys.executable, "args": ["-m", "mcp_server"], "env": env}
        }
    }
