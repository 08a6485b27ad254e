"""coachboard's MCP server: the blackboard as tools for the six agents, over stdio and streamable HTTP.

Public API::

    build_server(board, scopes, config=None) -> MCPServer    # named "coachboard"
    FixedScope(Scope.create(user, session, turn, agent))     # stdio: scope fixed at start
    HeaderScope()                                            # HTTP: scope from x-coach-* headers
    serve_stdio(server); serve_http(server, config); await serve_http_async(server, config)
    McpConfig                                                # the [mcp] config section
    claude_mcp_config(...)                                   # Claude Code MCP config for an agent

Tools: write_shadow, write_persona, write_plasticity, write_stability, write_coach, write_synthesis,
read_entry, list_entries, get_profile, get_session_history, collect_turn.
"""

from mcp_server._client_config import claude_mcp_config, claude_mcp_stdio_config
from mcp_server._descriptions import WRITE_TOOL_NAMES
from mcp_server._problems import Problem
from mcp_server._scope import AGENT_NAMES, ENV_VARS, HEADERS, FixedScope, HeaderScope, Scope, ScopeSource
from mcp_server._server import SERVER_NAME, build_server, serve_http, serve_http_async, serve_stdio
from mcp_server.config import McpConfig
from mcp_server.errors import (
    McpConfigError,
    McpServerError,
    OutOfScopeError,
    ScopeError,
    ToolInputError,
    ToolNotAllowedError,
)

__all__ = [
    "AGENT_NAMES",
    "ENV_VARS",
    "HEADERS",
    "SERVER_NAME",
    "WRITE_TOOL_NAMES",
    "FixedScope",
    "HeaderScope",
    "McpConfig",
    "McpConfigError",
    "McpServerError",
    "OutOfScopeError",
    "Problem",
    "Scope",
    "ScopeError",
    "ScopeSource",
    "ToolInputError",
    "ToolNotAllowedError",
    "build_server",
    "claude_mcp_config",
    "claude_mcp_stdio_config",
    "serve_http",
    "serve_http_async",
    "serve_stdio",
]
