"""coachboard proxy: the Anthropic Messages API in front of OpenAI-compatible (vLLM, llama.cpp) and
Anthropic-compatible upstreams, with routing, budgets, metering and failure handling.

Public API::

    from proxy import create_app, ProxyConfig, ModelPool, AgentPolicy, load_config
    app = create_app(load_config("coach.toml"))      # a Starlette ASGI app; serve with uvicorn

Names are imported lazily (``coach --help`` must not pay for starlette/httpx/pydantic).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import create_app
    from ._prefill import PREFILL_HEADER, PREFILL_MARKER
    from ._tool_tap import ToolArgsEvent
    from ._turns import CONTROL_TOKEN_HEADER, TURNS_PATH, turn_control_token
    from .config import AgentPolicy, ModelPool, ProxyConfig, load_config
    from .errors import (
        AuthenticationError,
        BudgetExceededError,
        ConfigError,
        InvalidRequestError,
        InvalidToolArgumentsError,
        NotFoundError,
        OverloadedError,
        PermissionDeniedError,
        ProxyError,
        RateLimitedError,
        RequestTooLargeError,
        TruncatedStreamError,
        UpstreamError,
        UpstreamTimeoutError,
    )
    from .wellformed import accumulate, assert_well_formed, check_events, encode_sse, parse_sse

_WHERE = {
    "create_app": "._app",
    "ToolArgsEvent": "._tool_tap",
    **dict.fromkeys(("PREFILL_HEADER", "PREFILL_MARKER"), "._prefill"),
    **dict.fromkeys(("AgentPolicy", "ModelPool", "ProxyConfig", "load_config"), ".config"),
    **dict.fromkeys(
        (
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
        ),
        ".errors",
    ),
    **dict.fromkeys(("CONTROL_TOKEN_HEADER", "TURNS_PATH", "turn_control_token"), "._turns"),
    **dict.fromkeys(
        ("accumulate", "assert_well_formed", "check_events", "encode_sse", "parse_sse"), ".wellformed"
    ),
}

__all__ = [
    "CONTROL_TOKEN_HEADER",
    "PREFILL_HEADER",
    "PREFILL_MARKER",
    "TURNS_PATH",
    "AgentPolicy",
    "AuthenticationError",
    "BudgetExceededError",
    "ConfigError",
    "InvalidRequestError",
    "InvalidToolArgumentsError",
    "ModelPool",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "ProxyConfig",
    "ProxyError",
    "RateLimitedError",
    "RequestTooLargeError",
    "ToolArgsEvent",
    "TruncatedStreamError",
    "UpstreamError",
    "UpstreamTimeoutError",
    "accumulate",
    "assert_well_formed",
    "check_events",
    "create_app",
    "encode_sse",
    "load_config",
    "parse_sse",
    "turn_control_token",
]


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'proxy' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value
