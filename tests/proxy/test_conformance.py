"""Black-box Anthropic Messages API conformance of the proxy in front of the real embedded llama-server.

Real components: llama-server serving SmolLM2-135M (``make embedded``), the proxy app served by uvicorn
on a free port, httpx as the client speaking only HTTP; between proxy and llama-server a recording TCP
relay (``tests/proxy/relay.py``), which shows what the proxy sent upstream and cuts a stream on demand.

Covered: event order and shape (message_start fields, sequential block indices with matching stops,
message_delta usage), non-streamed message shape, count_tokens, tool use and the tool_result forms
(string, list, with text beside it, is_error), stop_sequences, temperature/top_p/top_k, empty and missing
messages, metadata, and the six cases of issue 14 (tool names, cut-off stream, tool JSON cut by
max_tokens, max_tokens capped from the served context, a deterministic 500 not retried, a dropped
attachment's note). Replies are kept to a few tokens: CPU inference on a shared machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from launcher.embedded import (
    FORCED_TOOL_CALL_PREFILL,
    EmbeddedConfig,
    EmbeddedError,
    EmbeddedModelServer,
    find_llama_server,
    find_model,
)
from proxy import AgentPolicy, ModelPool, ProxyConfig, accumulate, check_events, create_app, parse_sse
from testsupport import ThreadedServer

from .relay import Relay

pytestmark = [pytest.mark.embedded, pytest.mark.e2e, pytest.mark.timeout(600)]

CTX = 2048  # one slot's context: small, so the max_tokens cap and "prompt is too long" are quick to reach
MODEL = "claude-sonnet-4-5"  # what Claude Code would send; the pool's alias pattern takes it
VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DOTTED = "files.read"
LONG = "mcp__" + "an-mcp-server-whose-name-is-much-longer-than-anyone-expected" + "__read"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string", "maxLength": 40}}, "required": ["path"]}
POLICIES = {"dotted": AgentPolicy(force_tool=DOTTED), "long": AgentPolicy(force_tool=LONG)}


@pytest.fixture(scope="module")
def llama() -> Iterator[EmbeddedModelServer]:
    try:
        find_llama_server(), find_model()
    except EmbeddedError as exc:
        pytest.fail(f"the embedded model is not installed (make embedded): {exc}", pytrace=False)
    with EmbeddedModelServer(
        EmbeddedConfig(parallel=1, ctx_per_slot=CTX, max_tokens=64), progress=None
    ) as server:
        yield server


@pytest.fixture(scope="module")
def relay(llama: EmbeddedModelServer) -> Iterator[Relay]:
    with Relay("127.0.0.1", llama.port) as r:
        yield r


@pytest.fixture(scope="module")
def proxy_url(relay: Relay) -> Iterator[str]:
    pool = ModelPool(
        name="smollm2",
        aliases=["claude-*"],
        replicas=[relay.url],
        chat_template_kwargs=False,
        forced_tool_prefill=FORCED_TOOL_CALL_PREFILL,
    )
    cfg = ProxyConfig(
        models=[pool], agents=POLICIES, backoff_base_s=0.05, first_byte_timeout_s=240, read_timeout_s=240
    )
    with ThreadedServer(create_app(cfg, health_checks=False)) as srv:
        yield srv.base_url


@pytest.fixture
def client(proxy_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy_url, timeout=300) as c:
        yield c


def body(text: str = "Say hello.", **kw: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 6,
        "temperature": 0,
        "messages": [{"role": "user", "content": text}],
        **kw,
    }


def stream(
    client: httpx.Client, b: dict[str, Any], headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    r = client.post("/v1/messages", json={**b, "stream": True}, headers=headers or {})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    return [e for e in parse_sse(r.text) if e["type"] != "ping"]


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": "Read a file.", "input_schema": SCHEMA}


def last_call(relay: Relay) -> dict[str, Any]:
    calls = relay.model_calls()
    assert calls, "no chat completion reached llama-server"
    return calls[-1].json


# ----- event order and shape -------------------------------------------------------------------------


def test_stream_event_order_and_shape(client: httpx.Client) -> None:
    events = stream(client, body())
    assert check_events(events) == []
    start = events[0]
    assert start["type"] == "message_start"
    msg = start["message"]
    assert msg["id"].startswith("msg_") and msg["type"] == "message" and msg["role"] == "assistant"
    assert msg["model"] == MODEL and msg["content"] == [] and msg["stop_reason"] is None
    assert isinstance(msg["usage"]["input_tokens"], int) and msg["usage"]["output_tokens"] == 0
    starts = [e for e in events if e["type"] == "content_block_start"]
    stops = [e for e in events if e["type"] == "content_block_stop"]
    assert [e["index"] for e in starts] == list(range(len(starts))) == [e["index"] for e in stops]
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "max_tokens" and delta["usage"]["output_tokens"] > 0
    assert delta["usage"]["input_tokens"] > 0  # llama-server's own prompt count
    assert [e["type"] for e in events[-2:]] == ["message_delta", "message_stop"]


def test_whole_message_shape(client: httpx.Client) -> None:
    r = client.post("/v1/messages", json=body())
    assert r.status_code == 200
    msg = r.json()
    assert set(msg) >= {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
    assert msg["type"] == "message" and msg["content"][0]["type"] == "text" and msg["content"][0]["text"]
    assert msg["stop_reason"] == "max_tokens" and msg["usage"]["output_tokens"] > 0
    assert client.post("/v1/messages", json=body()).json()["id"] != msg["id"]


# ----- count_tokens ----------------------------------------------------------------------------------


def test_count_tokens_exact_from_the_server(client: httpx.Client) -> None:
    short = client.post("/v1/messages/count_tokens", json=body("Hi."))
    longer = client.post("/v1/messages/count_tokens", json=body("Hi. " * 50))
    with_tools = client.post("/v1/messages/count_tokens", json=body("Hi.", tools=[tool("read_file")]))
    assert short.status_code == 200 and short.headers["x-coach-token-count"] == "exact"
    n = short.json()["input_tokens"]
    assert 3 < n < longer.json()["input_tokens"] and n < with_tools.json()["input_tokens"]
    assert "estimated" not in short.json()


# ----- tool use and tool_result forms ----------------------------------------------------------------


def _history(result: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Read notes.txt"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}}
            ],
        },
        {"role": "user", "content": [result, *extra]},
    ]


@pytest.mark.parametrize("form", ["string", "list", "with-text", "is-error"])
def test_tool_result_forms(client: httpx.Client, relay: Relay, form: str) -> None:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "buy milk"}
    extra: list[dict[str, Any]] = []
    if form == "list":
        result["content"] = [{"type": "text", "text": "buy"}, {"type": "text", "text": "milk"}]
    elif form == "with-text":
        extra = [{"type": "text", "text": "Summarise it."}]
    elif form == "is-error":
        result.update(content="file not found", is_error=True)
    events = stream(client, body(messages=_history(result, *extra), tools=[tool("read_file")]))
    assert check_events(events) == []
    sent = last_call(relay)["messages"]
    tool_msg = next(m for m in sent if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == "toolu_1"
    assert sent[1]["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path":"notes.txt"}'}
    expected = {
        "string": "buy milk",
        "list": "buy\nmilk",
        "with-text": "buy milk",
        "is-error": "Error: file not found",
    }
    assert tool_msg["content"] == expected[form]
    if form == "with-text":
        assert sent[-1] == {"role": "user", "content": "Summarise it."}


def test_forced_tool_use_round_trip(client: httpx.Client) -> None:
    events = stream(
        client, body("Read notes.txt", max_tokens=60, tools=[tool(DOTTED)]), {"x-coach-agent": "dotted"}
    )
    assert check_events(events) == []
    msg = accumulate(events)
    uses = [b for b in msg["content"] if b["type"] == "tool_use"]
    assert msg["stop_reason"] == "tool_use" and uses and uses[0]["id"]
    assert isinstance(uses[0]["input"].get("path"), str)


# ----- stop_sequences, sampling, metadata ------------------------------------------------------------


def test_stop_sequences(client: httpx.Client, relay: Relay) -> None:
    b = body(
        "Count from one to ten in digits separated by commas.",
        max_tokens=40,
        messages=[
            {"role": "user", "content": "Count from 1 to 10, separated by commas."},
            {"role": "assistant", "content": "1, 2, 3,"},
        ],
        stop_sequences=["6"],
    )
    msg = accumulate(stream(client, b))
    assert last_call(relay)["stop"] == ["6"]
    text = "".join(c.get("text", "") for c in msg["content"])
    # llama-server's chat completions do not say which stop matched (vLLM's "stop_reason" does), so a
    # stop there is reported as end_turn: a known gap, see docs/proxy-hardening.md.
    assert "6" not in text and msg["stop_reason"] in ("stop_sequence", "end_turn")
    if msg["stop_reason"] == "stop_sequence":
        assert msg["stop_sequence"] == "6"


def test_sampling_parameters_forwarded(client: httpx.Client, relay: Relay) -> None:
    events = stream(client, body(temperature=0.7, top_p=0.9, top_k=20))
    assert check_events(events) == []
    sent = last_call(relay)
    assert (sent["temperature"], sent["top_p"], sent["top_k"]) == (0.7, 0.9, 20)


def test_metadata_accepted_and_not_forwarded(client: httpx.Client, relay: Relay) -> None:
    events = stream(client, body(metadata={"user_id": "user-123"}))
    assert check_events(events) == []
    assert "metadata" not in last_call(relay) and "user-123" not in json.dumps(last_call(relay))


@pytest.mark.parametrize(
    "messages",
    [None, [], [{"role": "system", "content": "only system"}]],
    ids=["missing", "empty", "only-system"],
)
def test_missing_or_empty_messages_are_400(client: httpx.Client, relay: Relay, messages: Any) -> None:
    before = len(relay.model_calls())
    b = body()
    if messages is None:
        del b["messages"]
    else:
        b["messages"] = messages
    r = client.post("/v1/messages", json=b)
    assert r.status_code == 400 and r.json()["type"] == "error"
    assert r.json()["error"]["type"] == "invalid_request_error" and "messages" in r.json()["error"]["message"]
    assert len(relay.model_calls()) == before


# ----- the six cases of issue 14, against the real server ---------------------------------------------


@pytest.mark.parametrize("agent", ["dotted", "long"])
def test_case1_tool_names_outside_the_openai_pattern(client: httpx.Client, relay: Relay, agent: str) -> None:
    name = DOTTED if agent == "dotted" else LONG
    events = stream(
        client,
        body("Read notes.txt", max_tokens=60, tools=[tool(name), tool("other_tool")]),
        {"x-coach-agent": agent},
    )
    sent = last_call(relay)
    assert all(VALID.match(t["function"]["name"]) for t in sent["tools"])
    assert check_events(events) == []
    uses = [b for b in accumulate(events)["content"] if b["type"] == "tool_use"]
    assert uses and uses[0]["name"] == name


@pytest.mark.parametrize("clean", [True, False], ids=["body-ended", "connection-dropped"])
def test_case2_stream_cut_mid_tool_call_is_an_error(client: httpx.Client, relay: Relay, clean: bool) -> None:
    relay.cut_after(b"data: ", 3, clean=clean)
    cuts = relay.cuts
    events = stream(
        client, body("Read notes.txt", max_tokens=60, tools=[tool(DOTTED)]), {"x-coach-agent": "dotted"}
    )
    assert relay.cuts == cuts + 1
    assert check_events(events) == []
    assert events[-1]["type"] == "error" and events[-1]["error"]["type"] == "api_error"
    assert not any(e["type"] == "message_delta" for e in events)
    assert not any(e.get("content_block", {}).get("type") == "tool_use" for e in events)


def test_case3_tool_json_cut_by_max_tokens_never_delivered_as_input(client: httpx.Client) -> None:
    events = stream(
        client, body("Read notes.txt", max_tokens=9, tools=[tool(DOTTED)]), {"x-coach-agent": "dotted"}
    )
    assert check_events(events) == []
    msg = accumulate(events)
    assert msg["stop_reason"] == "max_tokens"
    assert not [b for b in msg["content"] if b["type"] == "tool_use"]


def test_case4_max_tokens_capped_from_the_served_context(client: httpx.Client, relay: Relay) -> None:
    with client.stream("POST", "/v1/messages", json=body(max_tokens=128000, stream=True)) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if "content_block_delta" in line:
                break  # the cap is in the request sent upstream; no need to wait for 2000 tokens
    sent = last_call(relay)
    assert 1500 < sent["max_tokens"] <= CTX - 8
    lookups = [r.path for r in relay.requests if r.method == "GET" and r.path in ("/v1/models", "/props")]
    assert 1 <= len(lookups) <= 2  # cached: asked once for the whole module (twice if it outlived the TTL)


def test_case4_prompt_longer_than_the_served_context_is_400(client: httpx.Client, relay: Relay) -> None:
    before = len(relay.model_calls())
    r = client.post("/v1/messages", json=body("lorem ipsum " * 1200, max_tokens=100))
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"].startswith("prompt is too long: ")
    assert len(relay.model_calls()) == before


def test_case5_deterministic_500_reaches_the_client_once_as_400(client: httpx.Client, relay: Relay) -> None:
    before = len(relay.model_calls())
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "text", "text": "What is this?"},
    ]
    r = client.post("/v1/messages", json=body(messages=[{"role": "user", "content": content}]))
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and "not supported" in err["message"]
    assert len(relay.model_calls()) == before + 1  # not retried


def test_case6_pdf_in_tool_result_leaves_a_note(client: httpx.Client, relay: Relay) -> None:
    pdf = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"},
    }
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "attached:"}, pdf],
    }
    events = stream(client, body(messages=_history(result), tools=[tool("read_file")]))
    assert check_events(events) == []
    tool_msg = next(m for m in last_call(relay)["messages"] if m["role"] == "tool")
    assert (
        tool_msg["content"]
        == "attached:\n[attachment omitted: application/pdf is not supported by this model]"
    )
