"""coachboard proxy: the Anthropic Messages API in front of OpenAI-compatible (vLLM, llama.cpp) and
Anthropic-compatible upstreams, with routing, budgets, metering and failure handling.

Public API::

    from proxy import create_app, ProxyConfig, ModelPool, AgentPolicy, load_config
    app = create_app(load_config("coach.toml"))      # a Starlette ASGI app; serve with uvicorn
"""

from ._app import create_app
from .config import AgentPolicy, ModelPool, ProxyConfig, load_config
from .errors import (
    AuthenticationError,
    BudgetExceededError,
    ConfigError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProxyError,
    RateLimitedError,
    RequestTooLargeError,
    UpstreamError,
    UpstreamTimeoutError,
)
from .wellformed import accumulate, assert_well_formed, check_events, encode_sse, parse_sse

__all__ = [
    "AgentPolicy",
    "AuthenticationError",
    "BudgetExceededError",
    "ConfigError",
    "InvalidRequestError",
    "ModelPool",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "ProxyConfig",
    "ProxyError",
    "RateLimitedError",
    "RequestTooLargeError",
    "UpstreamError",
    "UpstreamTimeoutError",
    "accumulate",
    "assert_well_formed",
    "check_events",
    "create_app",
    "encode_sse",
    "load_config",
    "parse_sse",
]
