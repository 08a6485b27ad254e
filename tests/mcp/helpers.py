"""Helpers for the MCP server tests: build a server scoped to one agent, call it in memory, read results."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

from blackboard import Blackboard
from mcp_server import FixedScope, McpConfig, Scope, build_server

USER = "alice"
SESSION = "s1"


def scoped_server(
    board: Blackboard,
    agent: str | None,
    turn: str | None,
    *,
    user: str = USER,
    session: str = SESSION,
    config: McpConfig | None = None,
) -> MCPServer:
    return build_server(board, FixedScope(Scope.create(user, session, turn, agent)), config)


async def call(server: MCPServer, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
    async with Client(server) as client:
        return await client.call_tool(tool, arguments or {})


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def data_of(result: CallToolResult) -> dict[str, Any]:
    """The structured result (falls back to parsing the JSON after the first line of text)."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    text = text_of(result)
    return json.loads(text[text.index("{") :])


def problem_fields(result: CallToolResult) -> list[str]:
    return [p["field"] for p in data_of(result)["problems"]]
