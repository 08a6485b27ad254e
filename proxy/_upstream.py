"""Opening an upstream stream with retries and failover, and reading its payloads.

:func:`open_stream` tries up to ``max_attempts`` times, preferring a different replica each time. It
retries what can be transient: connect errors, 429 (waiting ``Retry-After`` when given and not above
``max_retry_after_s``), 502/503/504/529, a 500 (out of memory, a crashed worker...), timeouts, resets and
unparsable bodies — but only until the first upstream payload has arrived; after that nothing is retried
(the caller has started streaming to its client). Not retried (:func:`_status_error`): a 500 whose body
says the request itself cannot be served (llama-server's "image input is not supported", "... exceeds
the context size", a template or parse failure: the same request fails the same way every time), and a 501
(llama-server's ``not_supported_error``): the client gets them as a 400 ``invalid_request_error`` with
the upstream's message. 505-511 are not retried either (an ``api_error`` 502 at once). Backoff between
attempts: ``backoff_base_s * 2**attempt`` with full jitter, capped at ``backoff_max_s`` (the AWS
"exponential backoff and jitter" scheme).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from ._router import Replica, Router
from .config import ModelPool, ProxyConfig
from .errors import (
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    ProxyError,
    RateLimitedError,
    RequestTooLargeError,
    UpstreamError,
    UpstreamTimeoutError,
)

_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


@dataclass
class StreamEnd:
    """How an upstream body ended: ``done`` is True once a ``[DONE]`` frame arrived or the body was one
    whole JSON document (complete by construction); False while, or when, a stream just stopped."""

    done: bool = False


async def iter_payloads(resp: httpx.Response, end: StreamEnd | None = None) -> AsyncIterator[Any]:
    """JSON payloads of an upstream response: each SSE ``data:`` frame (``[DONE]`` ends it), or the
    whole body when it is plain JSON. Raises UpstreamError on anything else (garbage). ``end.done`` is
    set when the body ended properly (see :class:`StreamEnd`)."""
    end = end if end is not None else StreamEnd()
    ctype = resp.headers.get("content-type", "")
    if "text/event-stream" not in ctype:
        raw = await resp.aread()
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise UpstreamError(f"upstream sent an unparsable body (content-type {ctype!r})") from exc
        end.done = True
        yield value
        return
    data: list[str] = []
    async for line in resp.aiter_lines():
        if not line.strip():
            if data:
                joined, data = "\n".join(data), []
                if joined.strip() == "[DONE]":
                    end.done = True
                    return
                try:
                    yield json.loads(joined)
                except ValueError as exc:
                    raise UpstreamError("upstream sent an SSE frame whose data is not JSON") from exc
            continue
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line.startswith(_SSE_FIELDS):
            raise UpstreamError("upstream sent a line that is not server-sent events")
    if data and "\n".join(data).strip() == "[DONE]":
        end.done = True
    elif data:
        try:
            yield json.loads("\n".join(data))
        except ValueError as exc:
            raise UpstreamError("upstream sent an SSE frame whose data is not JSON") from exc


@dataclass
class UpstreamStream:
    """An open upstream stream whose first payload has arrived."""

    replica: Replica
    response: httpx.Response
    first: Any
    rest: AsyncIterator[Any]
    attempts: int
    empty: bool = False
    end: StreamEnd = field(default_factory=StreamEnd)

    async def aclose(self) -> None:
        self.replica.outstanding -= 1
        await self.response.aclose()


#: Words in a 500's message that say the request itself cannot be served (not retried; a 400 for the client).
_REQUEST_UNSERVABLE = re.compile(
    r"not supported|unsupported|does not support|not implemented|exceeds? the (?:available )?context|"
    r"context size|context length|too long|failed to parse|could not parse|cannot parse|invalid|malformed|"
    r"chat template|no such tool|unknown (?:model|tool|parameter)",
    re.IGNORECASE,
)


def _status_error(status: int, body: bytes, url: str) -> ProxyError:
    try:
        j = json.loads(body)
        err = j.get("error", j) if isinstance(j, dict) else j
        detail = err.get("message") if isinstance(err, dict) else None
        detail = str(detail if detail is not None else err)
    except ValueError:
        detail = body[:300].decode("utf-8", "replace")
    msg = f"upstream answered HTTP {status}: {detail}"[:600]
    if status in (400, 422):
        return InvalidRequestError(msg)
    if status == 404:
        return NotFoundError(msg)
    if status == 413:
        return RequestTooLargeError(msg)
    if status in (401, 403):
        return UpstreamError(
            f"upstream {url} rejected the proxy's credentials (HTTP {status}); check the pool's api_key",
            retryable=False,
        )
    if status == 429:
        return RateLimitedError(msg)
    if status in (503, 529):
        return OverloadedError(msg)
    if status == 501 or (status == 500 and _REQUEST_UNSERVABLE.search(detail)):
        return InvalidRequestError(
            f"upstream cannot serve this request (HTTP {status}, not retried): {detail}"[:600]
        )
    if status in (500, 502, 504):
        return UpstreamError(msg)
    return UpstreamError(msg, retryable=False)  # 505-511: the same request fails the same way


def _retry_after(resp: httpx.Response) -> float | None:
    v = resp.headers.get("retry-after")
    try:
        return max(float(v), 0.0) if v is not None else None
    except ValueError:
        return None


def _backoff(cfg: ProxyConfig, attempt: int) -> float:
    return random.uniform(0, min(cfg.backoff_max_s, cfg.backoff_base_s * (2**attempt)))


async def _refusal(resp: httpx.Response, url: str, cfg: ProxyConfig) -> tuple[ProxyError, float | None]:
    """A replica's non-200 answer as an error. Raises it when it must not be retried (a 4xx other than
    429, a non-retryable 5xx, a 429 asking to wait longer than ``max_retry_after_s``); else returns it
    with the wait a 429's Retry-After asks for (None: the backoff)."""
    raw = await resp.aread()
    err = _status_error(resp.status_code, raw, url)
    if resp.status_code == 429:
        ra = _retry_after(resp)
        if ra is not None:
            err.headers["retry-after"] = str(int(ra))
            if ra > cfg.max_retry_after_s:
                raise err
        return err, ra
    if resp.status_code < 500 or not err.retryable:
        raise err
    return err, None


