"""Both protocols produce well-formed output (parsed by the real anthropic SDK / a strict SSE reader)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from testsupport import Reply, ScriptedUpstream, Text, ToolCall

ADVERTISED = [
    {
        "name": "mcp__coachboard__write_persona",
        "description": "d",
        "input_schema": {"type": "object", "properties": {"traits": {"type": "object"}}},
    }
]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "write_persona", "parameters": {"type": "object"}}}]
ARGS = {"traits": {"openness": 71, "note": 'ünïcode and "quotes"'}}


def _anthropic_client(up: ScriptedUpstream) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="k",
        base_url="http://upstream",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.ASGITransport(app=up.app)),
    )


def _sse_events(text: str) -> list[tuple[str | None, str]]:
    """Strict SSE parse: frames separated by a blank line; each frame has optional event: and one data:."""
    assert text.endswith("\n\n"), "stream must end with a complete frame"
    frames = []
    for raw in text.strip("\n").split("\n\n"):
        event = None
        data_lines = []
        for line in raw.split("\n"):
            field, _, value = line.partition(": ")
            assert field in ("event", "data"), line
            if field == "event":
                event = value
            else:
                data_lines.append(value)
        assert len(data_lines) == 1, raw
        frames.append((event, data_lines[0]))
    return frames


@pytest.mark.anyio
async def test_anthropic_stream_text_and_tool_use_parse_with_the_sdk() -> None:
    up = ScriptedUpstream({"persona": [ToolCall("write_persona", ARGS, text="Scoring now.")]})
    client = _anthropic_client(up)
    async with client.messages.stream(
        model="qwen",
        max_tokens=500,
        messages=[{"role": "user", "content": "hi"}],
        tools=ADVERTISED,  # type: ignore[arg-type]
        extra_headers={"x-coach-agent": "persona"},
    ) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "text" and final.content[0].text == "Scoring now."
    tool = final.content[1]
    assert tool.type == "tool_use" and tool.name == "mcp__coachboard__write_persona" and tool.input == ARGS
    assert tool.id.startswith("toolu_")
    assert final.usage.output_tokens > 0 and final.usage.input_tokens > 0


@pytest.mark.anyio
async def test_anthropic_event_sequence_and_unique_ids() -> None:
    up = ScriptedUpstream({"coach": [Text("Hello there, this is a longer reply " * 3)]})
    ids = set()
    async with up.client() as c:
        for _ in range(3):
            r = await c.post(
                "/v1/messages?beta=true",
                headers={"x-coach-agent": "coach"},
                json={
                    "model": "m",
                    "max_tokens": 1000,
                    "stream": True,
                    "messages": [{"role": "user", "content": "hi"}],
                },
            )
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            events = _sse_events(r.text)
            names = [e for e, _ in events]
            assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
            assert names[1] == "ping" and names[2] == "content_block_start" and "content_block_stop" in names
            deltas = [json.loads(d) for e, d in events if e == "content_block_delta"]
            assert len(deltas) > 1  # streamed in pieces
            text = "".join(d["delta"]["text"] for d in deltas)
            assert text == "Hello there, this is a longer reply " * 3
            for e, d in events:
                assert json.loads(d)["type"] == e
            ids.add(json.loads(events[0][1])["message"]["id"])
    assert len(ids) == 3


@pytest.mark.anyio
async def test_anthropic_non_stream_and_count_tokens() -> None:
    up = ScriptedUpstream({"persona": [ToolCall("write_persona", ARGS)]})
    client = _anthropic_client(up)
    msg = await client.messages.create(
        model="qwen",
        max_tokens=500,
        tools=ADVERTISED,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-coach-agent": "persona"},
    )
    assert msg.stop_reason == "tool_use" and len(msg.content) == 1
    assert msg.content[0].type == "tool_use" and msg.content[0].input == ARGS
    count = await client.messages.count_tokens(
        model="qwen", messages=[{"role": "user", "content": "x" * 400}]
    )
    assert count.input_tokens >= 100


def _openai_chunks(text: str) -> list[dict[str, Any]]:
    frames = _sse_events(text)
    assert all(e is None for e, _ in frames)
    assert frames[-1][1] == "[DONE]"
    return [json.loads(d) for _, d in frames[:-1]]


@pytest.mark.anyio
async def test_openai_stream_text_tool_call_fragments_finish_and_usage() -> None:
    up = ScriptedUpstream(
        {
            "persona": [
                Reply(
                    "Let me record that.",
                    (ToolCall("write_persona", ARGS), ToolCall("write_persona", {"b": 2})),
                )
            ]
        }
    )
    async with up.client() as c:
        r = await c.post(
            "/v1/chat/completions",
            headers={"x-coach-agent": "persona"},
            json={
                "model": "qwen",
                "stream": True,
                "stream_options": {"include_usage": True},
                "tools": OPENAI_TOOLS,
                "messages": [{"role": "user", "content": "hi"}],
            },
        )
    chunks = _openai_chunks(r.text)
    assert len({c["id"] for c in chunks}) == 1 and all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = ""
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for ch in chunks[:-1]:
        (choice,) = ch["choices"]
        delta = choice["delta"]
        content += delta.get("content") or ""
        for frag in delta.get("tool_calls") or []:
            slot = calls.setdefault(frag["index"], {"id": "", "name": "", "arguments": ""})
            if "id" in frag:
                assert not slot["id"], "id only on the first fragment"
                slot["id"] = frag["id"]
                slot["name"] = frag["function"]["name"]
            slot["arguments"] += frag["function"].get("arguments", "")
        finish = choice["finish_reason"] or finish
    assert content == "Let me record that."
    assert finish == "tool_calls"
    assert [calls[i]["name"] for i in sorted(calls)] == ["write_persona", "write_persona"]
    assert json.loads(calls[0]["arguments"]) == ARGS and json.loads(calls[1]["arguments"]) == {"b": 2}
    usage = chunks[-1]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0
    assert (
        usage["usage"]["total_tokens"]
        == usage["usage"]["prompt_tokens"] + usage["usage"]["completion_tokens"]
    )


@pytest.mark.anyio
async def test_openai_non_stream_tokenize_and_models() -> None:
    up = ScriptedUpstream({"coach": [Text("Short reply.")]}, model_name="qwen3-30b")
    async with up.client() as c:
        r = await c.post(
            "/v1/chat/completions",
            headers={"x-coach-agent": "coach"},
            json={"model": "qwen", "messages": [{"role": "user", "content": "hi"}]},
        )
        body = r.json()
        assert body["object"] == "chat.completion" and body["model"] == "qwen3-30b"
        assert body["choices"][0]["message"] == {"role": "assistant", "content": "Short reply."}
        assert body["choices"][0]["finish_reason"] == "stop"
        tok = (await c.post("/tokenize", json={"model": "q", "prompt": "abcdefgh"})).json()
        assert tok["count"] == 2 and len(tok["tokens"]) == 2
        tok2 = (
            await c.post("/tokenize", json={"model": "q", "messages": [{"role": "user", "content": "hi"}]})
        ).json()
        assert tok2["count"] > 0
        models = (await c.get("/v1/models")).json()
        assert models["data"][0]["id"] == "qwen3-30b"


@pytest.mark.anyio
async def test_max_tokens_cuts_the_reply() -> None:
    up = ScriptedUpstream({"coach": [ToolCall("write_persona", ARGS, text="a fairly long preamble text")]})
    async with up.client() as c:
        r = await c.post(
            "/v1/messages",
            headers={"x-coach-agent": "coach"},
            json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "q"}]},
        )
        body = r.json()
        assert body["stop_reason"] == "max_tokens" and body["content"] == [{"type": "text", "text": "a fa"}]
        r = await c.post(
            "/v1/chat/completions",
            headers={"x-coach-agent": "coach"},
            json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "q"}]},
        )
        assert r.json()["choices"][0]["finish_reason"] == "length"


@pytest.mark.anyio
async def test_cached_tokens_are_reported() -> None:
    up = ScriptedUpstream()
    system = "You are a coach. " * 200
    async with up.client() as c:
        for q in ("first", "second"):
            await c.post(
                "/v1/messages",
                json={
                    "model": "m",
                    "max_tokens": 10,
                    "system": system,
                    "messages": [{"role": "user", "content": q}],
                },
            )
    first, second = up.model_calls()
    assert first.cached_tokens == 0 and second.cached_tokens > 800
    assert second.prompt_tokens == first.prompt_tokens + 1 or second.prompt_tokens >= first.prompt_tokens
