"""Anthropic Messages API rendering (``POST /v1/messages``, stream and not) for the scripted upstream.

Event sequence (https://docs.anthropic.com/en/api/messages-streaming): ``message_start``, ``ping``,
per block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` (stop_reason, usage) and ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ._playback import Plan, PlaybackContext, new_id


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One SSE frame with an ``event:`` line (Anthropic style)."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def usage(ctx: PlaybackContext, output_tokens: int) -> dict[str, int]:
    """Anthropic usage: ``input_tokens`` excludes the cached prefix, reported in ``cache_read_input_tokens``."""
    adm = ctx.admission
    return {
        "input_tokens": adm.prompt_tokens - adm.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": adm.cached_tokens,
        "output_tokens": output_tokens,
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}


def message(plan: Plan, ctx: PlaybackContext) -> dict[str, Any]:
    """The non-streaming response body."""
    content: list[dict[str, Any]] = []
    if plan.text_tokens or not plan.calls:
        content.append({"type": "text", "text": plan.text})
    for call in plan.calls:
        content.append(
            {
                "type": "tool_use",
                "id": "toolu_" + call.id_suffix,
                "name": call.name,
                "input": call.arguments_obj,
            }
        )
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": ctx.model_name,
        "content": content,
        "stop_reason": plan.stop,
        "stop_sequence": None,
        "usage": usage(ctx, plan.output_tokens),
    }


def _stream_blocks(plan: Plan) -> list[tuple[dict[str, Any], list[str], str, str]]:
    """Per streamed block, in order: its ``content_block_start`` block, its token pieces, and the delta
    type and field that carry them (a text block, if any text or no call, then one block per call)."""
    blocks: list[tuple[dict[str, Any], list[str], str, str]] = []
    if plan.text_tokens or not plan.calls:
        blocks.append(({"type": "text", "text": ""}, plan.text_tokens, "text_delta", "text"))
    for call in plan.calls:
        block = {"type": "tool_use", "id": "toolu_" + call.id_suffix, "name": call.name, "input": {}}
        blocks.append((block, call.tokens, "input_json_delta", "partial_json"))
    return blocks


async def stream(plan: Plan, ctx: PlaybackContext) -> AsyncIterator[bytes]:
    """The streaming response: prefill wait, then events paced by the latency model."""
    emitted = 0
    try:
        await ctx.sim.prefill(ctx.admission)
        async with ctx.sim.decoding() as decode:
            start: dict[str, Any] = {
                "id": new_id("msg_"),
                "type": "message",
                "role": "assistant",
                "model": ctx.model_name,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage(ctx, 1),
            }
            yield sse("message_start", {"type": "message_start", "message": start})
            ctx.mark_first_byte()
            yield sse("ping", {"type": "ping"})
            for index, (block, tokens, delta_type, field) in enumerate(_stream_blocks(plan)):
                yield sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                )
                async for piece in decode.pace(tokens):
                    yield sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": delta_type, field: piece},
                        },
                    )
                    emitted = decode.tokens_emitted
                    if plan.hang_after_first_token:
                        await ctx.hang()
                        return
                yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
            emitted = plan.output_tokens
            yield sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": plan.stop, "stop_sequence": None},
                    "usage": {"output_tokens": plan.output_tokens},
                },
            )
            yield sse("message_stop", {"type": "message_stop"})
    finally:
        done = emitted == plan.output_tokens and not plan.hang_after_first_token
        ctx.finish(200, emitted, None if done else "stream interrupted")