async def open_stream(
    client: httpx.AsyncClient,
    router: Router,
    pool: ModelPool,
    *,
    path: str,
    body: bytes,
    headers: dict[str, str],
    session: str | None,
    on_retry: Any = None,
) -> UpstreamStream:
    """Send ``body`` to ``path`` on a replica of ``pool`` and wait for the first payload, with retries
    and failover (module docstring). Raises a ProxyError subclass when every attempt failed:
    RateLimitedError (429s), OverloadedError (nothing reachable / 503), UpstreamTimeoutError (no first
    byte in time), UpstreamError (5xx, garbage, reset), or the mapped 4xx (never retried)."""
    cfg = router.config
    timeout = httpx.Timeout(
        connect=cfg.connect_timeout_s, read=cfg.read_timeout_s, write=60.0, pool=cfg.connect_timeout_s
    )
    tried: set[str] = set()
    last: ProxyError = OverloadedError(f"no replica of model {pool.name!r} could be reached")
    for attempt in range(cfg.max_attempts):
        replica = router.pick(pool.name, session, tried)
        tried.add(replica.url)
        wait = _backoff(cfg, attempt)
        resp: httpx.Response | None = None
        replica.outstanding += 1
        handed_over = False
        try:
            with anyio.fail_after(cfg.first_byte_timeout_s):
                req = client.build_request(
                    "POST", replica.url + path, content=body, headers=headers, timeout=timeout
                )
                resp = await client.send(req, stream=True)
                if resp.status_code != 200:
                    last, asked = await _refusal(resp, replica.url, cfg)
                    if asked is not None:
                        wait = asked
                else:
                    end = StreamEnd()
                    payloads = iter_payloads(resp, end)
                    empty = False
                    try:
                        first = await payloads.__anext__()
                    except StopAsyncIteration:
                        first, empty = None, True
                    router.mark_up(replica)
                    replica.served += 1
                    handed_over = True
                    return UpstreamStream(replica, resp, first, payloads, attempt + 1, empty, end)
        except TimeoutError:
            last = UpstreamTimeoutError(
                f"upstream {replica.url} sent no first byte within {cfg.first_byte_timeout_s:g} s"
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            router.mark_down(replica)
            last = OverloadedError(
                f"upstream {replica.url} of model {pool.name!r} is unreachable ({type(exc).__name__})"
            )
        except httpx.TimeoutException:
            last = UpstreamTimeoutError(f"upstream {replica.url} timed out before the first byte")
        except httpx.HTTPError as exc:
            last = UpstreamError(
                f"upstream {replica.url} failed before the first byte ({type(exc).__name__})"
            )
        except UpstreamError as exc:
            if not exc.retryable:
                raise
            last = exc
        finally:
            if not handed_over:
                replica.outstanding -= 1
                if resp is not None:
                    await resp.aclose()
        if attempt + 1 < cfg.max_attempts:
            if on_retry is not None:
                on_retry(replica, last)
            await anyio.sleep(wait)
    raise last
