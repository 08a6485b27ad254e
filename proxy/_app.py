"""The Starlette application: routes, auth, body limits, Anthropic-shaped errors everywhere.

Routes: ``POST /v1/messages`` (``?beta=true`` and any ``anthropic-beta`` header accepted),
``POST /v1/messages/count_tokens``, ``GET /v1/models``, ``GET /v1/models/{id}``, ``GET /health``,
``GET /metrics``; with a turn secret also ``POST /coach/turns`` (the supervisor's turns, see ``_turns``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from ._adapters import AnthropicAdapter, feed_openai
from ._anthropic_request import to_anthropic
from ._limits import ServedLimits, cap_max_tokens
from ._local_commands import strip_clear_records
from ._messages import UpstreamRun
from ._metering import Meter, UsageRecord, Who, now_ms
from ._normalize import Prepared, estimate_request_tokens, prepare
from ._openai_request import dumps, to_openai
from ._policy import apply_policy, narrow_forced_tool
from ._prefill import PREFILL_HEADER, PREFILL_REPLY, Prefills, is_prefill
from ._router import Router
from ._shared_budget import SharedBudgetHook
from ._slots import FreeSlots
from ._stream import Event, StreamBuilder
from ._tokens import count_tokens
from ._tool_tap import ToolDeltaObserver, tool_tap
from ._toolnames import map_tool_names
from ._turns import TURNS_PATH, TurnTable, turn_control_token, turns_route
from .config import AgentPolicy, ModelPool, ProxyConfig
from .errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    ProxyError,
    RequestTooLargeError,
)
from .wellformed import accumulate, encode_sse

log = logging.getLogger("proxy")
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


TurnResolver = Callable[[str, str, str], str | None]
"""``(user, session, agent) -> the turn that agent is running in now, or None`` (the supervisor's
``launcher.pipeline._turn_scope.TurnDirectory.turn_for``: the same source the MCP server resolves turns from)."""


@dataclass
class ProxyState:
    """Everything a request handler needs; one per app (``app.state.proxy``)."""

    config: ProxyConfig
    client: httpx.AsyncClient
    router: Router
    meter: Meter
    token_methods: dict[str, str] = field(default_factory=dict)
    limits: ServedLimits = field(default_factory=ServedLimits)
    health_task: asyncio.Task[None] | None = None
    turn_for: TurnResolver | None = None
    turns: TurnTable | None = None
    turn_token: str = field(default="", repr=False)
    budgets: SharedBudgetHook | None = None  # shared_budgets_url set: budgets shared across instances
    on_tool_delta: ToolDeltaObserver | None = None  # in-process observer of forced tool calls (_tool_tap)
    prefills: Prefills = field(default_factory=Prefills)  # prefill calls running upstream (_prefill)
    slots: FreeSlots = field(default_factory=FreeSlots)  # whether a replica has a free slot (_slots)
    identity_for: Callable[[str, str], tuple[str, str] | None] | None = None  # pooled processes' identity
    fresh_start: Callable[[str, str], bool] | None = None  # a reset process's next request: one message

    def set_agent_policies(self, policies: Mapping[str, AgentPolicy | Mapping[str, Any]]) -> None:
        """Replace the per-agent policy table (``ProxyConfig.agents``) of the running app, e.g. after the
        agent files were reloaded. Every policy is validated first (pydantic ``ValidationError`` and
        nothing changed when one is invalid); the swap is one assignment, so a request in flight keeps
        the table it started with and the next request sees the new one. Agent names are lower-cased
        (the ``x-coach-agent`` header is matched lower-case)."""
        table = {str(name).strip().lower(): AgentPolicy.model_validate(p) for name, p in policies.items()}
        self.config = self.config.model_copy(update={"agents": table})

    def who(self, request: Request) -> Who:
        """The caller from the ``x-coach-*`` headers; without ``x-coach-turn`` (a warm agent process,
        whose headers are fixed at its start) the turn comes from :attr:`turns` (posted by the
        supervisor) or else :attr:`turn_for`, when set."""
        who = _who(request)
        bound = self.identity_for(who.user, who.session) if self.identity_for and who.user else None
        if bound is not None:  # a pooled agent process: the session it was handed to (in-process callers)
            who.user, who.session = bound
        if not who.turn and who.agent and who.user and who.session:
            if self.turns is not None:
                who.turn = self.turns.turn_for(who.user, who.session, who.agent) or ""
            if not who.turn and self.turn_for is not None:
                who.turn = self.turn_for(who.user, who.session, who.agent) or ""
        return who


def _error(err: ProxyError) -> JSONResponse:
    headers = {"request-id": "req_" + uuid.uuid4().hex[:24], **err.headers}
    return JSONResponse(err.to_body(), status_code=err.status, headers=headers)


def _who(request: Request) -> Who:
    h = request.headers
    return Who(
        agent=h.get("x-coach-agent", "").strip().lower(),
        user=h.get("x-coach-user", "").strip(),
        session=h.get("x-coach-session", "").strip(),
        turn=h.get("x-coach-turn", "").strip(),
    )


def _check_fresh_start(state: ProxyState, request: Request, body: Any) -> None:
    """A reused agent process's first request after its conversation was reset (``fresh_start`` True
    for its identity headers) must carry one message only; one carrying earlier turns is refused with
    409 ``conversation_not_reset`` (retryable: the caller replaces the process)."""
    if state.fresh_start is None:
        return
    raw = _who(request)
    if not raw.user or not state.fresh_start(raw.user, raw.session):
        return
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not (isinstance(msgs, list) and len(msgs) == 1):
        log.warning(
            "refused a reused agent process's request: its conversation was not reset (agent %s)", raw.agent
        )
        raise PermissionDeniedError(
            "this agent process was reset for another session, but its request carries earlier turns: "
            "refused; stop the process and start a new one",
            code="conversation_not_reset",
            status=409,
            retryable=True,
        )


def _check_auth(state: ProxyState, request: Request) -> None:
    key = state.config.api_key
    if not key:
        return
    given = request.headers.get("x-api-key")
    auth = request.headers.get("authorization", "")
    if given is None and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    if given is None:
        raise AuthenticationError("missing API key: send it as x-api-key or Authorization: Bearer")
    if not hmac.compare_digest(given.encode(), key.encode()):
        raise AuthenticationError("invalid API key")


async def _read_json(state: ProxyState, request: Request) -> Any:
    limit = state.config.max_body_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise RequestTooLargeError(f"request body is {declared} bytes; the limit is {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestTooLargeError(f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except ValueError as exc:
        raise InvalidRequestError(f"request body is not valid JSON: {exc}") from exc


def _upstream_headers(pool: ModelPool, who: Who) -> dict[str, str]:
    h = {"content-type": "application/json", "accept": "text/event-stream"}
    if pool.kind == "anthropic":
        h["anthropic-version"] = "2023-06-01"
        if pool.api_key:
            h["x-api-key"] = pool.api_key
    elif pool.api_key:
        h["authorization"] = f"Bearer {pool.api_key}"
    for name in ("agent", "user", "session", "turn"):
        v = getattr(who, name)
        if v:
            h[f"x-coach-{name}"] = v
    return h


def _local_events(state: ProxyState, p: Prepared, text: str | None = None) -> list[Event]:
    b = StreamBuilder(model=p.model)
    b.usage(input_tokens=0, output_tokens=0)
    ev = b.start() + b.text(text or state.config.local_stop_text)
    b.finish("end_turn")
    return ev + b.end()


def _local_response(state: ProxyState, p: Prepared, text: str | None = None) -> Response:
    """A reply made here, not upstream (a local stop, a prefill's acknowledgement), as the client asked:
    SSE or the whole message."""
    events = _local_events(state, p, text)
    if p.stream:
        return Response(
            b"".join(encode_sse(e) for e in events), media_type="text/event-stream", headers=SSE_HEADERS
        )
    return JSONResponse(accumulate(events))


def _prepare(body: Any, pool: ModelPool, who: Who) -> Prepared:
    """The request normalised (``prepare``); an agent's also without Claude Code's record of a pooled
    process's ``/clear`` (``_local_commands``: not for the model)."""
    p = prepare(body, system_mode=pool.system_in_messages if pool.kind == "openai" else "fold")
    if who.agent:
        strip_clear_records(p.messages)
    return p


async def messages(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    t0 = time.monotonic()
    _check_auth(state, request)
    body = await _read_json(state, request)
    _check_fresh_start(state, request, body)
    who = state.who(request)
    policy = state.config.agents.get(who.agent) if who.agent else None  # read once: a swap cannot tear it
    model = body.get("model") if isinstance(body, dict) else None
    pool = state.router.resolve(
        model if isinstance(model, str) else "", policy.model_alias if policy else None
    )
    p = _prepare(body, pool, who)
    if not any(m["role"] != "system" for m in p.messages):
        raise InvalidRequestError(
            "messages: at least one user or assistant message is required "
            "(system text goes in the top-level 'system' field)"
        )
    outcome = apply_policy(p, policy, agent=who.agent, over_cap=state.config.max_tokens_over_cap)
    # read before the narrowing below, which ends the messages with an assistant text: a prefill seen
    # after it went upstream as a real call on such a pool (the embedded server), wrote the agent's
    # output from the context alone and ended its conversation in an error
    prefill = is_prefill(p)  # the agent's context sent ahead: computed upstream, answered here (_prefill)
    if outcome.forced_tool and pool.forced_tool_prefill:
        narrow_forced_tool(
            p,
            outcome.forced_tool,
            pool.forced_tool_prefill,
            pool.omit_tool_properties,
            pool.max_string_length,
        )
    for w in p.warnings:
        log.warning("agent=%s model=%s: %s", who.agent or "-", p.model, w)
    record = UsageRecord(
        ts=time.time(),
        id="",
        agent=who.agent,
        user=who.user,
        session=who.session,
        turn=who.turn,
        model=pool.name,
        replica="",
        status="",
        stream=p.stream,
        prefill=prefill,
    )
    if outcome.local_reply:
        events = _local_events(state, p)
        record.id, record.status, record.stop_reason = events[0]["message"]["id"], "local", "end_turn"
        state.meter.record(record)
        if p.stream:
            return Response(
                b"".join(encode_sse(e) for e in events), media_type="text/event-stream", headers=SSE_HEADERS
            )
        return JSONResponse(accumulate(events))

    key = (who.agent, who.user, who.session)
    if not prefill:
        await state.prefills.wait(key)
    names = map_tool_names(p)
    est = estimate_request_tokens(p)
    headers = _upstream_headers(pool, who)
    if prefill and not await _slot_free(state, pool, who, headers):
        record.id, record.status = "msg_local_" + uuid.uuid4().hex[:24], "local"  # it would only queue
        record.stop_reason = "prefill_skipped"
        state.meter.record(record)
        log.info("agent=%s: prefill skipped, no free slot upstream", who.agent or "-")
        return _local_response(state, p, PREFILL_REPLY)
    if prefill:
        headers[PREFILL_HEADER] = "1"
    try:
        max_tokens = await cap_max_tokens(
            state.limits,
            state.client,
            state.router,
            pool,
            p,
            session=who.session or None,
            headers=headers,
            token_methods=state.token_methods,
            timeout_s=state.config.connect_timeout_s + 10,
        )
        max_tokens = state.meter.check_budget(who, policy.token_budget if policy else None, est, max_tokens)
    except ProxyError as exc:
        record.status = f"error:{exc.error_type}"
        state.meter.record(record)
        raise
    enable_thinking = p.thinking if p.thinking is not None else pool.thinking_default
    builder = StreamBuilder(
        model=p.model,
        input_tokens=est,
        think_tags=pool.think_tags,
        start_in_think=pool.think_starts_open and bool(enable_thinking),
        tool_name=names.client,
    )
    record.id = builder.message_id
    if not prefill:
        builder.tap = tool_tap(
            state.on_tool_delta, who, builder.message_id, outcome.forced_tool, p.tools, names.client
        )
    if state.budgets is not None:
        try:
            max_tokens = await state.budgets.reserve(
                who, record.id, policy.token_budget if policy else None, est, max_tokens
            )
        except ProxyError as exc:
            record.status = f"error:{exc.error_type}"
            state.meter.record(record)
            raise
    if prefill:
        max_tokens = 1  # only the prompt's KV cache is wanted
    path, payload, feed = _upstream_request(pool, p, builder, max_tokens, enable_thinking, who.agent)
    run = UpstreamRun(
        client=state.client,
        router=state.router,
        meter=state.meter,
        pool=pool,
        path=path,
        body=payload,
        headers=headers,
        session=who.session or None,
        builder=builder,
        feed=feed,
        record=record,
        t0=t0,
    )
    run.start()
    if prefill:
        state.prefills.start(key, run.collect())
        return _local_response(state, p, PREFILL_REPLY)
    return await _respond(request, state, run, p.stream, record)


async def _slot_free(state: ProxyState, pool: ModelPool, who: Who, headers: dict[str, str]) -> bool:
    """Whether the replica this session's requests go to has a free slot (unknown counts as free)."""
    replica = state.router.pick(pool.name, who.session or None)
    return await state.slots.free(state.client, replica.url, headers) is not False


def _upstream_request(
    pool: ModelPool,
    p: Prepared,
    builder: StreamBuilder,
    max_tokens: int,
    enable_thinking: Any,
    agent: str | None,
) -> tuple[str, bytes, Callable[[Any], list[Event]]]:
    """The upstream path, the request body and the feed that turns its chunks into Anthropic events."""
    if pool.kind == "openai":
        oa, warnings = to_openai(
            p,
            upstream_model=pool.upstream_name,
            max_tokens=max_tokens,
            enable_thinking=enable_thinking,
            chat_template_kwargs=pool.chat_template_kwargs,
        )
        for w in warnings:
            log.warning("agent=%s model=%s: %s", agent or "-", p.model, w)
        path, payload = "/v1/chat/completions", dumps(oa)
        stops = p.stop_sequences

        def feed(chunk: Any) -> list[Event]:
            return feed_openai(builder, chunk, stops)
    else:
        path = "/v1/messages"
        payload = dumps(to_anthropic(p, upstream_model=pool.upstream_name, max_tokens=max_tokens))
        adapter = AnthropicAdapter(builder)

        def feed(chunk: Any) -> list[Event]:
            if isinstance(chunk, dict) and chunk.get("type") == "message":
                return adapter.feed_message(chunk)
            return adapter.feed(chunk)

    return path, payload, feed


async def _respond(
    request: Request, state: ProxyState, run: UpstreamRun, stream: bool, record: UsageRecord
) -> Response:
    """The client's response: the whole message (499 when the client left), or the SSE stream once the
    first event (or the upstream's error) is in."""
    if not stream:
        collect = asyncio.create_task(run.collect())
        watch = asyncio.create_task(_cancel_on_disconnect(request, collect))
        try:
            events, err = await collect
        except asyncio.CancelledError:
            if watch.done():  # the client left: the upstream call is already cancelled
                return Response(status_code=499)
            raise
        finally:
            watch.cancel()
        if err is not None:
            return _error(err)
        return JSONResponse(accumulate(events), headers={"request-id": record.id})
    first = await run.get(state.config.ping_interval_s)
    if first is not None and first[0] == "err":
        run.cancel()
        run.finish(f"error:{first[1].error_type}")
        return _error(first[1])
    return StreamingResponse(
        run.sse(first, state.config.ping_interval_s),
        media_type="text/event-stream",
        headers={**SSE_HEADERS, "request-id": record.id},
    )


async def _cancel_on_disconnect(request: Request, task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` when the client disconnects (the request body has been read already, so the next
    ASGI message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    task.cancel()


async def count_tokens_route(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    _check_auth(state, request)
    body = await _read_json(state, request)
    if not isinstance(body, dict):
        raise InvalidRequestError("request body must be a JSON object")
    who = state.who(request)
    policy = state.config.agents.get(who.agent) if who.agent else None
    pool = state.router.resolve(str(body.get("model", "")), policy.model_alias if policy else None)
    p = prepare(
        {**body, "max_tokens": 1, "stream": False},
        system_mode=pool.system_in_messages if pool.kind == "openai" else "fold",
    )
    map_tool_names(p)
    replica = state.router.pick(pool.name, who.session or None)
    n, method = await count_tokens(
        state.client,
        pool,
        replica,
        p,
        state.token_methods,
        _upstream_headers(pool, who),
        state.config.connect_timeout_s + 10,
    )
    out: dict[str, Any] = {"input_tokens": n}
    if method == "estimate":
        out["estimated"] = True
    return JSONResponse(out, headers={"x-coach-token-count": "estimate" if method == "estimate" else "exact"})


def _model_obj(name: str) -> dict[str, Any]:
    return {"type": "model", "id": name, "display_name": name, "created_at": "2025-01-01T00:00:00Z"}


async def models(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    _check_auth(state, request)
    names: list[str] = []
    for pool in state.config.models:
        names += [pool.name] + [a for a in pool.aliases if not any(c in a for c in "*?[")]
    data = [_model_obj(n) for n in dict.fromkeys(names)]
    return JSONResponse(
        {
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
    )


async def model_one(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    _check_auth(state, request)
    name = request.path_params["model_id"]
    state.router.resolve(name)
    return JSONResponse(_model_obj(name))


async def health(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    now = time.monotonic()
    reps = [
        {"pool": r.pool, "url": r.url, "available": r.available(now), "outstanding": r.outstanding}
        for r in state.router.all_replicas()
    ]
    ok = any(r["available"] for r in reps) or not reps
    return JSONResponse(
        {"status": "ok" if ok else "degraded", "replicas": reps}, status_code=200 if ok else 503
    )


async def metrics(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    now = time.monotonic()
    reps = [(r.pool, r.url, r.outstanding, r.available(now)) for r in state.router.all_replicas()]
    return PlainTextResponse(state.meter.prometheus(reps), media_type="text/plain; version=0.0.4")


async def _proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return _error(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _error(NotFoundError(f"no route {request.method} {request.url.path}"))
    return _error(
        ProxyError(str(exc.detail), status=exc.status_code)
        if exc.status_code >= 500
        else InvalidRequestError(f"{request.method} {request.url.path}: {exc.detail}", status=exc.status_code)
    )


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled proxy error on %s", request.url.path, exc_info=exc)
    return _error(ProxyError(f"internal proxy error ({type(exc).__name__})"))


async def _health_loop(state: ProxyState) -> None:
    while True:
        await state.router.check_health(state.client)
        await asyncio.sleep(state.config.health_interval_s)


def create_app(
    config: ProxyConfig,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    health_checks: bool = True,
    turn_for: TurnResolver | None = None,
    turn_secret: str | None = None,
    on_tool_delta: ToolDeltaObserver | None = None,
    identity_for: Callable[[str, str], tuple[str, str] | None] | None = None,
    fresh_start: Callable[[str, str], bool] | None = None,
) -> Starlette:
    """Build the proxy ASGI app for ``config``. ``transport`` replaces the upstream HTTP transport (tests);
    ``health_checks`` runs the active health loop while the app's lifespan is running; ``turn_for``
    resolves the turn of requests without ``x-coach-turn`` (metering of warm agent processes; see
    :data:`TurnResolver`); ``turn_secret`` (a proxy in its own process: ``coach serve``) serves ``POST
    /coach/turns``, where the supervisor posts its turns for the same purpose, authenticated with
    ``proxy._turns.turn_control_token(turn_secret)``. ``app.state.proxy.set_agent_policies(...)`` updates
    the per-agent policies. ``on_tool_delta`` (in-process callers) is called with a
    ``proxy._tool_tap.ToolArgsEvent`` as a forced tool call's arguments stream in (the call itself is
    still delivered whole, after validation). ``identity_for(user, session)`` maps the identity headers of
    a pooled agent process to the session it was handed to (None: unchanged). ``fresh_start(user,
    session)``, called with the identity headers of each ``/v1/messages`` request, says when the request
    must carry one message only (a reused process's first after its reset); otherwise 409."""
    client = httpx.AsyncClient(
        transport=transport,
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200),
        timeout=httpx.Timeout(config.read_timeout_s, connect=config.connect_timeout_s),
    )
    state = ProxyState(
        config=config,
        client=client,
        router=Router(config),
        meter=Meter(config),
        turn_for=turn_for,
        on_tool_delta=on_tool_delta,
        identity_for=identity_for,
        fresh_start=fresh_start,
    )
    routes = [
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", count_tokens_route, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", model_one, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    if config.shared_budgets_url:
        state.budgets = SharedBudgetHook(config)
        state.meter.on_record = state.budgets.on_record
    if turn_secret:
        state.turns, state.turn_token = TurnTable(), turn_control_token(turn_secret)
        routes.append(Route(TURNS_PATH, turns_route, methods=["POST"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if health_checks:
            state.health_task = asyncio.create_task(_health_loop(state))
        try:
            yield
        finally:
            if state.health_task is not None:
                state.health_task.cancel()
            state.prefills.cancel_all()
            if state.budgets is not None:
                await state.budgets.close()
            await client.aclose()

    app = Starlette(
        routes=routes,
        exception_handlers={ProxyError: _proxy_error, HTTPException: _http_error, Exception: _internal_error},
        lifespan=lifespan,
    )
    app.state.proxy = state
    return app


__all__ = ["ProxyState", "TurnResolver", "create_app", "now_ms"]
