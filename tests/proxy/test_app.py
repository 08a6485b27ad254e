"""The HTTP surface through httpx.ASGITransport, upstream faked at the boundary (tests/proxy/fakes.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy import ModelPool, ProxyConfig, check_events, parse_sse

from .fakes import A, FakeUpstream, Sse, make_config, msg_body, proxy_client, text_chunks, tool_chunks

pytestmark = pytest.mark.anyio

TOOL = {
    "name": "mcp__coach__save",
    "description": "save",
    "input_schema": {"type": "object", "properties": {"v": {"type": "string"}}},
}


async def post(
    up: FakeUpstream,
    body: dict[str, Any],
    config: ProxyConfig | None = None,
    headers: dict[str, str] | None = None,
    path: str = "/v1/messages",
) -> Any:
    async with proxy_client(up, config or make_config()) as c:
        return await c.post(path, json=body, headers=headers or {})


async def test_stream_text_well_formed_with_beta_query_and_unknown_beta_header() -> None:
    up = FakeUpstream()
    async with proxy_client(up, make_config()) as c:
        r = await c.post(
            "/v1/messages?beta=true",
            json=msg_body(stream=True),
            headers={"anthropic-beta": "made-up-beta-2099-01-01", "anthropic-version": "2023-06-01"},
        )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    assert check_events(events) == []
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "Hello world"
    sent = up.calls()[0].json
    assert sent["model"] == "Qwen/Qwen3-8B" and sent["stream"] is True


async def test_non_stream_tool_use_and_unique_ids() -> None:
    up = FakeUpstream(lambda body: Sse(tool_chunks("mcp__coach__save", '{"v": "x"}', text="ok")))
    ids = set()
    async with proxy_client(up, make_config()) as c:
        for _ in range(3):
            r = await c.post("/v1/messages", json=msg_body(tools=[TOOL]))
            m = r.json()
            ids.add(m["id"])
    assert m["stop_reason"] == "tool_use"
    assert [b["type"] for b in m["content"]] == ["text", "tool_use"]
    assert m["content"][1]["input"] == {"v": "x"}
    assert m["usage"]["input_tokens"] == 30 and m["usage"]["output_tokens"] == 12
    assert len(ids) == 3


async def test_max_tokens_one_probe() -> None:
    up = FakeUpstream(lambda body: Sse(text_chunks("Hi", finish="length", usage=(9, 1))))
    r = await post(up, msg_body(max_tokens=1, stream=True))
    events = parse_sse(r.text)
    assert check_events(events) == []
    assert next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"] == "max_tokens"
    assert up.calls()[0].json["max_tokens"] == 1


@pytest.mark.parametrize("header", ["x-api-key", "authorization"])
async def test_api_key_both_headers(header: str) -> None:
    up = FakeUpstream()
    cfg = make_config(api_key="sekret")
    value = "sekret" if header == "x-api-key" else "Bearer sekret"
    assert (await post(up, msg_body(), cfg, {header: value})).status_code == 200
    r = await post(up, msg_body(), cfg, {header: "wrong" if header == "x-api-key" else "Bearer wrong"})
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    r = await post(up, msg_body(), cfg)
    assert r.status_code == 401 and "x-api-key" in r.json()["error"]["message"]


async def test_errors_are_anthropic_shaped() -> None:
    up = FakeUpstream()
    async with proxy_client(up, make_config(max_body_bytes=2048)) as c:
        r = await c.post("/v1/messages", content=b"{not json")
        assert r.status_code == 400 and r.json() == {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": r.json()["error"]["message"]},
        }
        r = await c.post("/v1/messages", json={"model": "qwen3", "messages": []})
        assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
        r = await c.post("/v1/messages", json=msg_body("x" * 5000))
        assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
        r = await c.post("/v1/messages", json={**msg_body(), "model": "gpt-9"})
        assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
        r = await c.get("/v1/nothing")
        assert r.status_code == 404 and r.json()["type"] == "error"
        r = await c.get("/v1/messages")
        assert r.status_code == 405 and r.json()["error"]["type"] == "invalid_request_error"
    assert up.calls() == []


async def test_model_aliases_and_glob_patterns_route_to_the_pool() -> None:
    up = FakeUpstream()
    async with proxy_client(up, make_config()) as c:
        for name in ("fast", "claude-sonnet-4-5-20250929"):
            assert (await c.post("/v1/messages", json={**msg_body(), "model": name})).status_code == 200
        r = await c.get("/v1/models")
    assert [m["id"] for m in r.json()["data"]] == ["qwen3", "fast"]
    assert all(s.json["model"] == "Qwen/Qwen3-8B" for s in up.calls())


async def test_count_tokens_exact_via_tokenize_includes_system_and_tools() -> None:
    up = FakeUpstream()
    body = {
        "model": "qwen3",
        "system": "S" * 400,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [TOOL],
    }
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages/count_tokens", json=body)
        r2 = await c.post("/v1/messages/count_tokens", json={**body, "tools": []})
    assert r.status_code == 200 and r.headers["x-coach-token-count"] == "exact"
    assert "estimated" not in r.json()
    sent = up.calls("/tokenize")[0].json
    assert sent["messages"][0] == {"role": "system", "content": "S" * 400} and sent["tools"]
    assert r.json()["input_tokens"] > r2.json()["input_tokens"] > 80


async def test_count_tokens_estimate_when_upstream_cannot_tokenize() -> None:
    up = FakeUpstream()

    async def no_tokenize(request: Any) -> Any:
        import httpx

        if request.url.path in ("/tokenize", "/apply-template"):
            return httpx.Response(404, json={"detail": "Not Found"})
        return await FakeUpstream.handle(up, request)

    import httpx

    up.transport = httpx.MockTransport(no_tokenize)
    r = await post(
        up,
        {"model": "qwen3", "messages": [{"role": "user", "content": "x" * 400}]},
        path="/v1/messages/count_tokens",
    )
    assert r.json()["estimated"] is True and r.headers["x-coach-token-count"] == "estimate"
    assert 100 <= r.json()["input_tokens"] < 200


async def test_health_and_metrics() -> None:
    up = FakeUpstream()
    async with proxy_client(up, make_config()) as c:
        await c.post(
            "/v1/messages", json=msg_body(), headers={"x-coach-agent": "shadow", "x-coach-session": "s1"}
        )
        h = await c.get("/health")
        m = await c.get("/metrics")
    assert h.status_code == 200 and h.json()["replicas"][0]["url"] == A
    text = m.text
    assert m.headers["content-type"].startswith("text/plain")
    assert 'coach_proxy_tokens_total{agent="shadow",session="s1",kind="input"} 20' in text
    assert 'coach_proxy_tokens_total{agent="shadow",session="s1",kind="output"} 5' in text
    assert 'coach_proxy_session_ttft_seconds_count{agent="shadow",session="s1"} 1' in text
    assert 'coach_proxy_requests_total{agent="shadow",model="qwen3",status="ok"} 1' in text
    assert 'coach_proxy_ttft_seconds_bucket{agent="shadow",le="+Inf"} 1' in text


async def test_billing_header_stripped_prefix_identical_upstream_bytes() -> None:
    up = FakeUpstream()
    async with proxy_client(up, make_config()) as c:
        for h in ("aaa", "bbb"):
            sys_ = [
                {"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.33; cch={h};"},
                {"type": "text", "text": "You are Shadow."},
            ]
            await c.post("/v1/messages", json=msg_body(system=sys_, tools=[TOOL], stream=True))
    a, b = (json.dumps(s.json) for s in up.calls())
    assert a == b and "billing" not in a


async def test_anthropic_upstream_kind_revalidated() -> None:
    import httpx

    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_fixed",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "x",
                "usage": {"input_tokens": 11, "output_tokens": 0},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "pass"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # the proxy asking the served context (/v1/models, /props): none told
            return httpx.Response(404)
        seen.append((request.url.path, json.loads(request.content), request.headers))
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    up = FakeUpstream()
    up.transport = httpx.MockTransport(handler)
    cfg = ProxyConfig(models=[ModelPool(name="qwen3", kind="anthropic", replicas=[A], api_key="upkey")])
    body = msg_body(
        stream=True,
        system=[{"type": "text", "text": "x-anthropic-billing-header: z"}, {"type": "text", "text": "S"}],
        messages=[
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "text", "text": "a"},
                ],
            },
            {"role": "user", "content": "v"},
            {"role": "system", "content": "late"},
        ],
        tools=[TOOL, {"type": "web_search_20250305", "name": "web_search"}],
    )
    async with proxy_client(up, cfg) as c:
        r1 = await c.post("/v1/messages?beta=true", json=body)
        r2 = await c.post("/v1/messages", json={**body, "stream": False})
    ev = parse_sse(r1.text)
    assert check_events(ev) == []
    assert ev[0]["message"]["id"] != "msg_fixed" and r2.json()["id"] != ev[0]["message"]["id"]
    assert r2.json()["content"] == [{"type": "text", "text": "pass"}]
    path, sent, headers = seen[0]
    assert path == "/v1/messages" and headers["x-api-key"] == "upkey"
    assert sent["system"] == [{"type": "text", "text": "S"}]
    assert [t["name"] for t in sent["tools"]] == ["mcp__coach__save"]
    assert "thinking" not in json.dumps(sent["messages"])
    assert sent["messages"][-1]["content"][-1] == {"type": "text", "text": "late"}


async def test_count_tokens_anthropic_upstream_pass_through() -> None:
    import httpx

    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # the proxy asking the served context (/v1/models, /props): none told
            return httpx.Response(404)
        seen.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json={"input_tokens": 321})

    up = FakeUpstream()
    up.transport = httpx.MockTransport(handler)
    cfg = ProxyConfig(
        models=[ModelPool(name="qwen3", kind="anthropic", replicas=[A], upstream_model="up-model")]
    )
    async with proxy_client(up, cfg) as c:
        r = await c.post(
            "/v1/messages/count_tokens?beta=true",
            json={
                "model": "qwen3",
                "system": [
                    {"type": "text", "text": "x-anthropic-billing-header: q"},
                    {"type": "text", "text": "S"},
                ],
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [TOOL],
            },
        )
    assert r.json() == {"input_tokens": 321} and r.headers["x-coach-token-count"] == "exact"
    path, body = seen[0]
    assert path == "/v1/messages/count_tokens" and body["model"] == "up-model"
    assert (
        body["system"] == [{"type": "text", "text": "S"}]
        and "max_tokens" not in body
        and "stream" not in body
    )
