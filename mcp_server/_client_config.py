"""Claude Code MCP configurations for reaching this server, as the supervisor passes them to each agent
(``ClaudeAgentOptions(mcp_servers=...)`` or ``claude --mcp-config '<json>'``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp_server._scope import ENV_VARS, HEADERS, SCOPE_TOKEN_HEADER, Scope, scope_token

__all__ = ["SCOPE_TOKEN_ENV", "claude_mcp_config", "claude_mcp_env", "claude_mcp_stdio_config"]

#: Environment variable of the Claude Code process holding its scope token; the MCP config's
#: ``x-coach-scope-token`` header refers to it (Claude Code expands ``${VAR}`` in MCP header values), so
#: the token is never on a command line (``--mcp-config`` is readable by any local user with ps).
SCOPE_TOKEN_ENV = "COACH_MCP_SCOPE_TOKEN"


def claude_mcp_config(
    url: str, scope: Scope, *, secret: str | None = None, name: str = "coachboard"
) -> dict[str, Any]:
    """MCP config JSON for one agent on the shared HTTP server.

    Example result (``url="http://127.0.0.1:8765/mcp"``)::

        {"mcpServers": {"coachboard": {"type": "http", "url": "http://127.0.0.1:8765/mcp",
          "headers": {"x-coach-user": "u1", "x-coach-session": "s1", "x-coach-turn": "3",
                      "x-coach-agent": "persona"}}}}

    With ``secret`` (the server's secret, :func:`mcp_server.mcp_secret`) an ``x-coach-scope-token``
    header is added whose value is ``${COACH_MCP_SCOPE_TOKEN}``, not the token: start the Claude Code
    process with :func:`claude_mcp_env` in its environment. The agent's tools are then named
    ``mcp__coachboard__<tool>``.
    """
    headers = {HEADERS["user"]: scope.user, HEADERS["session"]: scope.session}
    if scope.turn is not None:
        headers[HEADERS["turn"]] = scope.turn
    if scope.agent is not None:
        headers[HEADERS["agent"]] = scope.agent
    if secret is not None:
        headers[SCOPE_TOKEN_HEADER] = "${" + SCOPE_TOKEN_ENV + "}"
    return {"mcpServers": {name: {"type": "http", "url": url, "headers": headers}}}


def claude_mcp_env(scope: Scope, secret: str) -> dict[str, str]:
    """The environment entry that goes with ``claude_mcp_config(url, scope, secret=secret)``:
    ``{"COACH_MCP_SCOPE_TOKEN": scope_token(secret, scope)}``."""
    return {SCOPE_TOKEN_ENV: scope_token(secret, scope)}


def claude_mcp_stdio_config(
    scope: Scope, *, data_dir: str, python: str | None = None, name: str = "coachboard"
) -> dict[str, Any]:
    """MCP config JSON that starts a private stdio server (``python -m mcp_server``) for one agent.

    Costs 0.8-1.5 s of start-up per Claude Code process (docs/mcp.md); prefer :func:`claude_mcp_config`.
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
            name: {
                "type": "stdio",
                "command": python or sys.executable,
                "args": ["-m", "mcp_server"],
                "env": env,
            }
        }
    }
