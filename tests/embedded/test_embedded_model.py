"""The real embedded model: llama-server + SmolLM2-135M (built by `make embedded`), real tokens.

Proves what the proxy relies on: a forced tool call returns arguments valid against the tool's JSON
schema over both /v1/chat/completions and /v1/messages (also streamed), /tokenize works, and stopping
the server leaves no process. One server for the module (about 1 s to start)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from launcher.embedded import (
    FORCED_TOOL_CALL_PREFILL,
    EmbeddedConfig,
    EmbeddedError,
    EmbeddedModelServer,
    find_llama_server,
    find_model,
)
from tests.embedded._support import gone

pytestmark = pytest.mark.embedded


class MoodNote(BaseModel):
    """A small schema of the shape the agents' output tools use (enum, bounded integer, bounded string)."""

    model_config = ConfigDict(extra="forbid")
    mood: Literal["low", "neutral", "high"]
    intensity: int = Field(ge=1, le=5)
    note: str = Field(max_length=60)


SCHEMA = MoodNote.model_json_schema()
OTHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SYSTEM = "You are a coaching assistant. Record the user's mood with the tool."
USER = "I had a rough week at work and I feel pretty down."
OAI_TOOL = {
    "type": "function",
    "function": {"name": "record_mood", "description": "Record the mood.", "parameters": SCHEMA},
}
ANT_TOOL = {"name": "record_mood", "description": "Record the mood.", "input_schema": SCHEMA}
PREFILL = {"role": "assistant", "content": FORCED_TOOL_CALL_PREFILL}
CHAT_MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}, PREFILL]
#: A chat completion that must call ``record_mood`` (the forced tool call of the agents' first call).
CHAT_BODY: dict[str, Any] = {
    "messages": CHAT_MESSAGES,
    "tools": [OAI_TOOL],
    "tool_choice": "required",
    "parallel_tool_calls": False,
    "max_tokens": 120,
    "temperature": 0,
}


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedModelServer]:
    try:
        find_llama_server(), find_model()
    except EmbeddedError as exc:
        pytest.fail(f"the embedded model is not installed: {exc}", pytrace=False)
    srv = EmbeddedModelServer(EmbeddedConfig(), progress=None)  # the configuration make demo uses
    with srv:
        yield srv
    assert srv.pid is None


@pytest.fixture(scope="module")
def client(server: EmbeddedModelServer) -> Iterator[httpx.Client]:
    # A connection reused right after a streamed response is sometimes dropped by llama-server
    # ("Server disconnected without sending a response", ~1 in 8 measured): one connection per request.
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=server.base_url, timeout=60, limits=limits) as c:
        yield c


def _chat(client: httpx.Client, **extra: Any) -> dict[str, Any]:
    body = {**CHAT_BODY, **extra}
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_forced_tool_call_chat_completions(client: httpx.Client) -> None:
    choice = _chat(client)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "record_mood" and call["id"]
    MoodNote.model_validate_json(call["function"]["arguments"])


def test_forced_tool_call_messages(client: httpx.Client) -> None:
    body = {
        "model": "smollm2",
        "system": SYSTEM,
        "messages": [{"role": "user", "content": USER}, PREFILL],
        "tools": [ANT_TOOL],
        "tool_choice": {"type": "tool", "name": "record_mood"},
        "max_tokens": 120,
        "temperature": 0,
    }
    r = client.post("/v1/messages", json=body)
    assert r.status_code == 200, r.text
    msg = r.json()
    assert msg["type"] == "message" and msg["role"] == "assistant" and msg["stop_reason"] == "tool_use"
    uses = [b for b in msg["content"] if b["type"] == "tool_use"]
    assert uses and all(u["name"] == "record_mood" for u in uses)
    MoodNote.model_validate(uses[0]["input"])
    assert msg["usage"]["output_tokens"] > 0 and msg["model"] == EmbeddedConfig().alias
    again = client.post("/v1/messages", json=body).json()
    assert again["id"] != msg["id"]  # Claude Code needs a unique message id per response


def test_forced_tool_call_messages_streamed(client: httpx.Client) -> None:
    body = {
        "model": "smollm2",
        "system": SYSTEM,
        "messages": [{"role": "user", "content": USER}, PREFILL],
        "tools": [ANT_TOOL],
        "tool_choice": {"type": "any"},
        "max_tokens": 120,
        "temperature": 0,
        "stream": True,
    }
    events: list[str] = []
    partial: dict[int, str] = {}
    names: dict[int, str] = {}
    stop_reason = None
    with client.stream("POST", "/v1/messages", json=body) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            ev = json.loads(line[6:])
            events.append(ev["type"])
            if ev["type"] == "content_block_start" and ev["content_block"]["type"] == "tool_use":
                names[ev["index"]] = ev["content_block"]["name"]
            elif ev["type"] == "content_block_delta" and ev["delta"]["type"] == "input_json_delta":
                partial[ev["index"]] = partial.get(ev["index"], "") + ev["delta"]["partial_json"]
            elif ev["type"] == "message_delta":
                stop_reason = ev["delta"].get("stop_reason")
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert stop_reason == "tool_use"
    first = min(names)
    assert names[first] == "record_mood"
    MoodNote.model_validate_json(partial[first])


def test_chat_streamed_tool_call(client: httpx.Client) -> None:
    body = {**CHAT_BODY, "stream": True}
    args, name, finish = "", None, None
    with client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[6:])["choices"][0]
            for tc in choice["delta"].get("tool_calls") or []:
                name = tc.get("function", {}).get("name") or name
                args += tc.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    assert (name, finish) == ("record_mood", "tool_calls")
    MoodNote.model_validate_json(args)


def test_tokenize_and_count_tokens(client: httpx.Client) -> None:
    tokens = client.post("/tokenize", json={"content": USER}).json()["tokens"]
    assert 5 < len(tokens) < 40 and all(isinstance(t, int) for t in tokens)
    r = client.post(
        "/v1/messages/count_tokens",
        json={"model": "smollm2", "system": SYSTEM, "messages": [{"role": "user", "content": USER}]},
    )
    assert r.status_code == 200 and r.json()["input_tokens"] > len(tokens)


def test_stop_leaves_no_process() -> None:
    srv = EmbeddedModelServer(EmbeddedConfig(parallel=1, ctx_per_slot=1024), progress=None).start()
    pid = srv.pid
    assert pid is not None and httpx.get(f"{srv.base_url}/health").status_code == 200
    srv.stop()
    assert gone(pid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{srv.port}/health")


def test_prompt_over_the_slot_context_is_refused(client: httpx.Client) -> None:
    n_ctx = EmbeddedConfig().ctx_per_slot
    body = {
        "model": "smollm2",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "word " * (n_ctx + 100)}],
    }
    r = client.post("/v1/messages", json=body)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "exceed_context_size_error" and error["n_ctx"] == n_ctx
    assert error["n_prompt_tokens"] > n_ctx
