"""Prepared request -> Anthropic ``/v1/messages`` body for an ``anthropic`` upstream (pass-through with
the same normalisation: billing header gone, system items folded, thinking history dropped, server tools
without schema dropped, max_tokens clamped). Fixed key order, compact serialisation."""

from __future__ import annotations

from typing import Any

from ._normalize import Prepared


def to_anthropic(p: Prepared, *, upstream_model: str, max_tokens: int, stream: bool = True) -> dict[str, Any]:
    """The upstream body; ``system`` items never stay inside messages (Anthropic servers reject them)."""
    body: dict[str, Any] = {"model": upstream_model, "max_tokens": max_tokens}
    if p.system:
        body["system"] = [{"type": "text", "text": t} for t in p.system]
    messages: list[dict[str, Any]] = []
    for m in p.messages:
        if m["role"] == "system":  # keep mode: fold into the next user turn here
            messages.append({"role": "user", "content": list(m["content"])})
        else:
            messages.append({"role": m["role"], "content": m["content"]})
    merged: list[dict[str, Any]] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"] == "user":
            merged[-1] = {"role": "user", "content": merged[-1]["content"] + m["content"]}
        else:
            merged.append(m)
    body["messages"] = merged
    if p.tools:
        body["tools"] = p.tools
        if p.tool_choice is not None:
            body["tool_choice"] = p.tool_choice
    if p.stop_sequences:
        body["stop_sequences"] = p.stop_sequences
    for k in ("temperature", "top_p", "top_k"):
        if k in p.sampling:
            body[k] = p.sampling[k]
    if p.thinking:
        body["thinking"] = (
            {"type": "enabled", "budget_tokens": max(1024, min(max_tokens - 1, 16000))}
            if max_tokens > 1024
            else {"type": "disabled"}
        )
    body["stream"] = stream
    return body
