"""Failure handling: retries before the first byte only, failover, timeouts, resets, garbage, budgets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy import check_events, parse_sse

from .fakes import (
    A,
    B,
    ConnectFail,
    FakeUpstream,
    HangFirstByte,
    Sse,
    Status,
    make_config,
    msg_body,
    proxy_client,
    text_chunks,
    tool_chunks,
)

pytestmark = pytest.mark.anyio


async def send(up: FakeUpstream, stream: bool, config: Any = None, **kw: Any) -> Any:
    async with proxy_client(up, config or make_config()) as c:
        return await c.post(
            "/v1/messages", json=msg_body(stream=stream, **kw.pop("body", {})), headers=kw.pop("headers", {})
        )


@pytest.mark.parametrize("stream", [True, False])
async def test_upstream_500_retried_then_served(stream: bool) -> None:
    up = FakeUpstream()
    up.script(A, Status(500), Status(502))
    r = await send(up, stream)
    assert r.status_code == 200 and len(up.calls()) == 3


@pytest.mark.parametrize("stream", [True, False])
async def test_upstream_500_every_attempt_is_api_error(stream: bool) -> None:
    up = FakeUpstream(lambda b: Status(500, {"error": {"message": "CUDA out of memory"}}))
    r = await send(up, stream)
    assert r.status_code == 502 and r.json()["error"]["type"] == "api_error"
    assert "CUDA out of memory" in r.json()["error"]["message"] and len(up.calls()) == 3


async def test_retry_warnings_are_one_per_replica_and_never_echo_the_upstream_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    up = FakeUpstream(lambda b: Status(500, {"error": {"message": "echo: MARKER-user-text"}}))
    with caplog.at_level("DEBUG", logger="proxy.messages"):
        async with proxy_client(up, make_config()) as c:
            for _ in range(3):  # three requests, two retries each: six retries
                r = await c.post("/v1/messages", json=msg_body(stream=False))
                assert r.status_code == 502
    retries = [r for r in caplog.records if r.getMessage().startswith("retrying upstream request")]
    assert len(retries) == 6
    assert [r.levelname for r in retries].count("WARNING") == 1  # the rest at debug
    warned = [r for r in caplog.records if r.levelno >= 20]
    assert warned and not any("MARKER-user-text" in r.getMessage() for r in warned)
    assert any("MARKER-user-text" in r.getMessage() for r in caplog.records if r.levelname == "DEBUG")


async def test_429_retry_after_honoured_then_served() -> None:
    up = FakeUpstream()
    up.script(A, Status(429, headers={"retry-after": "0"}))
    r = await send(up, True)
    assert r.status_code == 200 and check_events(parse_sse(r.text)) == []
    assert len(up.calls()) == 2


async def test_429_with_long_retry_after_passed_to_client() -> None:
    up = FakeUpstream(lambda b: Status(429, headers={"retry-after": "120"}))
    r = await send(up, True)
    assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limit_error"
    assert r.headers["retry-after"] == "120" and len(up.calls()) == 1


async def test_connect_refused_everywhere_is_overloaded() -> None:
    up = FakeUpstream(lambda b: ConnectFail())
    r = await send(up, False, make_config([A, B]))
    assert r.status_code == 529 and r.json()["error"]["type"] == "overloaded_error"
    assert {s.url for s in up.calls()} == {A, B}


async def test_one_replica_down_other_serves_and_is_preferred_after() -> None:
    up = FakeUpstream()
    up.script(A, ConnectFail())
    cfg = make_config([A, B], unhealthy_cooldown_s=60)
    from proxy._router import rank_replicas

    session = next(s for s in (f"s{i}" for i in range(100)) if rank_replicas(s, [A, B])[0] == A)  # A first
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(stream=True), headers={"x-coach-session": session})
        assert r.status_code == 200 and check_events(parse_sse(r.text)) == []
        for _ in range(3):
            assert (await c.post("/v1/messages", json=msg_body())).status_code == 200
    assert [s.url for s in up.calls()] == [A, B, B, B, B]


async def test_timeout_before_first_byte_retried_on_other_replica() -> None:
    up = FakeUpstream()
    up.script(A, HangFirstByte())
    cfg = make_config([A, B], first_byte_timeout_s=0.3)
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(stream=True))
    events = parse_sse(r.text)
    assert check_events(events) == [] and any(e["type"] == "ping" for e in events)
    assert [s.url for s in up.calls()] == [A, B]
    assert up.closed.is_set()


async def test_timeout_before_first_byte_everywhere_is_timeout_error() -> None:
    up = FakeUpstream(lambda b: HangFirstByte())
    r = await send(up, False, make_config(first_byte_timeout_s=0.1, max_attempts=2))
    assert r.status_code == 504 and r.json()["error"]["type"] == "timeout_error"


async def test_pings_while_waiting_for_a_slow_first_token() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("late"), delay_s=0.4))
    r = await send(up, True)
    events = parse_sse(r.text)
    assert check_events(events) == []
    assert events[0]["type"] == "message_start" and events[1]["type"] == "ping"
    assert sum(e["type"] == "ping" for e in events) >= 3


async def test_reset_mid_stream_is_error_event_never_retried() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("a|b|c|d"), reset_after=3))
    r = await send(up, True)
    events = parse_sse(r.text)
    assert check_events(events) == []
    assert events[-1]["type"] == "error" and events[-1]["error"]["type"] == "api_error"
    assert any(e["type"] == "content_block_delta" for e in events)
    assert len(up.calls()) == 1


async def test_reset_mid_stream_non_streaming_is_502() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("a|b|c|d"), reset_after=3))
    r = await send(up, False)
    assert r.status_code == 502 and r.json()["error"]["type"] == "api_error"


async def test_reset_before_first_payload_is_retried() -> None:
    up = FakeUpstream()
    up.script(A, Sse(text_chunks("x"), reset_after=0))
    r = await send(up, True)
    assert check_events(parse_sse(r.text)) == [] and len(up.calls()) == 2


async def test_garbage_sse_before_first_payload_retried_then_error() -> None:
    up = FakeUpstream(lambda b: Sse([], raw=b"\x00<<not sse>>{{{\n\n"))
    r = await send(up, True, make_config(max_attempts=2))
    assert r.status_code == 502 and "not server-sent events" in r.json()["error"]["message"]
    assert len(up.calls()) == 2


async def test_garbage_json_in_sse_mid_stream_is_error_event() -> None:
    good = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in text_chunks("ok")[:2])
    up = FakeUpstream(lambda b: Sse([], raw=good + b"data: {broken\n\n"))
    r = await send(up, True)
    events = parse_sse(r.text)
    assert check_events(events) == [] and events[-1]["type"] == "error"


async def test_invalid_json_in_tool_arguments_is_an_error_event() -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("save", '{"v": ]]nope')))
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(stream=True))
        m = await c.get("/metrics")
    events = parse_sse(r.text)
    assert check_events(events) == []
    assert events[-1]["type"] == "error" and events[-1]["error"]["type"] == "api_error"
    assert not any(
        e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use" for e in events
    )
    assert 'coach_proxy_invalid_tool_arguments_total{outcome="error"} 1' in m.text


async def test_upstream_400_not_retried_and_mapped() -> None:
    up = FakeUpstream(
        lambda b: Status(400, {"object": "error", "message": "context too long", "type": "BadRequestError"})
    )
    r = await send(up, True)
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert "context too long" in r.json()["error"]["message"] and len(up.calls()) == 1


async def test_error_chunk_mid_stream_becomes_error_event() -> None:
    chunks = [*text_chunks("a")[:2], {"error": {"message": "engine dead", "type": "InternalServerError"}}]
    up = FakeUpstream(lambda b: Sse(chunks))
    events = parse_sse((await send(up, True)).text)
    assert check_events(events) == [] and events[-1]["type"] == "error"


@pytest.mark.e2e
async def test_client_disconnect_cancels_upstream() -> None:
    """Through a real uvicorn server: the client goes away while the upstream is still generating."""
    import anyio
    import httpx

    from proxy import create_app
    from testsupport import ThreadedServer

    up = FakeUpstream(lambda b: Sse(text_chunks("|".join(["w"] * 200)), gap_s=0.05))
    app = create_app(make_config(), transport=up.transport, health_checks=False)
    with ThreadedServer(app) as srv:
        async with httpx.AsyncClient(base_url=srv.base_url, timeout=10) as c:
            async with c.stream("POST", "/v1/messages", json=msg_body(stream=True)) as r:
                async for line in r.aiter_lines():
                    if "text_delta" in line:
                        break
        assert await anyio.to_thread.run_sync(up.closed.wait, 5.0)
        state = app.state.proxy
        assert state.router.all_replicas()[0].outstanding == 0
        assert state.meter.requests[("", "qwen3", "cancelled")] == 1


@pytest.mark.e2e
async def test_client_disconnect_cancels_upstream_non_streaming() -> None:
    import anyio
    import httpx

    from proxy import create_app
    from testsupport import ThreadedServer

    up = FakeUpstream(lambda b: Sse(text_chunks("|".join(["w"] * 200)), gap_s=0.05))
    app = create_app(make_config(), transport=up.transport, health_checks=False)
    with ThreadedServer(app) as srv:
        async with httpx.AsyncClient(base_url=srv.base_url, timeout=httpx.Timeout(10, read=0.5)) as c:
            with pytest.raises(httpx.ReadTimeout):
                await c.post("/v1/messages", json=msg_body())
        assert await anyio.to_thread.run_sync(up.closed.wait, 5.0)
        assert app.state.proxy.router.all_replicas()[0].outstanding == 0
