"""Upstream payloads -> :class:`StreamBuilder` deltas, one adapter per upstream kind.

- :func:`feed_openai` takes one OpenAI ``chat.completion.chunk`` (or a whole non-streamed
  ``chat.completion``: ``choices[].message`` is read like a delta).
- :class:`AnthropicAdapter` takes upstream Anthropic SSE events (or a whole non-streamed message), so a
  pass-through upstream is re-validated into the same well-formed stream with our own message id.
"""

from __future__ import annotations

import json
from typing import Any

from ._stream import Event, StreamBuilder
from .errors import InvalidRequestError, OverloadedError, ProxyError, RateLimitedError, UpstreamError

_OPENAI_FINISH = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def _upstream_error(err: Any) -> ProxyError:
    if isinstance(err, dict):
        msg = str(err.get("message") or err)
        etype = str(err.get("type") or "")
    else:
        msg, etype = str(err), ""
    msg = f"upstream error: {msg}"[:500]
    if "overloaded" in etype:
        return OverloadedError(msg)
    if "rate_limit" in etype:
        return RateLimitedError(msg)
    if "invalid_request" in etype or "BadRequest" in etype:
        return InvalidRequestError(msg)
    return UpstreamError(msg)


def feed_openai(b: StreamBuilder, chunk: Any, stop_sequences: list[str]) -> list[Event]:
    """Feed one OpenAI chunk into ``b``. Raises UpstreamError (or a mapped type) for an ``error`` chunk
    and for a chunk that is not a JSON object."""
    if not isinstance(chunk, dict):
        raise UpstreamError("upstream sent a stream chunk that is not a JSON object")
    if chunk.get("error") is not None:
        raise _upstream_error(chunk["error"])
    ev: list[Event] = []
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        details = usage.get("prompt_tokens_details") or {}
        b.usage(
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            cached_tokens=details.get("cached_tokens") if isinstance(details, dict) else None,
        )
    for choice in chunk.get("choices") or []:
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or choice.get("message") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            ev += b.reasoning(reasoning)
        content = delta.get("content")
        if isinstance(content, str) and content:
            ev += b.text(content)
        for pos, tc in enumerate(delta.get("tool_calls") or []):
            if not isinstance(tc, dict):
                continue
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            if args is not None and not isinstance(args, str):
                args = json.dumps(args)
            ev += b.tool_delta(tc.get("index", pos), tc.get("id"), fn.get("name"), args)
        finish = choice.get("finish_reason")
        if finish:
            reason = _OPENAI_FINISH.get(finish, "end_turn")
            matched = choice.get("stop_reason")
            if finish == "stop" and isinstance(matched, str) and matched in stop_sequences:
                b.finish("stop_sequence", matched)
            else:
                b.finish(reason)
    return ev or b.start()


class AnthropicAdapter:
    """Feeds upstream Anthropic events into a :class:`StreamBuilder` (upstream ids and indexes are
    replaced by the builder's own)."""

    def __init__(self, builder: StreamBuilder) -> None:
        self.b = builder
        self._kinds: dict[int, Any] = {}

    def feed(self, event: Any) -> list[Event]:
        b = self.b
        if not isinstance(event, dict):
            raise UpstreamError("upstream sent an event that is not a JSON object")
        t = event.get("type")
        if t == "error":
            raise _upstream_error(event.get("error"))
        if t == "message_start":
            usage = (event.get("message") or {}).get("usage") or {}
            self._usage(usage)
            return b.start()
        if t == "content_block_start":
            idx, block = event.get("index", 0), event.get("content_block") or {}
            kind = block.get("type")
            self._kinds[idx] = kind
            if kind == "text":
                return b.text(block.get("text", ""))
            if kind == "thinking":
                return b.reasoning(block.get("thinking", ""))
            if kind == "tool_use":
                inp = block.get("input")
                return b.tool_delta(idx, block.get("id"), block.get("name"), json.dumps(inp) if inp else None)
            return b.start()
        if t == "content_block_delta":
            idx, d = event.get("index", 0), event.get("delta") or {}
            dt = d.get("type")
            if dt == "text_delta":
                return b.text(d.get("text", ""))
            if dt == "thinking_delta":
                return b.reasoning(d.get("thinking", ""))
            if dt == "input_json_delta":
                return b.tool_delta(idx, None, None, d.get("partial_json", ""))
            return b.start()
        if t == "message_delta":
            d = event.get("delta") or {}
            self._usage(event.get("usage") or {})
            if d.get("stop_reason"):
                b.finish(d["stop_reason"], d.get("stop_sequence"))
            return b.start()
        return b.start()  # ping, content_block_stop, message_stop, unknown

    def _usage(self, usage: dict[str, Any]) -> None:
        cached = usage.get("cache_read_input_tokens")
        inp = usage.get("input_tokens")
        total = (
            None
            if inp is None
            else int(inp) + int(cached or 0) + int(usage.get("cache_creation_input_tokens") or 0)
        )
        self.b.usage(
            input_tokens=total, output_tokens=usage.get("output_tokens") or None, cached_tokens=cached
        )

    def feed_message(self, message: dict[str, Any]) -> list[Event]:
        """A whole non-streamed Anthropic message."""
        if message.get("type") == "error":
            raise _upstream_error(message.get("error"))
        ev = self.feed({"type": "message_start", "message": message})
        for i, block in enumerate(message.get("content") or []):
            ev += self.feed({"type": "content_block_start", "index": i, "content_block": block})
        ev += self.feed(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": message.get("stop_reason"),
                    "stop_sequence": message.get("stop_sequence"),
                },
                "usage": message.get("usage") or {},
            }
        )
        return ev
