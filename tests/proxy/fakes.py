"""Test double at the upstream boundary: a scripted OpenAI-compatible upstream behind
``httpx.MockTransport`` (streaming bodies, delays, hangs, resets, connect failures), per replica URL."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from proxy import ModelPool, ProxyConfig, create_app

A = "http://a.test"
B = "http://b.test"


def sse_frames(payloads: list[dict[str, Any]], done: bool = True) -> list[bytes]:
    frames = [f"data: {json.dumps(p)}\n\n".encode() for p in payloads]
    return frames + ([b"data: [DONE]\n\n"] if done else [])


def text_chunks(text: str, *, finish: str = "stop", usage: tuple[int, int] = (20, 5)) -> list[dict[str, Any]]:
    out = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    out += [
        {"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]} for w in text.split("|")
    ]
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    out.append({"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}})
    return out


def tool_chunks(name: str, args: str, *, id: str = "call_1", text: str = "") -> list[dict[str, Any]]:
    delta: dict[str, Any] = {
        "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args}}
        ]
    }
    if text:
        delta["content"] = text
    return [
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12}},
    ]


@dataclass
class Sse:
    """200 SSE of these payloads; ``delay_s`` before the first one (and between, ``gap_s``);
    ``reset_after`` raises a connection reset after that many payloads."""

    payloads: list[dict[str, Any]]
    delay_s: float = 0.0
    gap_s: float = 0.0
    reset_after: int | None = None
    raw: bytes | None = None


@dataclass
class Status:
    code: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ConnectFail:
    pass


@dataclass
class HangFirstByte:
    """Headers sent, then nothing until cancelled."""


Step = Sse | Status | ConnectFail | HangFirstByte


@dataclass
class Seen:
    url: str
    path: str
    json: Any
    headers: httpx.Headers


class FakeUpstream:
    """Per-replica scripts (list of steps, consumed in order; past the end ``default``)."""

    def __init__(self, default: Callable[[Any], Step] | None = None) -> None:
        self.scripts: dict[str, list[Step]] = {}
        self.default = default or (lambda body: Sse(text_chunks("Hello| world")))
        self.seen: list[Seen] = []
        self.closed = threading.Event()  # set when a streamed upstream body is closed (any thread)
        self.transport = httpx.MockTransport(self.handle)
        self.models: Any = (
            None  # GET /v1/models body (None: 404), e.g. vLLM's {"data": [{"max_model_len": ...}]}
        )
        self.props: Any = None  # GET /props body (None: 404), e.g. llama-server's default_generation_settings
        self.tokenize_count: int | None = None  # POST /tokenize "count" (None: len(json) // 5; -1: 404)
        self.slots: Any = None  # GET /slots body (None: 404), e.g. llama-server's [{"is_processing": true}]
        self.metrics: str | None = None  # GET /metrics text (None: 404), e.g. vLLM's gauges

    def script(self, url: str, *steps: Step) -> None:
        self.scripts.setdefault(url, []).extend(steps)

    def calls(self, path: str = "/v1/chat/completions") -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    async def handle(self, request: httpx.Request) -> httpx.Response:
        url = f"{request.url.scheme}://{request.url.host}"
        body = json.loads(request.content) if request.content else None
        self.seen.append(Seen(url, request.url.path, body, request.headers))
        if request.url.path == "/health":
            steps = self.scripts.get(url + "/health")
            if steps and isinstance(steps[0], ConnectFail):
                raise httpx.ConnectError("refused", request=request)
            return httpx.Response(200, json={"status": "ok"})
        if request.method == "GET" and request.url.path in ("/v1/models", "/props"):
            doc = self.models if request.url.path == "/v1/models" else self.props
            return (
                httpx.Response(404, json={"error": "not found"})
                if doc is None
                else httpx.Response(200, json=doc)
            )
        if request.method == "GET" and request.url.path == "/slots":
            if self.slots is None:
                return httpx.Response(404, json={"error": "not found"})
            return httpx.Response(200, json=self.slots)
        if request.method == "GET" and request.url.path == "/metrics":
            if self.metrics is None:
                return httpx.Response(404, text="not found")
            return httpx.Response(200, text=self.metrics)
        if request.url.path in ("/tokenize", "/apply-template") and self.tokenize_count == -1:
            return httpx.Response(404, json={"error": "not found"})
        if request.url.path == "/tokenize":
            n = len(json.dumps(body)) // 5 if self.tokenize_count is None else self.tokenize_count
            return httpx.Response(200, json={"count": n, "max_model_len": 32768, "tokens": list(range(n))})
        queue = self.scripts.get(url)
        step = queue.pop(0) if queue else self.default(body)
        if isinstance(step, ConnectFail):
            raise httpx.ConnectError("connection refused", request=request)
        if isinstance(step, Status):
            content = (
                step.body
                if isinstance(step.body, (bytes, str))
                else json.dumps(step.body or {"error": {"message": "boom"}})
            )
            return httpx.Response(step.code, content=content, headers=step.headers)
        if isinstance(step, HangFirstByte):
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=self._hang())
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=self._stream(step, request)
        )

    async def _hang(self) -> AsyncIterator[bytes]:
        try:
            await asyncio.Event().wait()
            yield b""
        finally:
            self.closed.set()

    async def _stream(self, step: Sse, request: httpx.Request) -> AsyncIterator[bytes]:
        try:
            if step.delay_s:
                await asyncio.sleep(step.delay_s)
            if step.raw is not None:
                yield step.raw
                return
            for i, frame in enumerate(sse_frames(step.payloads)):
                if step.reset_after is not None and i >= step.reset_after:
                    raise httpx.ReadError("connection reset by peer", request=request)
                if i and step.gap_s:
                    await asyncio.sleep(step.gap_s)
                yield frame
        finally:
            self.closed.set()


def make_config(replicas: list[str] | None = None, **kw: Any) -> ProxyConfig:
    pool_kw = kw.pop("pool", {})
    pool = ModelPool(
        name="qwen3",
        aliases=["fast", "claude-*"],
        upstream_model="Qwen/Qwen3-8B",
        replicas=replicas or [A],
        **pool_kw,
    )
    kw.setdefault("backoff_base_s", 0.0)
    kw.setdefault("ping_interval_s", 0.05)
    return ProxyConfig(models=[pool], default_model=None, **kw)


def proxy_client(up: FakeUpstream, config: ProxyConfig) -> httpx.AsyncClient:
    app = create_app(config, transport=up.transport, health_checks=False)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30)
    client.app = app  # type: ignore[attr-defined]
    return client


def msg_body(text: str = "hi", **kw: Any) -> dict[str, Any]:
    return {"model": "qwen3", "max_tokens": 256, "messages": [{"role": "user", "content": text}], **kw}
