"""Claude Code environment settings shared by the agent runner and the test fixtures.

One source of truth for the variables that make a headless ``claude`` process's requests plain; the
runner (:mod:`launcher.runner._agent_runner`) and ``testsupport.claude`` both start from it.
"""

from __future__ import annotations

__all__ = ["PLAIN_REQUEST_ENV"]

#: docs/claude-code.md "Verified facts": these make Claude Code's requests plain (model, messages, system, tools,
#: metadata, max_tokens, stream) and cacheable (no per-request billing header, no thinking, no betas).
PLAIN_REQUEST_ENV: dict[str, str] = {
    "CLAUDE_CODE_MODEL_CAPABILITIES": "-mid_conv_system,-effort",
    "ENABLE_TOOL_SEARCH": "false",
    "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
    "CLAUDE_CODE_DISABLE_THINKING": "1",
    "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
