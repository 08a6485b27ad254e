"""Errors of the proxy, one hierarchy rooted in :class:`ProxyError`.

Every error carries the Anthropic error ``type`` it maps to and the HTTP status the client sees, so the
HTTP layer renders ``{"type": "error", "error": {"type": ..., "message": ...}}`` without message matching.
Types and statuses follow https://docs.anthropic.com/en/api/errors.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "BudgetExceededError",
    "ConfigError",
    "InvalidRequestError",
    "InvalidToolArgumentsError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "ProxyError",
    "RateLimitedError",
    "RequestTooLargeError",
    "TruncatedStreamError",
    "UpstreamError",
    "UpstreamTimeoutError",
]


class ProxyError(Exception):
    """Base of every proxy error.

    Fields: ``code`` (stable machine-readable slug), ``retryable`` (a client may retry the same request
    later), ``error_type`` (Anthropic error type), ``status`` (HTTP status), ``headers`` (extra response
    headers, e.g. ``retry-after``).
    """

    error_type = "api_error"
    status = 500
    code = "proxy_error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable
        if status is not None:
            self.status = status
        self.headers: dict[str, str] = dict(headers or {})

    def to_body(self) -> dict[str, Any]:
        """The Anthropic error JSON body: ``{"type": "error", "error": {"type", "message"}}``."""
        return {"type": "error", "error": {"type": self.error_type, "message": self.message}}


class ConfigError(ProxyError):
    """The proxy configuration is invalid (raised at load time, never per request)."""

    code = "config_error"


class InvalidRequestError(ProxyError):
    error_type = "invalid_request_error"
    status = 400
    code = "invalid_request"


class RequestTooLargeError(ProxyError):
    error_type = "request_too_large"
    status = 413
    code = "request_too_large"


class AuthenticationError(ProxyError):
    error_type = "authentication_error"
    status = 401
    code = "authentication"


class PermissionDeniedError(ProxyError):
    error_type = "permission_error"
    status = 403
    code = "permission_denied"


class BudgetExceededError(PermissionDeniedError):
    """A token budget (session or agent) or a max_tokens cap refuses the request.

    ``budget`` names the budget (e.g. ``"session s1"``), ``limit``/``used``/``requested`` are token counts.
    """

    code = "budget_exceeded"

    def __init__(self, message: str, *, budget: str, limit: int, used: int, requested: int) -> None:
        super().__init__(message)
        self.budget = budget
        self.limit = limit
        self.used = used
        self.requested = requested


class NotFoundError(ProxyError):
    error_type = "not_found_error"
    status = 404
    code = "not_found"


class RateLimitedError(ProxyError):
    error_type = "rate_limit_error"
    status = 429
    code = "rate_limited"
    retryable = True


class UpstreamError(ProxyError):
    """The upstream failed (5xx, garbage, reset) after retries; ``api_error`` with status 502."""

    error_type = "api_error"
    status = 502
    code = "upstream_error"
    retryable = True


class TruncatedStreamError(UpstreamError):
    """The upstream stream ended with no finish reason and no ``[DONE]`` (a dropped connection, a killed
    server): the output may be cut anywhere, so it is an ``api_error`` (502), never ``end_turn`` or a
    ``tool_use``. Retryable: the same request may succeed on another attempt."""

    code = "upstream_truncated"


class InvalidToolArgumentsError(UpstreamError):
    """The model finished a tool call whose arguments are not a JSON object and no meaning-preserving
    repair applies (see ``proxy._toolargs``). ``tool`` is the tool's (client-side) name. An ``api_error``
    (502): sampling again usually gives valid arguments, so it is retryable."""

    code = "invalid_tool_arguments"

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class UpstreamTimeoutError(UpstreamError):
    error_type = "timeout_error"
    status = 504
    code = "upstream_timeout"


class OverloadedError(ProxyError):
    """No replica could take the request (all down or refusing); ``overloaded_error`` with status 529."""

    error_type = "overloaded_error"
    status = 529
    code = "overloaded"
    retryable = True
