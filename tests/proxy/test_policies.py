"""Metering headers, budgets, max_tokens caps, force_tool / stop_after_tool, config loading, routing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxy import AgentPolicy, ConfigError, ProxyConfig, check_events, load_config, parse_sse
from proxy._router import Router

from .fakes import A, B, FakeUpstream, Sse, make_config, msg_body, proxy_client, text_chunks, tool_chunks

pytestmark = pytest.mark.anyio
SAVE = {"name": "mcp__coach__write_shadow", "description": "", "input_schema": {"type": "object"}}
H = {"x-coach-agent": "shadow", "x-coach-user": "u1", "x-coach-session": "s1", "x-coach-turn": "t1"}


async def test_session_budget_refuses_with_numbers_and_usage_log(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"
    up = FakeUpstream(lambda b: Sse(text_chunks("x", usage=(40, 10))))
    cfg = make_config(session_token_budget=100, usage_log=str(log))
    async with proxy_client(up, cfg) as c:
        assert (await c.post("/v1/messages", json=msg_body(), headers=H)).status_code == 200
        assert (await c.post("/v1/messages", json=msg_body(), headers=H)).status_code == 200
        r = await c.post("/v1/messages", json=msg_body(stream=True), headers=H)
        other = await c.post("/v1/messages", json=msg_body(), headers={**H, "x-coach-session": "s2"})
    assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"
    msg = r.json()["error"]["message"]
    assert "session 's1'" in msg and "100 tokens" in msg and "100 are used" in msg
    assert other.status_code == 200
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["status"] for x in lines] == ["ok", "ok", "error:permission_error", "ok"]
    assert lines[0] | {"ts": 0, "id": "", "ttft_ms": 0, "total_ms": 0} == {
        "ts": 0,
        "id": "",
        "agent": "shadow",
        "user": "u1",
        "session": "s1",
        "turn": "t1",
        "model": "qwen3",
        "replica": A,
        "status": "ok",
        "stream": False,
        "input_tokens": 40,
        "cached_tokens": 0,
        "output_tokens": 10,
        "ttft_ms": 0,
        "total_ms": 0,
        "stop_reason": "end_turn",
        "attempts": 1,
        "prefill": False,
    }
    # budgets survive a restart: the log is replayed
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(), headers=H)
    assert r.status_code == 403


async def test_agent_budget_lowers_max_tokens_then_refuses() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("x", usage=(30, 30))))
    cfg = make_config(agents={"shadow": AgentPolicy(token_budget=200)})
    async with proxy_client(up, cfg) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=1000), headers=H)
        await c.post("/v1/messages", json=msg_body(max_tokens=1000), headers=H)
        await c.post("/v1/messages", json=msg_body(max_tokens=1000), headers=H)
        r = await c.post("/v1/messages", json=msg_body(), headers=H)
        m = await c.get("/metrics")
    sent = [s.json["max_tokens"] for s in up.calls()]
    assert sent[0] < 200 and sent[1] < sent[0] and len(sent) == 3
    assert r.status_code == 403 and "agent 'shadow' in session 's1'" in r.json()["error"]["message"]
    assert 'coach_proxy_budget_refusals_total{agent="shadow",budget="agent"} 1' in m.text


async def test_agent_max_tokens_cap_clamps_or_refuses() -> None:
    up = FakeUpstream()
    pol = {"shadow": AgentPolicy(max_tokens=64)}
    async with proxy_client(up, make_config(agents=pol)) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=32000), headers=H)
    assert up.calls()[0].json["max_tokens"] == 64
    async with proxy_client(up, make_config(agents=pol, max_tokens_over_cap="refuse")) as c:
        r = await c.post("/v1/messages", json=msg_body(max_tokens=32000), headers=H)
    assert r.status_code == 403 and "max_tokens cap of agent 'shadow'" in r.json()["error"]["message"]
    assert "32000" in r.json()["error"]["message"] and "64" in r.json()["error"]["message"]


async def test_context_window_clamps_max_tokens() -> None:
    up = FakeUpstream()
    up.tokenize_count = 1000  # the upstream's exact count of the prompt (/tokenize)
    async with proxy_client(up, make_config(pool={"context_window": 4096})) as c:
        await c.post("/v1/messages", json=msg_body("y" * 4000, max_tokens=128000))
    assert up.calls()[0].json["max_tokens"] == 4096 - 1000 - 8


async def test_force_tool_first_call_then_stop_after_tool_locally() -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coach__write_shadow", '{"a":1}', id="t1")))
    cfg = make_config(agents={"shadow": AgentPolicy(force_tool="write_shadow", stop_after_tool=True)})
    first = msg_body(tools=[SAVE], thinking={"type": "enabled", "budget_tokens": 2000})
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "mcp__coach__write_shadow", "input": {}}],
        },
    ]
    ok = {
        **first,
        "messages": [
            *history,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "stored"}]},
        ],
    }
    bad = {
        **first,
        "messages": [
            *history,
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "schema error", "is_error": True}
                ],
            },
        ],
    }
    async with proxy_client(up, cfg) as c:
        r1 = await c.post("/v1/messages", json=first, headers=H)
        r2 = await c.post("/v1/messages", json={**ok, "stream": True}, headers=H)
        r3 = await c.post("/v1/messages", json=bad, headers=H)
        r4 = await c.post("/v1/messages", json=ok, headers={**H, "x-coach-agent": "coach"})
    calls = up.calls()
    assert calls[0].json["tool_choice"] == {
        "type": "function",
        "function": {"name": "mcp__coach__write_shadow"},
    }
    assert calls[0].json["chat_template_kwargs"] == {"enable_thinking": False}
    assert r1.json()["stop_reason"] == "tool_use"
    events = parse_sse(r2.text)
    assert check_events(events) == []
    assert [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"] == ["Done."]
    assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert (
        calls[1].json["tool_choice"]["function"]["name"] == "mcp__coach__write_shadow"
    )  # repair after error
    assert "tool_choice" not in calls[2].json  # another agent: no policy
    assert len(calls) == 3 and r3.status_code == r4.status_code == 200


async def test_force_tool_again_on_a_warm_process_next_turn() -> None:
    """A warm Claude Code process carries earlier turns (and their tool results) in its history: the
    first model call of the next turn must be forced again, judged on the latest user message."""
    up = FakeUpstream(lambda b: Sse(tool_chunks("mcp__coach__write_shadow", '{"a":1}', id="t2")))
    cfg = make_config(agents={"shadow": AgentPolicy(force_tool="write_shadow", stop_after_tool=True)})
    earlier_turn = [
        {"role": "user", "content": "turn one"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "mcp__coach__write_shadow", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "stored"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    body = msg_body(tools=[SAVE])
    next_turn = {**body, "messages": [*earlier_turn, {"role": "user", "content": "turn two"}]}
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=next_turn, headers=H)
    assert r.status_code == 200 and r.json()["stop_reason"] == "tool_use"
    (call,) = up.calls()
    assert call.json["tool_choice"] == {"type": "function", "function": {"name": "mcp__coach__write_shadow"}}


async def test_agent_model_alias_routes_to_other_pool() -> None:
    from proxy import ModelPool

    up = FakeUpstream()
    cfg = ProxyConfig(
        models=[ModelPool(name="small", replicas=[A]), ModelPool(name="big", aliases=["deep"], replicas=[B])],
        default_model="small",
        agents={"pineal": AgentPolicy(model_alias="deep")},
    )
    async with proxy_client(up, cfg) as c:
        await c.post("/v1/messages", json=msg_body(), headers={"x-coach-agent": "pineal"})
        await c.post("/v1/messages", json=msg_body(), headers={"x-coach-agent": "coach"})
    assert [s.url for s in up.calls()] == [B, A]


def test_least_outstanding_with_session_affinity() -> None:
    cfg = make_config([A, B])
    r = Router(cfg)
    ra = r.pick("qwen3", "s1")
    ra.outstanding += 5
    assert r.pick("qwen3", "s1") is ra  # affinity beats load while healthy
    other = next(s for s in (f"s{i}" for i in range(2, 100)) if r.pick("qwen3", s) is not ra)
    rb = r.pick("qwen3", other)
    assert rb is not ra, "another session may go to the other replica (rendezvous hashing spreads them)"
    r.mark_down(ra)
    assert r.pick("qwen3", "s1") is rb  # failover when the affine replica is down
    assert r.pick("qwen3", None) is rb
    r.mark_up(ra)
    assert r.pick("qwen3", "s1") is ra, "back on its replica once that is up again"
    rb.outstanding += 10
    assert r.pick("qwen3", None) is ra, "no session: the least busy replica"


async def test_active_health_check_marks_replica_down() -> None:
    from .fakes import ConnectFail

    up = FakeUpstream()
    up.script(A + "/health", ConnectFail())
    app_client = proxy_client(up, make_config([A, B]))
    state = app_client.app.state.proxy  # type: ignore[attr-defined]
    await state.router.check_health(state.client)
    async with app_client as c:
        h = (await c.get("/health")).json()
        await c.post("/v1/messages", json=msg_body())
    assert [x["available"] for x in h["replicas"]] == [False, True]
    assert up.calls()[0].url == B


def test_load_config_from_toml(tmp_path: Path) -> None:
    p = tmp_path / "coach.toml"
    p.write_text("""
[data]
dir = "x"
[proxy]
port = 9000
api_key = "k"
default_model = "qwen3"
session_token_budget = 5000
[[proxy.models]]
name = "qwen3"
aliases = ["fast"]
replicas = ["http://127.0.0.1:8000/v1/"]
context_window = 32768
[proxy.agents.shadow]
force_tool = "write_shadow"
stop_after_tool = true
max_tokens = 1024
""")
    cfg = load_config(p)
    assert cfg.host == "127.0.0.1" and cfg.port == 9000
    assert cfg.models[0].replicas == ["http://127.0.0.1:8000"]
    assert cfg.agents["shadow"] == AgentPolicy(
        force_tool="write_shadow", stop_after_tool=True, max_tokens=1024
    )
    p.write_text("[proxy]\nport = 'x'\nbogus = 1\n")
    with pytest.raises(ConfigError, match=r"port.*bogus|bogus.*port"):
        load_config(p)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_config_rejects_unknown_default_model() -> None:
    with pytest.raises(ValueError, match="default_model"):
        ProxyConfig(default_model="x")
