"""The scripted upstream's per-agent answers (the write, then "Done."; the seed's way with thinking)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .payloads import PAYLOADS, SECOND_CALL_THINK_TOKENS, THINK_TOKENS, WRITE_TOOL


def _thinking(tokens: int) -> str:
    """About ``tokens`` tokens of plausible reasoning text (4 characters per token, testsupport's rule)."""
    base = (
        "The user wants consistency but the evidence shows evenings are consumed by recovery from work. "
        "I should check the schema fields, keep confidence low with so few observations, and avoid "
        "prescribing. "
    )
    text = (base * (tokens * 4 // len(base) + 1))[: tokens * 4]
    return f"<think>{text}</think>"


def _text_of(message: dict[str, Any]) -> str:
    c = message.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict)) if isinstance(c, list) else ""


def _wrote(request: Any, tool: str) -> bool:
    """True when the agent already called ``tool`` in this turn: after the latest user message naming
    the turn (the supervisor's task tail says "(turn tNNNNNN)"; a warm conversation holds earlier turns)."""
    msgs = request.messages
    start = max(
        (i for i, m in enumerate(msgs) if m.get("role") == "user" and "(turn t" in _text_of(m)), default=-1
    )
    for m in msgs[start + 1 :]:
        if m.get("role") != "assistant":
            continue
        for c in m.get("tool_calls") or []:  # OpenAI shape (the proxy talks OpenAI to the upstream)
            if str((c.get("function") or {}).get("name", "")).endswith("__" + tool):
                return True
        for b in m.get("content") if isinstance(m.get("content"), list) else []:  # Anthropic shape
            if (
                isinstance(b, dict)
                and b.get("type") == "tool_use"
                and str(b.get("name", "")).endswith("__" + tool)
            ):
                return True
    return False


def scripts(seed_way: bool) -> dict[str, Callable[[Any], Any]]:
    """Per-agent scripts (callables over the request, not step counts: in the seed's way Claude Code
    adds a user-role environment note after the tool result, and makes a tool-less side call):

    * a request advertising no tools (Claude Code's side calls, e.g. a session title): a short text;
    * the agent's write not yet in the conversation: the write (after a thinking preamble, seed's way);
    * otherwise: "Done." (after a short thinking preamble, seed's way).
    """
    from testsupport.script import Reply, Text, ToolCall

    def make(agent: str) -> Callable[[Any], Any]:
        tool = WRITE_TOOL[agent]
        call = ToolCall(tool, PAYLOADS[agent])

        def script(request: Any) -> Any:
            if not request.tool_names:
                return Text("Coaching check-in")
            if _wrote(request, tool):
                return Text(_thinking(SECOND_CALL_THINK_TOKENS) + "Done.") if seed_way else Text("Done.")
            return Reply(_thinking(THINK_TOKENS[agent]), (call,)) if seed_way else call

        return script

    return {agent: make(agent) for agent in PAYLOADS}
