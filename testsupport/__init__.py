"""Test support for coachboard: a scripted OpenAI/Anthropic-compatible model server with the latency
models of DESIGN.md, a threaded uvicorn runner, and helpers to run the real bundled ``claude`` binary.

Pytest fixtures live in :mod:`testsupport.pytest_fixtures` (registered by ``tests/conftest.py``).
"""

from .errors import (
    ClaudeRunError,
    ScriptError,
    TestSupportError,
    UnknownLatencyModelError,
    UpstreamStartError,
)
from .latency import (
    INSTANT,
    LATENCY_MODELS,
    QWEN3_30B_2X4090,
    QWEN3_235B_A40,
    LatencyModel,
    LatencySimulator,
    PrefixCache,
    approx_token_count,
    get_latency_model,
)
from .model_request import (
    AgentMatcher,
    ModelRequest,
    RecordedRequest,
    match_forced_tool,
    match_system_marker,
    match_tool,
)
from .procs import kill_processes_with, processes_with
from .script import Delay, Error, Garbage, Hang, Reply, Script, Step, Text, ToolCall
from .server import ThreadedServer, free_port
from .upstream import ScriptedUpstream

__all__ = [
    "INSTANT",
    "LATENCY_MODELS",
    "QWEN3_30B_2X4090",
    "QWEN3_235B_A40",
    "AgentMatcher",
    "ClaudeRunError",
    "Delay",
    "Error",
    "Garbage",
    "Hang",
    "LatencyModel",
    "LatencySimulator",
    "ModelRequest",
    "PrefixCache",
    "RecordedRequest",
    "Reply",
    "Script",
    "ScriptError",
    "ScriptedUpstream",
    "Step",
    "TestSupportError",
    "Text",
    "ThreadedServer",
    "ToolCall",
    "UnknownLatencyModelError",
    "UpstreamStartError",
    "approx_token_count",
    "free_port",
    "get_latency_model",
    "kill_processes_with",
    "match_forced_tool",
    "match_system_marker",
    "match_tool",
    "processes_with",
]
