"""``ModelPool.forced_tool_prefill``: forcing a tool on an upstream that ignores a *named* tool choice
(llama.cpp's llama-server, measured in tests/embedded/test_embedded_model.py). The forced request carries
only that tool, tool_choice "required" (OpenAI) / ``{"type": "any"}`` (Anthropic), and ends with an
assistant prefill; without the pool setting the named choice is sent unchanged (vLLM)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from proxy import AgentPolicy, ModelPool, ProxyConfig, check_events, parse_sse

from .fakes import A, FakeUpstream, Sse, make_config, msg_body, proxy_client, tool_chunks

pytestmark = pytest.mark.anyio
WRITE = {"name": "mcp__coachboard__write_shadow", "description": "", "input_schema": {"type": "object"}}
READ = {"name": "mcp__coachboard__read_entry", "description": "", "input_schema": {"type": "object"}}
H = {"x-coach-agent": "shadow", "x-coach-user": "u1", "x-coach-session": "s1", "x-coach-turn": "t1"}
POLICY = {"shadow": AgentPolicy(force_tool="write_shadow", stop_after_tool=True, max_tokens=300)}
PREFILL = "<tool_call>\n"


async def test_openai_upstream_gets_one_tool_required_and_the_prefill() -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coachboard__write_shadow", '{"a":1}', id="c1")))
    cfg = make_config(agents=POLICY, pool={"forced_tool_prefill": PREFILL})
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": WRITE["name"], "input": {}}],
        },
    ]
    repair = [
        *history,
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "schema error", "is_error": True}
            ],
        },
    ]
    async with proxy_client(up, cfg) as c:
        r1 = await c.post("/v1/messages", json=msg_body(tools=[READ, WRITE], stream=True), headers=H)
        r2 = await c.post("/v1/messages", json=msg_body(tools=[READ, WRITE], messages=repair), headers=H)
        r3 = await c.post(
            "/v1/messages", json=msg_body(tools=[READ, WRITE]), headers={**H, "x-coach-agent": "coach"}
        )
    first, again, other = (s.json for s in up.calls())
    for sent in (first, again):
        assert [t["function"]["name"] for t in sent["tools"]] == [WRITE["name"]]
        assert sent["tool_choice"] == "required" and sent["parallel_tool_calls"] is False
        assert sent["messages"][-1] == {"role": "assistant", "content": PREFILL}
        assert sent["max_tokens"] == 256  # under the cap of 300: unchanged
    # the repair is a fresh attempt: the failed call and its error are not shown to the model again
    assert [m["role"] for m in again["messages"]] == ["user", "assistant"]
    assert again["messages"][0]["content"] == "hi"
    assert len(other["tools"]) == 2 and "tool_choice" not in other  # no policy: untouched
    events = parse_sse(r1.text)
    assert check_events(events) == []
    assert [e["content_block"]["name"] for e in events if e["type"] == "content_block_start"] == [
        WRITE["name"]
    ]
    assert r2.json()["stop_reason"] == "tool_use" and r3.status_code == 200


async def test_anthropic_upstream_gets_one_tool_any_and_the_prefill() -> None:
    seen: list[dict[str, Any]] = []
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "x",
                "usage": {"input_tokens": 5, "output_tokens": 0},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": WRITE["name"], "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":1}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # the proxy asking the served context (/v1/models, /props): none told
            return httpx.Response(404)
        seen.append(json.loads(request.content))
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    up = FakeUpstream()
    up.transport = httpx.MockTransport(handler)
    cfg = ProxyConfig(
        models=[ModelPool(name="qwen3", kind="anthropic", replicas=[A], forced_tool_prefill=PREFILL)],
        agents=POLICY,
    )
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(tools=[READ, WRITE], stream=True), headers=H)
    sent = seen[0]
    assert [t["name"] for t in sent["tools"]] == [WRITE["name"]]
    assert sent["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert sent["messages"][-1] == {"role": "assistant", "content": [{"type": "text", "text": PREFILL}]}
    ev = parse_sse(r.text)
    assert check_events(ev) == []
    assert ev[-2]["delta"]["stop_reason"] == "tool_use"


async def test_without_the_pool_setting_the_named_choice_is_sent_unchanged() -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coachboard__write_shadow", '{"a":1}', id="c1")))
    async with proxy_client(up, make_config(agents=POLICY)) as c:
        await c.post("/v1/messages", json=msg_body(tools=[READ, WRITE]), headers=H)
    sent = up.calls()[0].json
    assert len(sent["tools"]) == 2
    assert sent["tool_choice"] == {"type": "function", "function": {"name": WRITE["name"]}}
    assert sent["messages"][-1]["role"] == "user"


async def test_bounded_numbers_go_upstream_as_integers_for_the_grammar() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 100},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "share": {"type": "number", "minimum": 0, "maximum": 0.5},
            "free": {"type": "number"},
            "traits": {"$ref": "#/$defs/T"},
        },
        "$defs": {
            "T": {
                "type": "object",
                "properties": {"pomp": {"type": "number", "minimum": 0.0, "maximum": 100.0}},
            }
        },
    }
    tool = {**WRITE, "input_schema": schema}
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coachboard__write_shadow", '{"score":5}', id="c1")))
    async with proxy_client(up, make_config(agents=POLICY, pool={"forced_tool_prefill": PREFILL})) as c:
        await c.post("/v1/messages", json=msg_body(tools=[tool]), headers=H)
    async with proxy_client(up, make_config(agents=POLICY)) as c:  # vLLM: the schema is sent as given
        await c.post("/v1/messages", json=msg_body(tools=[tool]), headers=H)
    narrowed, plain = (s.json["tools"][0]["function"]["parameters"] for s in up.calls())
    props = narrowed["properties"]
    assert props["score"]["type"] == props["confidence"]["type"] == "integer"
    assert props["share"]["type"] == props["free"]["type"] == "number"  # no integer bounds: unchanged
    assert narrowed["$defs"]["T"]["properties"]["pomp"]["type"] == "integer"
    assert plain == schema


async def test_omitted_properties_are_left_out_of_the_forced_tools_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"risk": {"$ref": "#/$defs/R"}, "reply": {"type": "string"}},
        "required": ["reply"],
        "$defs": {"R": {"type": "object", "properties": {"tier": {"type": "integer"}}}},
    }
    tool = {**WRITE, "input_schema": schema}
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coachboard__write_shadow", '{"reply":"hi"}', id="c1")))
    pool = {"forced_tool_prefill": PREFILL, "omit_tool_properties": ["risk", "absent"]}
    async with proxy_client(up, make_config(agents=POLICY, pool=pool)) as c:
        await c.post("/v1/messages", json=msg_body(tools=[tool]), headers=H)
    async with proxy_client(up, make_config(agents=POLICY, pool={"omit_tool_properties": ["risk"]})) as c:
        await c.post("/v1/messages", json=msg_body(tools=[tool]), headers=H)  # no prefill pool: not narrowed
    narrowed, plain = (s.json["tools"][0]["function"]["parameters"] for s in up.calls())
    assert list(narrowed["properties"]) == ["reply"] and narrowed["required"] == ["reply"]
    assert plain == schema


async def test_a_fresh_repair_keeps_earlier_turns_of_a_warm_conversation() -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coachboard__write_shadow", '{"a":1}', id="c3")))
    call = {"type": "tool_use", "name": WRITE["name"], "input": {}}
    messages = [
        {"role": "user", "content": "turn 1"},
        {"role": "assistant", "content": [{**call, "id": "c1"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "stored"}]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "turn 2"},
        {"role": "assistant", "content": [{**call, "id": "c2"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c2", "content": "bad", "is_error": True},
                {"type": "text", "text": "fix it"},
            ],
        },
    ]
    async with proxy_client(up, make_config(agents=POLICY, pool={"forced_tool_prefill": PREFILL})) as c:
        await c.post("/v1/messages", json=msg_body(tools=[WRITE], messages=messages), headers=H)
    sent = up.calls()[0].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert sent[-2]["content"] == "turn 2" and sent[-1]["content"] == PREFILL
