"""One ``/v1/messages`` call against the upstream: a producer task opens the upstream stream (retries
before the first byte) and queues its payloads; the consumer turns them into Anthropic events through the
:class:`StreamBuilder`, sending ``ping`` while nothing arrives, and records usage when it ends.

A stream that ends with no finish reason and no ``[DONE]`` (a dropped connection, a killed server) is
an upstream failure: the client gets an ``error`` event (``api_error``; a 502 when not streaming), never
``end_turn`` or a ``tool_use`` built from what had arrived, and ``/metrics`` counts it
(``coach_proxy_truncated_streams_total``).

A client disconnect cancels the consumer, whose ``finally`` cancels the producer, which closes the
upstream response (so the upstream stops generating).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from ._metering import Meter, UsageRecord, now_ms
from ._router import Router
from ._stream import Event, StreamBuilder
from ._upstream import open_stream
from .config import ModelPool
from .errors import ProxyError, TruncatedStreamError, UpstreamError
from .wellformed import encode_sse

log = logging.getLogger("proxy.messages")
_RETRY_WARN_EVERY_S = 60.0
PING = encode_sse({"type": "ping"})
Item = tuple[str, Any]


class UpstreamRun:
    """The life of one upstream call (see module docstring)."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        router: Router,
        meter: Meter,
        pool: ModelPool,
        path: str,
        body: bytes,
        headers: dict[str, str],
        session: str | None,
        builder: StreamBuilder,
        feed: Callable[[Any], list[Event]],
        record: UsageRecord,
        t0: float,
    ) -> None:
        self.client, self.router, self.meter, self.pool = client, router, meter, pool
        self.path, self.body, self.headers, self.session = path, body, headers, session
        self.builder, self.feed, self.record, self.t0 = builder, feed, record, t0
        self.queue: asyncio.Queue[Item] = asyncio.Queue(maxsize=64)
        self.task: asyncio.Task[None] | None = None
        self._recorded = False

    def start(self) -> None:
        self.task = asyncio.create_task(self._produce())

    def _on_retry(self, replica: Any, err: ProxyError) -> None:
        self.meter.retries[replica.url] += 1
        # One warning per replica and error code a minute (a dead server used to print one per request, 20 in
        # a turn); the error's text, which may hold the upstream's body, only at debug level.
        key, now = (replica.url, err.code), time.monotonic()
        loud = now - self.meter.retry_warned.get(key, -1e9) >= _RETRY_WARN_EVERY_S
        if loud:
            self.meter.retry_warned[key] = now
        log.log(
            logging.WARNING if loud else logging.DEBUG,
            "retrying upstream request (model %s, replica %s): %s, HTTP %s (%d retries so far; /metrics counts them)",
            self.pool.name,
            replica.url,
            err.code,
            err.status,
            self.meter.retries[replica.url],
        )
        log.debug("upstream error detail (model %s): %s", self.pool.name, err.message)

    async def _produce(self) -> None:
        us = None
        try:
            us = await open_stream(
                self.client,
                self.router,
                self.pool,
                path=self.path,
                body=self.body,
                headers=self.headers,
                session=self.session,
                on_retry=self._on_retry,
            )
            self.record.replica, self.record.attempts = us.replica.url, us.attempts
            self.record.ttft_ms = now_ms(self.t0)
            if not us.empty:
                await self.queue.put(("p", us.first))
            async for payload in us.rest:
                await self.queue.put(("p", payload))
            await self.queue.put(("end", us.end.done))
        except ProxyError as exc:
            await self.queue.put(("err", exc))
        except httpx.HTTPError as exc:
            await self.queue.put(
                ("err", UpstreamError(f"upstream connection failed mid-stream ({type(exc).__name__})"))
            )
        except Exception as exc:  # a bug must still end the client's stream cleanly
            log.exception("proxy upstream producer failed")
            await self.queue.put(("err", UpstreamError(f"proxy internal error ({type(exc).__name__})")))
        finally:
            if us is not None:
                await us.aclose()

    def _get_nowait(self) -> Item | None:
        try:
            return self.queue.get_nowait()
        except asyncio.QueueEmpty:
            return None

    async def get(self, wait_s: float | None) -> Item | None:
        """The next queued item, or None after ``wait_s`` seconds without one."""
        item = self._get_nowait()
        if item is not None:
            return item
        try:
            async with asyncio.timeout(wait_s):
                return await self.queue.get()
        except TimeoutError:
            return None

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def finish(self, status: str) -> None:
        """Record usage once (tokens from the builder)."""
        if self._recorded:
            return
        self._recorded = True
        b, r = self.builder, self.record
        r.status = status
        r.total_ms = now_ms(self.t0)
        if status == "ok":
            r.cached_tokens = b.cached_tokens
            r.input_tokens = max(b.input_tokens - b.cached_tokens, 0)
            r.output_tokens = b.output_tokens or 0
            r.stop_reason = b.stop_reason
        self.meter.invalid_tool_arguments += b.invalid_tool_arguments - b.dropped_tool_calls
        self.meter.dropped_tool_calls += b.dropped_tool_calls
        self.meter.record(r)
        log.info(
            "request %s agent=%s session=%s model=%s status=%s in=%d cached=%d out=%d ttft_ms=%s",
            r.id,
            r.agent,
            r.session,
            r.model,
            status,
            r.input_tokens,
            r.cached_tokens,
            r.output_tokens,
            r.ttft_ms,
        )

    def _step(self, item: Item) -> tuple[list[Event], str | None, ProxyError | None]:
        """Events for one queued item and, when the stream ends, the final status (and error)."""
        kind, val = item
        try:
            if kind == "p":
                return self.feed(val), None, None
            if kind == "end":
                if not val and not self.builder.upstream_finished:
                    self.meter.truncated_streams[self.record.replica] += 1
                    raise TruncatedStreamError(
                        f"upstream {self.record.replica or self.pool.name} ended the stream without a finish reason "
                        "or [DONE] (connection dropped?); the output may be cut anywhere, so it is not delivered "
                        "as complete; retry the request"
                    )
                return self.builder.end(), "ok", None
            err: ProxyError = val
        except ProxyError as exc:
            err = exc
        self.cancel()
        return self.builder.fail(err), f"error:{err.error_type}", err

    async def sse(self, first: Item | None, ping_interval: float) -> AsyncIterator[bytes]:
        """The SSE body: message_start, then events, with a ping whenever ``ping_interval`` passes idle.
        Items already queued are sent together in one write (fewer sends under load)."""
        status = "cancelled"
        try:
            out = self.builder.start()
            item = first
            while True:
                if item is None:
                    if out:
                        yield b"".join(encode_sse(e) for e in out)
                        out = []
                    yield PING
                    item = await self.get(ping_interval)
                    continue
                done = None
                while item is not None:
                    events, done, _ = self._step(item)
                    out += events
                    if done:
                        break
                    item = self._get_nowait()
                if out:
                    yield b"".join(encode_sse(e) for e in out)
                    out = []
                if done:
                    status = done
                    return
                item = await self.get(ping_interval)
        finally:
            self.cancel()
            self.finish(status)

    async def collect(self) -> tuple[list[Event], ProxyError | None]:
        """Run to the end without streaming: (events, None) or ([], error)."""
        events = self.builder.start()
        try:
            while True:
                item = await self.get(None)
                assert item is not None
                evs, done, err = self._step(item)
                if err is not None and done is not None:
                    self.finish(done)
                    return [], err
                events += evs
                if done:
                    self.finish(done)
                    return events, None
        finally:
            self.cancel()
            self.finish("cancelled")


def elapsed(t0: float) -> float:
    return time.monotonic() - t0
