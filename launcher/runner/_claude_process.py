"""Stopping and probing one claude-agent-sdk client's ``claude`` process (helpers of
:mod:`launcher.runner._agent_runner`): wait for its MCP servers, SIGKILL it, disconnect it with a bound."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

__all__ = ["disconnect", "kill_process", "mcp_ready"]


async def mcp_ready(client: Any, limit_s: float = 10.0) -> None:
    """Wait (at most ``limit_s``) until the process's MCP servers are no longer ``pending``: ``connect``
    returns before Claude Code has connected them, and a first query would otherwise wait for it on the
    critical path (measured here: 0.8 s from query to the model request right after ``connect``, 0.3 s
    once MCP is connected). Best effort: a client without ``get_mcp_status`` or a failing status call
    ends the wait."""
    status = getattr(client, "get_mcp_status", None)
    if status is None:
        return
    with anyio.move_on_after(limit_s), contextlib.suppress(Exception):
        # polling: the state lives in the claude process, which sends no event when it changes
        while any(s.get("status") == "pending" for s in (await status()).get("mcpServers", [])):  # noqa: ASYNC110
            await anyio.sleep(0.05)


def kill_process(client: Any) -> None:
    """SIGKILL the client's process (best effort; the SDK keeps it at ``_transport._process``)."""
    proc = getattr(getattr(client, "_transport", None), "_process", None)
    with contextlib.suppress(Exception):
        if proc is not None and proc.returncode is None:
            proc.kill()


async def disconnect(client: Any) -> None:
    """Stop a client's process; bounded so a stuck process cannot hold up the turn."""
    if client is None:
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        with contextlib.suppress(Exception):
            await client.disconnect()
