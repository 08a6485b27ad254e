"""Contract: every tool an agent file names exists on the real coachboard MCP server."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from blackboard import ROSTER, Blackboard
from launcher.agents import KNOWN_TOOLS, MCP_SERVER, canonical_tool, load_agents
from mcp_server import SERVER_NAME, WRITE_TOOL_NAMES, HeaderScope, build_server

REPO = Path(__file__).resolve().parents[2]


def test_names_match_the_mcp_server() -> None:
    assert MCP_SERVER == SERVER_NAME
    assert {
        a.name: a.write_tool for a in ROSTER
    } == WRITE_TOOL_NAMES  # the server's tools come from the roster


@pytest.mark.anyio
async def test_every_agent_tool_is_served(tmp_path: Path) -> None:
    board = Blackboard(tmp_path)
    try:
        async with Client(build_server(board, HeaderScope())) as client:
            served = {f"mcp__{SERVER_NAME}__{t.name}" for t in (await client.list_tools()).tools}
    finally:
        board.close()
    assert served == set(KNOWN_TOOLS)
    for spec in load_agents(REPO / "agents").values():
        assert {canonical_tool(t) for t in spec.tools} <= served
        assert spec.output_tool in served
