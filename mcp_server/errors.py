"""Errors of the MCP server package, all rooted in :class:`McpServerError`.

Each error carries a stable ``code`` (what callers and tests match on, never the message text) and
``retryable`` (whether the same call may succeed later without being changed). Messages never contain
user text: they name fields, keys and limits only.
"""

from __future__ import annotations

__all__ = [
    "McpConfigError",
    "McpServerError",
    "OutOfScopeError",
    "ScopeError",
    "ToolInputError",
    "ToolNotAllowedError",
]


class McpServerError(Exception):
    """Base of every error raised by ``mcp_server``.

    Attributes:
        code: stable machine-readable code, e.g. ``"out_of_scope"``.
        retryable: True when repeating the same call later may succeed.
    """

    code: str = "mcp_error"
    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable


class ScopeError(McpServerError):
    """The connection has no valid scope (missing or malformed user/session/turn/agent).

    Raised when the server was started without ``--user``/``--session`` (stdio) or a request arrives
    without the ``x-coach-*`` headers (HTTP). The model cannot repair this; the operator must.
    """

    code = "scope_missing"


class OutOfScopeError(McpServerError):
    """A tool argument names a user, session, turn or key outside the connection's scope."""

    code = "out_of_scope"


class ToolNotAllowedError(McpServerError):
    """The connection's agent may not call this tool (e.g. ``persona`` calling ``write_shadow``)."""

    code = "tool_not_allowed"


class ToolInputError(McpServerError):
    """Tool arguments that cannot be processed at all (too large, not a JSON object)."""

    code = "invalid_input"


class McpConfigError(McpServerError):
    """Invalid server configuration (bad port, bad data dir, bad scope on the command line)."""

    code = "config"
