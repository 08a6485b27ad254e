"""OpenAI-compatible chat completions rendering (vLLM flavour) for the scripted upstream.

Streaming: ``data: {chat.completion.chunk}`` frames - a role chunk, ``delta.content`` pieces,
``delta.tool_calls`` fragments (first fragment of call i carries ``index``, ``id``, ``type``,
``function.name`` and empty arguments; later ones only ``index`` and ``function.arguments``), a final
chunk with ``finish_reason``, a usage chunk (``choices: []``) when ``stream_options.include_usage``,
then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ._playback import Plan, PlaybackContext, new_id

FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def sse(data: dict[str, Any]) -> bytes:
    """One SSE ``data:`` frame."""
    return f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def usage(ctx: PlaybackContext, output_tokens: int) -> dict[str, Any]:
    adm = ctx.admission
    return {
        "prompt_tokens": adm.prompt_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": adm.prompt_tokens + output_tokens,
        "prompt_tokens_details": {"cached_tokens": adm.cached_tokens},
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError"}
    return {
        "object": "error",
        "message": message,
        "type": kinds.get(status, "InternalServerError"),
        "param": None,
        "code": status,
    }


def completion(plan: Plan, ctx: PlaybackContext) -> dict[str, Any]:
    """The non-streaming response body."""
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": plan.text if plan.text_tokens or not plan.calls else None,
    }
    if plan.calls:
        msg["tool_calls"] = [
            {
                "id": "call_" + c.id_suffix,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in plan.calls
        ]
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model_name,
        "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": FINISH[plan.stop]}],
        "usage": usage(ctx, plan.output_tokens),
    }


async def stream(plan: Plan, ctx: PlaybackContext) -> AsyncIterator[bytes]:
    """The streaming response: prefill wait, then chunks paced by the latency model."""
    cid = new_id("chatcmpl-")
    include_usage = bool((ctx.request.body.get("stream_options") or {}).get("include_usage"))
    emitted = 0

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": ctx.created,
                "model": ctx.model_name,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
        )

    try:
        await ctx.sim.prefill(ctx.admission)
        async with ctx.sim.decoding() as decode:
            yield chunk({"role": "assistant", "content": ""})
            ctx.mark_first_byte()
            async for piece in decode.pace(plan.text_tokens):
                yield chunk({"content": piece})
                emitted = decode.tokens_emitted
                if plan.hang_after_first_token:
                    await ctx.hang()
                    return
            for i, call in enumerate(plan.calls):
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": "call_" + call.id_suffix,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
                async for piece in decode.pace(call.tokens):
                    yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                    emitted = decode.tokens_emitted
                    if plan.hang_after_first_token:
                        await ctx.hang()
                        return
            emitted = plan.output_tokens
            yield chunk({}, FINISH[plan.stop])
            if include_usage:
                yield sse(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": ctx.created,
                        "model": ctx.model_name,
                        "choices": [],
                        "usage": usage(ctx, plan.output_tokens),
                    }
                )
            yield b"data: [DONE]\n\n"
    finally:
        done = emitted == plan.output_tokens and not plan.hang_after_first_token
        ctx.finish(200, emitted, None if done else "stream interrupted")
