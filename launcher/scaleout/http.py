"""``coach serve``'s turn endpoint for operators' own apps: ``POST /v1/turns`` publishes the turn as a job
for ``coach worker`` and answers with server-sent events (docs/scale-out.md).

Request: ``{"user": "u1", "session": "s1", "message": "...", "job_id": "optional idempotency key"}`` with
``Authorization: Bearer <secret>`` (the data directory's ``mcp_secret``, or ``COACH_MCP_SECRET``: the
same secret ``coach serve`` signs everything else with). Response (``text/event-stream``):

* ``event: job`` — ``{"job_id": ...}`` once the job is queued (create-only row, confirmed publish);
* ``event: coach_reply`` — ``{"job_id", "coach_reply"}`` the moment the worker records it;
* ``event: synthesis`` — the whole result document (what ``coach run --json`` prints);
* ``event: error`` — ``{"job_id", "error"}`` when the job failed (dead-lettered) or a service is down.

Posting the same ``job_id`` again follows the same job (one reply, one synthesis). ``GET /v1/turns/{job_id}``
returns the job row's state as JSON. No user text is logged.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

__all__ = ["turns_app"]


_JSON_TYPES = {
    "int": "number",
    "float": "number",
    "bool": "boolean",
    "NoneType": "null",
    "list": "array",
    "dict": "object",
}
_SHAPE = 'send a JSON object {"user": "...", "session": "...", "message": "...", "job_id": "..." (optional)}'


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value).__name__, type(value).__name__)


def _turn_fields(body: Any) -> tuple[str, str, str, str | None] | str:
    """``(user, session, message, job_id or None)`` of a request body, or what is wrong with it: each field
    a JSON string (a number or null is refused, not turned into the text "5" or "None")."""
    if not isinstance(body, dict):
        return f"the body is not a JSON object: {_SHAPE}"
    for key in ("user", "session", "message"):
        if not isinstance(body.get(key), str):
            got = "missing" if key not in body else f"a JSON {_json_type(body[key])}, not a string"
            return f"{key!r} is {got}: {_SHAPE}"
    job_id = body.get("job_id")
    if job_id is not None and not isinstance(job_id, str):
        return f"'job_id' is a JSON {_json_type(job_id)}, not a string: {_SHAPE}"
    return body["user"], body["session"], body["message"], job_id or None


async def _read_turn(request: Any) -> tuple[str, str, str, str | None] | str:
    """:func:`_turn_fields` of the request's body; what is wrong when it is not UTF-8 JSON."""
    try:
        body = await request.json()
    except ValueError:  # not JSON, or bytes that are not UTF-8 (UnicodeDecodeError)
        return f"the body is not UTF-8 JSON: {_SHAPE}"
    return _turn_fields(body)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def turns_app(jobs: Any, broker: Any, secret: str) -> Any:
    """A Starlette app over an open ``TurnJobs`` and ``AmqpBroker``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from blackboard.errors import BlackboardError
    from launcher.errors import LauncherError
    from launcher.scaleout.frontend import TurnJobFailed, follow, submit

    def authorized(request: Request) -> bool:
        got = request.headers.get("authorization", "")
        return got.startswith("Bearer ") and hmac.compare_digest(got[7:].strip(), secret)

    async def post_turn(request: Request) -> Response:
        if not authorized(request):
            return JSONResponse(
                {
                    "error": "missing or wrong bearer token: send Authorization: Bearer <the data "
                    "directory's mcp_secret, or COACH_MCP_SECRET>"
                },
                status_code=401,
            )
        fields = await _read_turn(request)
        if isinstance(fields, str):
            return JSONResponse({"error": fields}, status_code=400)
        user, session, message, job_id = fields
        try:
            job = await submit(jobs, broker, user, session, message, job_id)
        except BlackboardError as exc:
            status = 400 if exc.code in ("invalid_key", "invalid_value") else 503
            return JSONResponse({"error": str(exc)}, status_code=status)
        except LauncherError as exc:  # the broker is unreachable: which URL, how to start it
            return JSONResponse({"error": str(exc)}, status_code=503)

        async def events() -> AsyncIterator[bytes]:
            yield _sse("job", {"job_id": job.job_id})
            send, receive = anyio.create_memory_object_stream[bytes](8)
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    async with send:

                        def on_reply(text: str) -> None:
                            send.send_nowait(_sse("coach_reply", {"job_id": job.job_id, "coach_reply": text}))

                        try:
                            doc = await follow(jobs, job.job_id, on_reply=on_reply)
                            await send.send(_sse("synthesis", {"job_id": job.job_id, **doc}))
                        except (TurnJobFailed, BlackboardError) as exc:
                            await send.send(_sse("error", {"job_id": job.job_id, "error": str(exc)}))

                tg.start_soon(run)
                async with receive:
                    async for chunk in receive:
                        yield chunk

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def get_turn(request: Request) -> Response:
        if not authorized(request):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
        job = await anyio.to_thread.run_sync(partial(jobs.get, request.path_params["job_id"]))
        if job is None:
            return JSONResponse({"error": "no such job"}, status_code=404)
        return JSONResponse(
            {
                "job_id": job.job_id,
                "state": job.state,
                "attempts": job.attempts,
                "turn_id": job.turn_id,
                "coach_reply": job.coach_reply,
                "result": json.loads(job.result) if job.result else None,
                "error": job.error,
            }
        )

    return Starlette(
        routes=[
            Route("/v1/turns", post_turn, methods=["POST"]),
            Route("/v1/turns/{job_id}", get_turn, methods=["GET"]),
        ]
    )


def open_turns_endpoint(config: Any, secret: str, bind: Any, echo: Any) -> tuple[Any, Any, Any, str] | None:
    """For ``coach serve`` with ``[broker] url``: ``(app, bound socket, close(), url)``, or None (no broker
    configured, or no PostgreSQL: a line says why). ``bind(host, port, what)`` binds or exits."""
    if not config.broker.url:
        return None
    if not config.data.url:
        echo(
            "coach serve: [broker] url is set but [data] url is not: POST /v1/turns needs the PostgreSQL the "
            "workers use (docs/scale-out.md); not serving it",
            err=True,
        )
        return None
    from blackboard._pg_jobs import TurnJobs
    from launcher.scaleout.broker import AmqpBroker, topology_of

    jobs = TurnJobs(config.data.url, schema=config.data.db_schema)
    broker = AmqpBroker(
        config.broker.url,
        topology_of(config),
        name="coach serve",
    )
    host = config.proxy.host
    sock = bind(host, config.broker.turns_port, "turns endpoint")

    def close() -> None:
        jobs.close()

    return turns_app(jobs, broker, secret), sock, close, f"http://{host}:{sock.getsockname()[1]}/v1/turns"
