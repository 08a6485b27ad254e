"""proxy._slots: a prefill is sent upstream only when the replica has a free slot (llama-server
``/slots``, vLLM's or llama-server's waiting gauges on ``/metrics``), asked once per short while; it is
answered locally either way."""

from __future__ import annotations

import asyncio

import pytest

from proxy import PREFILL_MARKER, AgentPolicy, parse_sse
from proxy._slots import free_in_metrics, free_in_slots

from .fakes import FakeUpstream, Sse, make_config, msg_body, proxy_client, text_chunks

pytestmark = pytest.mark.anyio
TOOL = {"name": "mcp__coachboard__write_synthesis", "description": "", "input_schema": {"type": "object"}}
H = {"x-coach-agent": "pineal", "x-coach-user": "u1", "x-coach-session": "s1"}
CONTEXT = "# Context\nthe user's message\n\n" + PREFILL_MARKER + "\n"
VLLM_METRICS = (
    "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    'vllm:num_requests_waiting{{engine="0",model_name="Qwen/Qwen3-8B"}} {waiting}\n'
    'vllm:num_requests_running{{engine="0",model_name="Qwen/Qwen3-8B"}} 6.0\n'
)


def _config() -> object:
    return make_config(agents={"pineal": AgentPolicy(force_tool="write_synthesis", stop_after_tool=True)})


async def _prefill(up: FakeUpstream, n: int = 1) -> list[str]:
    """Send ``n`` prefills (other sessions after the first); the texts the client got back."""
    replies = []
    async with proxy_client(up, _config()) as c:  # type: ignore[arg-type]
        for i in range(n):
            headers = {**H, "x-coach-session": f"s{i}"}
            r = await c.post(
                "/v1/messages", json=msg_body(CONTEXT, tools=[TOOL], stream=True), headers=headers
            )
            replies += [e["delta"]["text"] for e in parse_sse(r.text) if e["type"] == "content_block_delta"]
        await asyncio.sleep(0.05)  # a prefill sent upstream runs in the background
    return replies


def _one_token_calls(up: FakeUpstream) -> int:
    return sum(1 for c in up.calls() if c.json["max_tokens"] == 1)


async def test_a_prefill_is_skipped_when_every_llama_server_slot_is_processing() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))
    up.slots = [{"id": 0, "is_processing": True}]
    assert await _prefill(up) == ["OK."]
    assert _one_token_calls(up) == 0


async def test_a_prefill_is_sent_when_a_llama_server_slot_is_idle() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))
    up.slots = [{"id": 0, "is_processing": True}, {"id": 1, "is_processing": False}]
    assert await _prefill(up) == ["OK."]
    assert _one_token_calls(up) == 1


async def test_vllm_requests_waiting_skip_the_prefill_and_none_waiting_send_it() -> None:
    busy = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))
    busy.metrics = VLLM_METRICS.format(waiting="2.0")
    idle = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))
    idle.metrics = VLLM_METRICS.format(waiting="0.0")
    assert await _prefill(busy) == ["OK."] and _one_token_calls(busy) == 0
    assert await _prefill(idle) == ["OK."] and _one_token_calls(idle) == 1


async def test_a_server_that_tells_nothing_gets_the_prefill() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))  # /slots and /metrics: 404
    assert await _prefill(up) == ["OK."]
    assert _one_token_calls(up) == 1


async def test_the_slots_are_asked_once_for_prefills_close_together() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("O", finish="length")))
    up.slots = [{"id": 0, "is_processing": False}]
    await _prefill(up, n=3)
    assert len([c for c in up.seen if c.path == "/slots"]) == 1
    assert _one_token_calls(up) == 3


async def test_an_agents_real_request_never_asks_for_slots() -> None:
    up = FakeUpstream(lambda b: Sse(text_chunks("hi")))
    up.slots = [{"id": 0, "is_processing": True}]
    async with proxy_client(up, _config()) as c:  # type: ignore[arg-type]
        await c.post("/v1/messages", json=msg_body("# Your task"), headers=H)
    assert not [c for c in up.seen if c.path in ("/slots", "/metrics")]
    assert len(up.calls()) == 1


def test_slot_and_gauge_shapes_are_read_as_the_servers_write_them() -> None:
    assert free_in_slots([{"id": 0, "state": 1}, {"id": 1, "state": 0}]) is True  # older llama-server
    assert free_in_slots([{"id": 0, "state": 1}]) is False
    assert free_in_slots([]) is None and free_in_slots({"error": "x"}) is None
    assert free_in_metrics("llamacpp:requests_deferred 1\n") is False
    assert free_in_metrics("llamacpp:requests_deferred 0\nllamacpp:requests_processing 1\n") is True
    assert free_in_metrics("# nothing\nother_gauge 3\n") is None
