"""proxy._prefill: an agent's context sent ahead is computed upstream with max_tokens 1 (answered locally
at once), and the agent's next request, which repeats it as its prefix, waits for it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from proxy import PREFILL_MARKER, AgentPolicy, check_events, parse_sse

from .fakes import FakeUpstream, Sse, make_config, msg_body, proxy_client, text_chunks, tool_chunks

pytestmark = pytest.mark.anyio
TOOL = {"name": "mcp__coachboard__write_synthesis", "description": "", "input_schema": {"type": "object"}}
H = {"x-coach-agent": "pineal", "x-coach-user": "u1", "x-coach-session": "s1"}
CONTEXT = "# Context\nthe user's message\n\n" + PREFILL_MARKER + "\n"


async def test_a_prefill_is_answered_locally_and_computed_upstream_with_one_token() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length"), delay_s=0.3))
    cfg = make_config(agents={"pineal": AgentPolicy(force_tool="write_synthesis", stop_after_tool=True)})
    async with proxy_client(up, cfg) as c:
        t = time.monotonic()
        r = await c.post("/v1/messages", json=msg_body(CONTEXT, tools=[TOOL], stream=True), headers=H)
        took = time.monotonic() - t
        events = parse_sse(r.text)
        await asyncio.sleep(0.5)
    assert check_events(events) == [] and took < 0.3, "answered before the upstream finished"
    assert [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"] == ["OK."]
    (call,) = up.calls()
    assert call.json["max_tokens"] == 1 and call.headers["x-coach-prefill"] == "1"
    # prepared like the agent's real first call of a turn: same tools, same forced tool
    assert call.json["tool_choice"] == {"type": "function", "function": {"name": TOOL["name"]}}
    assert [t["function"]["name"] for t in call.json["tools"]] == [TOOL["name"]]


async def test_the_agents_next_request_waits_for_its_prefill_and_repeats_it_as_prefix() -> None:
    bodies: list[dict] = []

    def answer(body: dict) -> Sse:
        bodies.append(body)
        if body["max_tokens"] == 1:
            return Sse(text_chunks("O", finish="length"), delay_s=0.4)
        return Sse(tool_chunks(TOOL["name"], '{"text": "hi"}'))

    up = FakeUpstream(answer)
    cfg = make_config(agents={"pineal": AgentPolicy(force_tool="write_synthesis", stop_after_tool=True)})
    first = msg_body(CONTEXT, tools=[TOOL])
    history = [
        *first["messages"],
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": "# Your task"},
    ]
    async with proxy_client(up, cfg) as c:
        await c.post("/v1/messages", json=first, headers=H)
        t = time.monotonic()
        r = await c.post("/v1/messages", json={**first, "messages": history}, headers=H)
        waited = time.monotonic() - t
    assert r.json()["stop_reason"] == "tool_use" and waited >= 0.3
    prefill, real = bodies
    assert real["messages"][: len(prefill["messages"])] == prefill["messages"]
    assert real["tools"] == prefill["tools"] and real["tool_choice"] == prefill["tool_choice"]


async def test_other_agents_never_wait_for_a_prefill() -> None:
    up = FakeUpstream(
        lambda b: (
            Sse(text_chunks("O", finish="length"), delay_s=1.0)
            if b["max_tokens"] == 1
            else Sse(text_chunks("hi"))
        )
    )
    async with proxy_client(up, make_config()) as c:
        await c.post("/v1/messages", json=msg_body(CONTEXT), headers=H)
        t = time.monotonic()
        await c.post("/v1/messages", json=msg_body("hello"), headers={**H, "x-coach-agent": "persona"})
        assert time.monotonic() - t < 0.8


async def test_a_prefill_on_a_pool_that_narrows_the_forced_tool_is_still_answered_locally() -> None:
    # coach demo's embedded server: the narrowing ends the messages with an assistant text, and a prefill
    # recognised only after it went upstream as a real call (which wrote Pineal's output from the context
    # alone and ended its conversation in an error: "prefill of agent pineal failed (RuntimeError)")
    up = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))
    cfg = make_config(
        agents={"pineal": AgentPolicy(force_tool="write_synthesis", stop_after_tool=True)},
        pool={"forced_tool_prefill": '{"name": "write_synthesis", "arguments": '},
    )
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(CONTEXT, tools=[TOOL], stream=True), headers=H)
        events = parse_sse(r.text)
        for _ in range(100):
            if up.calls():
                break
            await asyncio.sleep(0.01)
    assert [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"] == ["OK."]
    (call,) = up.calls()
    assert call.json["max_tokens"] == 1 and call.headers["x-coach-prefill"] == "1"


async def test_the_usage_log_marks_a_prefill_apart_from_the_agents_own_calls(tmp_path: Path) -> None:
    """A prefill is counted (its prompt tokens were processed) but marked, so a reader of the usage log
    does not take it for a step of the agent's conversation (e.g. Pineal calling before Shadow wrote)."""

    def answer(body: dict) -> Sse:
        if body["max_tokens"] == 1:
            return Sse(text_chunks("O", finish="length"))
        return Sse(tool_chunks(TOOL["name"], '{"text": "hi"}'))

    log_path = tmp_path / "usage.jsonl"
    cfg = make_config(
        agents={"pineal": AgentPolicy(force_tool="write_synthesis", stop_after_tool=True)},
        usage_log=str(log_path),
    )
    first = msg_body(CONTEXT, tools=[TOOL])
    history = [
        *first["messages"],
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": "# Task"},
    ]
    async with proxy_client(up := FakeUpstream(answer), cfg) as c:
        await c.post("/v1/messages", json=first, headers=H)
        await c.post("/v1/messages", json={**first, "messages": history}, headers=H)
    assert len(up.calls()) == 2
    records = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [r["prefill"] for r in records if r["agent"] == "pineal"] == [True, False]
