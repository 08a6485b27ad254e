"""Per-agent policies applied to a prepared request (pure): forced tool, local stop after a tool, the
max_tokens cap. See :class:`proxy.config.AgentPolicy` for the rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._normalize import Prepared
from .config import AgentPolicy
from .errors import BudgetExceededError


@dataclass
class PolicyOutcome:
    local_reply: bool = False
    forced_tool: str | None = None


def resolve_tool(p: Prepared, name: str) -> str | None:
    """The advertised tool called ``name``, or ending in ``__name`` (MCP: ``mcp__<server>__<name>``)."""
    for t in p.tools:
        if t["name"] == name:
            return name
    for t in p.tools:
        if str(t["name"]).endswith("__" + name):
            return str(t["name"])
    return None


def _tool_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        if m["role"] == "assistant":
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    names[str(b.get("id"))] = str(b.get("name"))
    return names


def _matches(tool: str, wanted: str) -> bool:
    return tool == wanted or tool.endswith("__" + wanted)


def latest_result_of(p: Prepared, tool: str) -> Literal["none", "ok", "error"]:
    """Whether the latest user message carries a result of ``tool``: "ok", "error", or "none"."""
    users = [m for m in p.messages if m["role"] == "user"]
    if not users:
        return "none"
    names = _tool_names(p.messages)
    status: Literal["none", "ok", "error"] = "none"
    for b in users[-1]["content"]:
        if b.get("type") == "tool_result" and _matches(names.get(str(b.get("tool_use_id")), ""), tool):
            if b.get("is_error"):
                return "error"
            status = "ok"
    return status


def starts_new_turn(p: Prepared) -> bool:
    """Whether the request answers a fresh user message (its latest user message carries no tool result).

    A warm Claude Code process keeps earlier turns (with their tool results) in its conversation, so
    "the first model call of a turn" is judged on the latest user message, not the whole history."""
    users = [m for m in p.messages if m["role"] == "user"]
    if not users:
        return True
    return not any(b.get("type") == "tool_result" for b in users[-1]["content"])


def apply_policy(
    p: Prepared, policy: AgentPolicy | None, *, agent: str, over_cap: Literal["clamp", "refuse"] = "clamp"
) -> PolicyOutcome:
    """Apply ``policy`` to ``p`` in place. Raises BudgetExceededError when max_tokens exceeds the agent's
    cap and ``over_cap == "refuse"``."""
    out = PolicyOutcome()
    if policy is None:
        return out
    if policy.max_tokens is not None and p.max_tokens > policy.max_tokens:
        if over_cap == "refuse":
            raise BudgetExceededError(
                f"max_tokens {p.max_tokens} exceeds the max_tokens cap of agent {agent!r} ({policy.max_tokens}); "
                "send a smaller max_tokens (Claude Code: CLAUDE_CODE_MAX_OUTPUT_TOKENS)",
                budget=f"max_tokens cap of agent {agent!r}",
                limit=policy.max_tokens,
                used=0,
                requested=p.max_tokens,
            )
        p.max_tokens = policy.max_tokens
    if policy.force_tool:
        result = latest_result_of(p, policy.force_tool)
        if result == "ok" and policy.stop_after_tool:
            out.local_reply = True
            return out
        if result == "error" or starts_new_turn(p):
            name = resolve_tool(p, policy.force_tool)
            if name is None:
                p.warnings.append(
                    f"agent {agent!r}: force_tool {policy.force_tool!r} is not among the request's tools"
                )
            else:
                p.tool_choice = {"type": "tool", "name": name}
                p.thinking = False
                out.forced_tool = name
                if policy.forced_tool_only:  # fewer prompt tokens before the first one
                    p.tools = [t for t in p.tools if t["name"] == name]
    return out


def narrow_forced_tool(
    p: Prepared, tool: str, prefill: str, omit: Sequence[str] = (), max_string_length: int | None = None
) -> None:
    """Force ``tool`` on an upstream that ignores a named tool choice (``ModelPool.forced_tool_prefill``):
    keep only that tool, ask for *some* tool call (``{"type": "any"}`` -> OpenAI ``"required"``) and end
    the messages with an assistant ``prefill`` text that the model continues (in place).

    A repair (the latest result of ``tool`` is an error) is sent as a fresh attempt: the messages after
    the turn's prompt (the last user message without a tool_result) are dropped. A very small model shown
    its failed call copies it (measured: SmolLM2-135M sent the same invalid ``write_persona`` six times);
    an independently sampled attempt usually differs, so the agent's turn budget becomes retries.

    ``omit`` (``ModelPool.omit_tool_properties``): top-level properties removed from the tool's schema, so
    the grammar built from it cannot produce them (optional fields a model this small should not fill).
    ``max_string_length`` (``ModelPool.max_string_length``): the most characters of any string in it."""
    if latest_result_of(p, tool) == "error":
        prompts = [
            i
            for i, m in enumerate(p.messages)
            if m["role"] == "user" and not any(b.get("type") == "tool_result" for b in m["content"])
        ]
        if prompts:
            del p.messages[prompts[-1] + 1 :]
    p.tools = [t for t in p.tools if t["name"] == tool]
    p.tools = [
        {
            **t,
            "input_schema": string_caps(
                integer_bounds(without_properties(t["input_schema"], omit)), max_string_length
            ),
        }
        for t in p.tools
    ]
    p.tool_choice = {"type": "any", "disable_parallel_tool_use": True}
    p.messages.append({"role": "assistant", "content": [{"type": "text", "text": prefill}]})


def string_caps(schema: Any, limit: int | None) -> Any:
    """``schema`` (a copy) with every string schema's ``maxLength`` at most ``limit`` characters (and
    ``minLength`` no higher than it); unchanged when ``limit`` is None."""
    if limit is None:
        return schema
    if isinstance(schema, list):
        return [string_caps(s, limit) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: string_caps(v, limit) for k, v in schema.items()}
    kind = out.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        out["maxLength"] = min(int(out.get("maxLength", limit)), limit)
        if "minLength" in out:
            out["minLength"] = min(int(out["minLength"]), out["maxLength"])
    return out


def integer_bounds(schema: Any) -> Any:
    """``schema`` with every ``{"type": "number"}`` that has integer ``minimum`` and ``maximum`` narrowed to
    ``"integer"`` (a copy; anything else unchanged). Used with ``forced_tool_prefill``: llama.cpp's
    grammar enforces integer bounds but not number bounds (a 135M model writes ``"score": 100000`` for a
    0-100 number); every integer in range is still a valid number, so the output validates either way."""
    if isinstance(schema, list):
        return [integer_bounds(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: integer_bounds(v) for k, v in schema.items()}
    lo, hi = out.get("minimum"), out.get("maximum")
    if out.get("type") == "number" and all(
        isinstance(b, int | float) and float(b).is_integer() for b in (lo, hi)
    ):
        out["type"] = "integer"
    return out


def without_properties(schema: Any, names: Sequence[str]) -> Any:
    """``schema`` (an object schema) without the top-level properties ``names`` (also dropped from
    ``required``); a copy when something was removed, else ``schema`` itself."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not names or not isinstance(props, dict) or not any(n in props for n in names):
        return schema
    out = {**schema, "properties": {k: v for k, v in props.items() if k not in names}}
    if isinstance(schema.get("required"), list):
        out["required"] = [r for r in schema["required"] if r not in names]
    return out
