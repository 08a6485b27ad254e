"""The official ``anthropic`` SDK as the client, through the proxy, in front of the scripted
OpenAI-compatible upstream of ``testsupport`` — all in process (ASGI transports on both hops)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import httpx2
import pytest

from proxy import ModelPool, ProxyConfig, assert_well_formed, create_app
from testsupport import Reply, ScriptedUpstream, Text, ToolCall

pytestmark = pytest.mark.anyio

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HEADERS = {"x-coach-agent": "coach", "x-coach-session": "sdk-1"}


@pytest.fixture
def upstream() -> ScriptedUpstream:
    return ScriptedUpstream(
        {
            "coach": [
                Reply("Checking.", (ToolCall("get_weather", {"city": "Lisbon"}),)),
                Text("It is sunny in Lisbon."),
            ]
        }
    )


@pytest.fixture
async def client(upstream: ScriptedUpstream) -> AsyncIterator[anthropic.AsyncAnthropic]:
    cfg = ProxyConfig(
        api_key="proxy-key",
        models=[ModelPool(name="qwen3", aliases=["claude-*"], replicas=["http://upstream"])],
    )
    app = create_app(cfg, transport=httpx.ASGITransport(app=upstream.app), health_checks=False)
    # the anthropic SDK (2.x) speaks through httpx2, so its in-process transport comes from there
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://proxy")
    async with anthropic.AsyncAnthropic(
        base_url="http://proxy", api_key="proxy-key", http_client=http, default_headers=HEADERS, max_retries=0
    ) as c:
        yield c
    await app.state.proxy.client.aclose()


async def test_sdk_tool_use_round_trip_streaming(
    client: anthropic.AsyncAnthropic, upstream: ScriptedUpstream
) -> None:
    messages: list[Any] = [{"role": "user", "content": "Weather in Lisbon?"}]
    events: list[Any] = []
    async with client.messages.stream(
        model="claude-coach-test", max_tokens=512, messages=messages, tools=[WEATHER]
    ) as s:
        async for ev in s:
            events.append(ev.model_dump())
        first = await s.get_final_message()
    assert_well_formed(
        [
            e
            for e in events
            if e["type"]
            in {
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            }
        ]
    )
    assert first.stop_reason == "tool_use"
    tool = next(b for b in first.content if b.type == "tool_use")
    assert tool.name == "get_weather" and tool.input == {"city": "Lisbon"}
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "sunny, 24C"}],
        },
    ]
    async with client.messages.stream(
        model="claude-coach-test", max_tokens=512, messages=messages, tools=[WEATHER]
    ) as s:
        second = await s.get_final_message()
    assert second.stop_reason == "end_turn"
    assert second.content[0].type == "text" and second.content[0].text == "It is sunny in Lisbon."
    assert second.id != first.id
    # the upstream saw the tool result as an OpenAI tool message answering the same call id
    sent = upstream.model_calls("coach")[1].body
    tool_msg = next(m for m in sent["messages"] if m["role"] == "tool")
    assert tool_msg == {"role": "tool", "tool_call_id": tool.id, "content": "sunny, 24C"}


async def test_sdk_non_streaming_and_count_tokens(client: anthropic.AsyncAnthropic) -> None:
    msg = await client.messages.create(
        model="qwen3", max_tokens=256, tools=[WEATHER], messages=[{"role": "user", "content": "Weather?"}]
    )
    assert msg.stop_reason == "tool_use" and msg.usage.output_tokens > 0
    count = await client.messages.count_tokens(
        model="qwen3",
        messages=[{"role": "user", "content": "hello"}],
        system="You are terse.",
        tools=[WEATHER],
    )
    assert count.input_tokens > 5


async def test_sdk_sees_typed_errors(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.BadRequestError):
        await client.messages.create(model="qwen3", max_tokens=0, messages=[{"role": "user", "content": "x"}])
    bad = anthropic.AsyncAnthropic(
        base_url="http://proxy", api_key="wrong", http_client=client._client, max_retries=0
    )
    with pytest.raises(anthropic.AuthenticationError):
        await bad.messages.create(model="qwen3", max_tokens=5, messages=[{"role": "user", "content": "x"}])
