"""coachboard's MCP server: the blackboard as tools for the six agents, over stdio and streamable HTTP.

Public API::

    build_server(board, scopes, config=None) -> MCPServer    # named "coachboard"
    FixedScope(Scope.create(user, session, turn, agent))     # stdio: scope fixed at start
    HeaderScope(secret=None)                                 # HTTP: scope from x-coach-* headers
    scope_token(secret, scope)                               # x-coach-scope-token value
    serve_stdio(server); serve_http(server, config); await serve_http_async(server, config)
    McpConfig                                                # the [mcp] config section
    claude_mcp_config(...); claude_mcp_env(scope, secret)    # Claude Code MCP config (+ env) for an agent
    mcp_secret(data_dir, create=True)                        # COACH_MCP_SECRET or <data dir>/mcp_secret
    all_specs(ToolContext(board, config)); build_tool(spec, scopes, ...)  # the tools, for a server of one's own

Tools: write_shadow, write_persona, write_plasticity, write_stability, write_coach, write_synthesis,
read_entry, list_entries, get_profile, get_session_history, collect_turn.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from mcp_server._client_config import (
    SCOPE_TOKEN_ENV,
    claude_mcp_config,
    claude_mcp_env,
    claude_mcp_stdio_config,
)
from mcp_server._scope import (
    ENV_VARS,
    HEADERS,
    SCOPE_TOKEN_HEADER,
    FixedScope,
    HeaderScope,
    Scope,
    ScopeSource,
    scope_token,
)
from mcp_server._secret import mcp_secret
from mcp_server.config import McpConfig
from mcp_server.errors import (
    McpConfigError,
    McpServerError,
    OutOfScopeError,
    ScopeError,
    ToolInputError,
    ToolNotAllowedError,
)

if TYPE_CHECKING:
    from blackboard import AGENT_NAMES
    from mcp_server._descriptions import WRITE_TOOL_NAMES
    from mcp_server._problems import Problem, error_result, ok_result
    from mcp_server._server import (
        SERVER_NAME,
        build_server,
        map_blackboard_error,
        serve_http,
        serve_http_async,
        serve_stdio,
    )
    from mcp_server._toolkit import ProgressFn, ToolSpec, build_tool, input_schema, tool_progress
    from mcp_server._tools import ToolContext, all_specs

# The server side (mcp, blackboard) is imported on first use, so `coach --help` stays fast.
_LAZY = {
    "AGENT_NAMES": "blackboard",
    "WRITE_TOOL_NAMES": "mcp_server._descriptions",
    "Problem": "mcp_server._problems",
    "SERVER_NAME": "mcp_server._server",
    "build_server": "mcp_server._server",
    "serve_http": "mcp_server._server",
    "serve_http_async": "mcp_server._server",
    "serve_stdio": "mcp_server._server",
    "map_blackboard_error": "mcp_server._server",
    "error_result": "mcp_server._problems",
    "ok_result": "mcp_server._problems",
    "ToolSpec": "mcp_server._toolkit",
    "ProgressFn": "mcp_server._toolkit",
    "tool_progress": "mcp_server._toolkit",
    "build_tool": "mcp_server._toolkit",
    "input_schema": "mcp_server._toolkit",
    "ToolContext": "mcp_server._tools",
    "all_specs": "mcp_server._tools",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_server' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "AGENT_NAMES",
    "ENV_VARS",
    "HEADERS",
    "SCOPE_TOKEN_ENV",
    "SCOPE_TOKEN_HEADER",
    "SERVER_NAME",
    "WRITE_TOOL_NAMES",
    "FixedScope",
    "HeaderScope",
    "McpConfig",
    "McpConfigError",
    "McpServerError",
    "OutOfScopeError",
    "Problem",
    "ProgressFn",
    "Scope",
    "ScopeError",
    "ScopeSource",
    "ToolContext",
    "ToolInputError",
    "ToolNotAllowedError",
    "ToolSpec",
    "all_specs",
    "build_server",
    "build_tool",
    "claude_mcp_config",
    "claude_mcp_env",
    "claude_mcp_stdio_config",
    "error_result",
    "input_schema",
    "map_blackboard_error",
    "mcp_secret",
    "ok_result",
    "scope_token",
    "serve_http",
    "serve_http_async",
    "serve_stdio",
    "tool_progress",
]
