"""Assemble the MCP server: tools over a :class:`blackboard.Blackboard`, a scope source, transports.

``build_server`` returns an ``MCPServer`` named ``coachboard`` (so Claude Code names its tools
``mcp__coachboard__<tool>``). ``serve_stdio`` / ``serve_http`` run it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ListToolsResult

from blackboard import STAGE_OF, Blackboard, Stage
from blackboard.errors import (
    BlackboardError,
    InvalidKeyError,
    SchemaValidationError,
    TurnNotOpenError,
    VersionConflictError,
)
from mcp_server._descriptions import WRITE_TOOL_NAMES
from mcp_server._problems import Problem, error_result
from mcp_server._scope import ScopeSource
from mcp_server._toolkit import build_tool
from mcp_server._tools import ToolContext, all_specs
from mcp_server.config import McpConfig
from mcp_server.errors import McpConfigError, McpServerError

__all__ = ["SERVER_NAME", "build_server", "map_blackboard_error", "serve_http", "serve_stdio"]

SERVER_NAME = "coachboard"
logger = logging.getLogger("mcp_server")

_INSTRUCTIONS = (
    "coachboard blackboard. Write your output for this turn with your own write_<agent> tool "
    "(write_synthesis for Pineal), passing exactly the fields of its input schema. The user, session and "
    "turn are fixed by the connection; never pass them. Read with read_entry, list_entries, get_profile "
    "and get_session_history. Pineal calls collect_turn before write_synthesis. Errors list each problem "
    "(field, what was wrong, what is allowed): fix those fields and call again."
)


def _problem_from_line(line: str) -> Problem:
    field, sep, rest = str(line).partition(": ")
    if sep and " " not in field.strip():
        return Problem(field.strip(), rest.strip())
    return Problem("", str(line))


def map_blackboard_error(tool: str, exc: Exception) -> CallToolResult | None:
    """Turn a blackboard error into a plain-words ``is_error`` result (None for other exceptions).

    A version conflict returns ``current_version`` (and ``key``): the existing entry is kept unchanged.
    """
    if isinstance(exc, VersionConflictError):
        return error_result(
            tool,
            "NOT STORED. An entry for this key already exists; the stored entry was kept unchanged.",
            [
                Problem(
                    "", f"the key already holds version {exc.current_version}", "one write per agent per turn"
                )
            ],
            code="version_conflict",
            retryable=False,
            extra={"key": exc.key, "current_version": exc.current_version},
            advice="do not write again. Call read_entry with your entry name to see what is stored.",
        )
    if isinstance(exc, SchemaValidationError):
        problems = [_problem_from_line(p) for p in exc.problems]
        return error_result(
            tool,
            f"NOT STORED. {len(problems)} problem(s) with the content:",
            problems,
            code=exc.code,
            advice=f"fix exactly these problems and call {tool} again with the whole object.",
        )
    if isinstance(exc, InvalidKeyError):
        return error_result(
            tool, f"REFUSED. {exc.message}", code=exc.code, advice="pass a valid entry name or key."
        )
    if isinstance(exc, TurnNotOpenError):
        return error_result(
            tool,
            "NOT DONE. This turn has not been opened on the blackboard.",
            code=exc.code,
            retryable=False,
            advice="this is a setup problem the model cannot fix; finish without this tool.",
        )
    if isinstance(exc, BlackboardError):
        return error_result(
            tool,
            f"NOT DONE. {exc.message}",
            code=exc.code,
            retryable=exc.retryable,
            advice="call once more." if exc.retryable else "do not retry this call unchanged.",
        )
    return None


def _tools_list_filter(scopes: ScopeSource) -> Any:
    """Middleware: hide other agents' write tools from ``tools/list`` when the connection's agent is
    known. Calls are checked per tool regardless; this only saves prompt tokens."""
    own_by_agent = WRITE_TOOL_NAMES
    hidden_all = set(WRITE_TOOL_NAMES.values()) | {"collect_turn"}

    async def middleware(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list":
            return result
        try:
            scope = scopes.scope_for(getattr(ctx.request, "headers", None))
        except McpServerError:
            return result
        if scope.agent is None:
            return result
        hidden = (
            hidden_all
            - {own_by_agent[scope.agent]}
            - ({"collect_turn"} if STAGE_OF.get(scope.agent) is Stage.SYNTHESIS else set())
        )
        # The runner hands middleware the wire form (a dict); a model object is handled too.
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            return {
                **result,
                "tools": [
                    t for t in result["tools"] if not (isinstance(t, dict) and t.get("name") in hidden)
                ],
            }
        if isinstance(result, ListToolsResult):
            return result.model_copy(update={"tools": [t for t in result.tools if t.name not in hidden]})
        return result

    return middleware


def build_server(board: Blackboard, scopes: ScopeSource, config: McpConfig | None = None) -> MCPServer:
    """Build the coachboard MCP server.

    Args:
        board: the blackboard facade every tool reads and writes through.
        scopes: :class:`FixedScope` (stdio; from args/env) or :class:`HeaderScope` (HTTP headers).
        config: limits and defaults (``McpConfig()`` when None).

    Returns:
        An ``MCPServer`` named ``coachboard`` with 11 tools: ``write_shadow``, ``write_persona``,
        ``write_plasticity``, ``write_stability``, ``write_coach``, ``write_synthesis``, ``read_entry``,
        ``list_entries``, ``get_profile``, ``get_session_history``, ``collect_turn``.
    """
    cfg = config or McpConfig()
    tc = ToolContext(board=board, config=cfg)
    tools = [
        build_tool(spec, scopes, max_argument_bytes=cfg.max_argument_bytes, map_error=map_blackboard_error)
        for spec in all_specs(tc)
    ]
    # MCPServer's constructor calls logging.basicConfig (a Rich handler on the root logger); a
    # placeholder handler makes that a no-op, so building the server never reconfigures the host
    # process's logging (the supervisor builds it in process). `coach mcp` configures logging itself.
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)
    try:
        server: MCPServer = MCPServer(
            SERVER_NAME,
            instructions=_INSTRUCTIONS,
            version="0.1.0",
            tools=tools,
            log_level="WARNING",
            middleware=[_tools_list_filter(scopes)] if cfg.hide_other_agents_tools else None,
        )
    finally:
        root.removeHandler(placeholder)
    return server


def serve_stdio(server: MCPServer) -> None:
    """Serve over stdin/stdout until the client closes the pipe (blocking)."""
    server.run("stdio")


async def serve_http_async(
    server: MCPServer, config: McpConfig, *, on_ready: Callable[[str], None] | None = None
) -> None:
    """Serve streamable HTTP at ``http://{host}:{port}{path}`` until cancelled.

    Stateless mode: every POST is handled on its own, and its ``x-coach-*`` headers fix its scope.
    ``on_ready(url)`` is called once the socket listens (with the real port when ``config.port`` is 0).

    Raises:
        McpConfigError (code ``port_in_use``): the address cannot be bound (the message names it and
            the fix: stop the other server or ``--port 0`` for any free port).
    """
    import socket

    import uvicorn

    app = server.streamable_http_app(streamable_http_path=config.path, stateless_http=True, host=config.host)

    class _Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if on_ready is not None and self.started:
                port = config.port
                for srv in getattr(self, "servers", []):
                    for sock in srv.sockets:
                        port = sock.getsockname()[1]
                on_ready(f"http://{config.host}:{port}{config.path}")

    sock = socket.socket(socket.AF_INET6 if ":" in config.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host, config.port))
    except OSError as exc:
        sock.close()
        raise McpConfigError(
            f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}. Fix: stop whatever uses port "
            f"{config.port}, or pass another --port (--port 0 picks a free one)",
            code="port_in_use",
        ) from None
    sock.listen(2048)
    uv = _Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        await uv.serve(sockets=[sock])
    finally:
        sock.close()


def serve_http(
    server: MCPServer, config: McpConfig, *, on_ready: Callable[[str], None] | None = None
) -> None:
    """Blocking wrapper of :func:`serve_http_async`."""
    anyio.run(partial(serve_http_async, server, config, on_ready=on_ready))
