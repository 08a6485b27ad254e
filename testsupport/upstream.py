"""The scripted upstream: a fake model server speaking OpenAI and Anthropic, playing per-agent scripts
under a latency model (DESIGN.md), recording every request.

Routes:

* ``POST /v1/chat/completions`` (OpenAI / vLLM, stream and not), ``POST /tokenize``, ``GET /v1/models``
* ``POST /v1/messages`` (Anthropic, stream and not; ``?beta=true`` accepted),
  ``POST /v1/messages/count_tokens``
* ``GET /health``

Usage::

    up = ScriptedUpstream({"persona": [ToolCall("write_persona", {...}), Text("done")]},
                          latency="qwen3-30b-a3b@2x4090", time_scale=0.05)
    with up:                       # real uvicorn server on a free loopback port
        run_claude_headless("hi", base_url=up.base_url, headers={"x-coach-agent": "persona"})
    assert up.model_calls("persona")[0].step_index == 0

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=up.app), base_url="http://up") as c:
        ...                        # in-process, no port
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from proxy import PREFILL_HEADER

from . import _anthropic, _openai
from ._lifecycle import StartStop
from ._playback import PlaybackContext, build_plan, wait_threading_event
from .errors import ScriptError
from .latency import INSTANT, LatencyModel, LatencySimulator, PrefixCache, approx_token_count
from .model_request import AgentMatcher, ModelRequest, Protocol, RecordedRequest, RequestLog, identify_agent
from .script import Delay, Error, Garbage, Hang, Script, Step, Text, as_reply, pick_step, scripts_from_json
from .server import ThreadedServer

__all__ = ["ScriptedUpstream"]


class _HangResponse(Response):
    """Sends nothing; returns when the client disconnects or the upstream stops."""

    def __init__(self, stopping: threading.Event) -> None:
        super().__init__()
        self._stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as tg:

            async def wait_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(wait_disconnect)
            await wait_threading_event(self._stopping)
            tg.cancel_scope.cancel()


class ScriptedUpstream(StartStop):
    """A scripted model server (see module docstring).

    Args:
        scripts: agent name -> script (list of steps, or callable ``(ModelRequest) -> Step``).
        matchers: tried in order when the ``x-coach-agent`` header is absent (see ``match_*``).
        latency: a :class:`LatencyModel` or its name (``"instant"``, ``"qwen3-30b-a3b@2x4090"``,
            ``"qwen3-235b-a22b@a40"``).
        time_scale: real seconds per modelled second (also scales :class:`Delay`); 1.0 in benchmarks.
        default_text: the reply past the end of a script or for unscripted agents (``end_turn``).
        model_name: reported in responses and ``/v1/models``; None echoes the request's ``model``.
        prefix_cache: share one cache between upstreams (a fresh 300 s cache by default).
    """

    def __init__(
        self,
        scripts: Mapping[str, Script] | None = None,
        *,
        matchers: Sequence[AgentMatcher] = (),
        latency: str | LatencyModel = INSTANT,
        time_scale: float = 1.0,
        default_text: str = "ok",
        model_name: str | None = None,
        prefix_cache: PrefixCache | None = None,
    ) -> None:
        self.scripts: dict[str, Script] = dict(scripts or {})
        self.matchers: list[AgentMatcher] = list(matchers)
        self.sim = LatencySimulator(latency, time_scale=time_scale, prefix_cache=prefix_cache)
        self.default_text = default_text
        self.model_name = model_name
        self.log = RequestLog()
        self._stopping = threading.Event()
        self._server: ThreadedServer | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/tokenize", self._tokenize, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
                Route("/_scripted/requests", self._control_requests, methods=["GET"]),
                Route("/_scripted/scripts", self._control_scripts, methods=["POST"]),
                Route("/_scripted/reset", self._control_reset, methods=["POST"]),
            ]
        )

    # ----- configuration and inspection ------------------------------------------------------------

    @property
    def latency_model(self) -> LatencyModel:
        return self.sim.model

    def set_script(self, agent: str, script: Script | None) -> None:
        """Replace (or with None remove) one agent's script; takes effect on the next request."""
        if script is None:
            self.scripts.pop(agent, None)
        else:
            self.scripts[agent] = script

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far (a snapshot), in arrival order."""
        return self.log.snapshot()

    def model_calls(self, agent: str | None = None) -> list[RecordedRequest]:
        """Recorded ``/v1/messages`` and ``/v1/chat/completions`` calls, optionally of one agent."""
        return [r for r in self.log.snapshot() if r.is_model_call and (agent is None or r.agent == agent)]

    def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout_s: float = 10.0) -> bool:
        """Block until ``predicate(requests)`` holds (re-checked on every arrival/first byte/finish)."""
        return self.log.wait_for(predicate, timeout_s)

    async def wait_for_async(
        self, predicate: Callable[[list[RecordedRequest]], bool], timeout_s: float = 10.0
    ) -> bool:
        """:meth:`wait_for` from async code (runs in a worker thread)."""
        return await anyio.to_thread.run_sync(self.log.wait_for, predicate, timeout_s)

    def reset(self) -> None:
        """Forget recorded requests and the prefix cache (scripts are kept)."""
        self.log.clear()
        self.sim.prefix_cache.clear()

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An in-process ``httpx.AsyncClient`` on this app (``base_url="http://upstream"``)."""
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://upstream", **kwargs
        )

    # ----- real server --------------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on a real port (0 => free) in a background thread; returns ``http://host:port``."""
        if self._server is None or not self._server.running:
            self._stopping.clear()
            self._server = ThreadedServer(self.app, host=host, port=port)
            self._server.start()
        return self._server.base_url

    @property
    def base_url(self) -> str:
        """Base URL of the running server (starts it on a free port if it is not running)."""
        if self._server is None:
            return self.start()
        return self._server.base_url

    def stop(self) -> None:
        """Release hanging responses and stop the server (idempotent)."""
        self._stopping.set()
        if self._server is not None:
            self._server.stop()
            self._server = None

    # ----- routes ---------------------------------------------------------------------------------------

    async def _record(self, request: Request) -> tuple[RecordedRequest, dict[str, Any] | None]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        record = RecordedRequest(
            path=request.url.path,
            query=request.url.query,
            method=request.method,
            body=body if isinstance(body, dict) else {},
            headers={k.lower(): v for k, v in request.headers.items()},
            arrived_at=time.monotonic(),
        )
        self.log.add(record)
        return record, body if isinstance(body, dict) else None

    async def _messages(self, request: Request) -> Response:
        return await self._model_call(request, "anthropic")

    async def _chat_completions(self, request: Request) -> Response:
        return await self._model_call(request, "openai")

    def _error(self, protocol: Protocol, record: RecordedRequest, status: int, message: str) -> Response:
        body = (_anthropic if protocol == "anthropic" else _openai).error_body(status, message)
        self._finish(record, status, message)
        return JSONResponse(body, status_code=status)

    def _finish(self, record: RecordedRequest, status: int, error: str | None = None) -> None:
        record.status = status
        record.error = error
        record.finished_at = time.monotonic()
        record.first_byte_at = record.first_byte_at or record.finished_at
        self.log.touch()

    async def _model_call(self, request: Request, protocol: Protocol) -> Response:
        record, body = await self._record(request)
        if body is None or not isinstance(body.get("messages"), list):
            return self._error(protocol, record, 400, "body must be a JSON object with a 'messages' list")
        mreq = ModelRequest(protocol, body, record.headers)
        mreq.agent = identify_agent(mreq, self.matchers)
        record.agent = mreq.agent
        record.step_index = mreq.step_index
        script = self.scripts.get(mreq.agent) if mreq.agent else None
        try:
            # A prefill (the proxy's x-coach-prefill request, max_tokens 1) is answered as a model server
            # would: its prompt is processed and one token comes back, whatever the agent's script says
            # (scripts are written for the agent's real requests).
            step: Step = (
                Text("OK")
                if record.headers.get(PREFILL_HEADER)
                else pick_step(script, mreq, Text(self.default_text))
            )
        except ScriptError as exc:
            return self._error(protocol, record, 500, f"bad script for agent {mreq.agent!r}: {exc}")
        while isinstance(step, Delay):
            record.extra["delay_s"] = record.extra.get("delay_s", 0.0) + step.seconds
            await self.sim.sleep_model(step.seconds)
            step = step.then if step.then is not None else Text(self.default_text)
        record.step = step
        admission = self.sim.admit(mreq.prompt_text())
        record.prompt_tokens = admission.prompt_tokens
        record.cached_tokens = admission.cached_tokens
        if isinstance(step, Error):
            if step.body is None:
                return self._error(protocol, record, step.status, step.message)
            self._finish(record, step.status, step.message)
            if isinstance(step.body, str):
                return Response(step.body, status_code=step.status, media_type="application/json")
            return JSONResponse(dict(step.body), status_code=step.status)
        if isinstance(step, Garbage):
            self._finish(record, 200, "garbage")
            media = "text/event-stream" if mreq.stream else "application/json"
            return Response(step.body, media_type=media)
        if isinstance(step, Hang) and not (step.after_first_token and mreq.stream):
            record.error = "hang"
            return _HangResponse(self._stopping)
        plan = build_plan(
            as_reply(Text("") if isinstance(step, Hang) else step), mreq, default_text=self.default_text
        )
        plan.hang_after_first_token = isinstance(step, Hang)
        ctx = PlaybackContext(
            request=mreq,
            record=record,
            log=self.log,
            sim=self.sim,
            admission=admission,
            stopping=self._stopping,
            model_name=self.model_name or mreq.model or "scripted-model",
        )
        renderer = _anthropic if protocol == "anthropic" else _openai
        if mreq.stream:
            headers = {"cache-control": "no-cache"}
            return StreamingResponse(
                renderer.stream(plan, ctx), media_type="text/event-stream", headers=headers
            )
        await self.sim.prefill(admission)
        async with self.sim.decoding() as decode:
            async for _ in decode.pace(plan.text_tokens + [t for c in plan.calls for t in c.tokens]):
                pass
        body_out = _anthropic.message(plan, ctx) if protocol == "anthropic" else _openai.completion(plan, ctx)
        ctx.mark_first_byte()
        ctx.finish(200, plan.output_tokens)
        return JSONResponse(body_out)

    async def _count_tokens(self, request: Request) -> Response:
        record, body = await self._record(request)
        if body is None:
            return self._error("anthropic", record, 400, "body must be a JSON object")
        mreq = ModelRequest("anthropic", body, record.headers)
        tokens = approx_token_count(mreq.prompt_text())
        record.prompt_tokens = tokens
        self._finish(record, 200)
        return JSONResponse({"input_tokens": tokens})

    async def _tokenize(self, request: Request) -> Response:
        """vLLM ``/tokenize``: ``{"prompt": str}`` or ``{"messages": [...]}`` -> ``{"count", "tokens",
        "max_model_len"}`` (approximate tokens; ids are positions)."""
        record, body = await self._record(request)
        if body is None:
            return self._error("openai", record, 400, "body must be a JSON object")
        if isinstance(body.get("prompt"), str):
            text = body["prompt"]
        else:
            text = ModelRequest("openai", body, record.headers).prompt_text()
        count = approx_token_count(text)
        self._finish(record, 200)
        return JSONResponse({"count": count, "max_model_len": 131072, "tokens": list(range(count))})

    async def _models(self, request: Request) -> Response:
        record, _ = await self._record(request)
        self._finish(record, 200)
        name = self.model_name or "scripted-model"
        entry = {
            "id": name,
            "object": "model",
            "type": "model",
            "owned_by": "coachboard-testsupport",
            "display_name": name,
            "created": 0,
            "created_at": "2026-01-01T00:00:00Z",
            "max_model_len": 131072,
            "latency_model": self.sim.model.name,
        }
        return JSONResponse(
            {"object": "list", "data": [entry], "has_more": False, "first_id": name, "last_id": name}
        )

    async def _health(self, request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "latency_model": self.sim.model.name, "time_scale": self.sim.time_scale}
        )

    # ----- control endpoints (not recorded), used by ScriptedUpstreamProcess -------------------------------

    async def _control_requests(self, request: Request) -> Response:
        """``GET /_scripted/requests``: every record as JSON (times are the server's monotonic clock)."""
        return JSONResponse([r.to_json() for r in self.log.snapshot()])

    async def _control_scripts(self, request: Request) -> Response:
        """``POST /_scripted/scripts``: ``{"agent": [steps...]}`` in JSON form replaces those agents' scripts."""
        try:
            scripts = scripts_from_json(json.loads(await request.body()))
        except (ValueError, ScriptError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        self.scripts.update(scripts)
        return JSONResponse({"agents": sorted(self.scripts)})

    async def _control_reset(self, request: Request) -> Response:
        """``POST /_scripted/reset``: forget records and the prefix cache."""
        self.reset()
        return JSONResponse({"status": "ok"})
