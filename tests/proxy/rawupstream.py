"""A raw-TCP fake upstream: byte-level control of what the proxy's HTTP client receives.

Each reply is a list of byte strings written one at a time (each flushed and followed by a short pause,
so each piece goes out as its own TCP segment), after which the connection is closed. Helpers build a
chunked response (optionally without its terminating zero-length chunk) or a close-delimited one (no
length, no chunking: the end of the body is the end of the connection, so a dropped connection looks
exactly like a finished body).

    up = RawUpstream(lambda req: sse_reply([frame(...)], done=False))
    with up:
        ... create_app(ProxyConfig.single_upstream(up.url)) ...
    up.requests  # [RawRequest(method, path, json), ...]
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testsupport.server import free_port


@dataclass
class RawRequest:
    method: str
    path: str
    json: Any


Reply = list[bytes]


def frame(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def json_reply(status: int, body: Any) -> Reply:
    raw = json.dumps(body).encode()
    return [
        _head(
            status,
            {"content-type": "application/json", "content-length": str(len(raw)), "connection": "close"},
        )
        + raw
    ]


def sse_reply(frames: list[bytes], *, done: bool = True, mode: str = "chunked") -> Reply:
    """An SSE response of ``frames`` (plus ``data: [DONE]`` when ``done``). ``mode``: ``chunked`` (ends
    with the zero-length chunk: the server finished the response), ``chunked-cut`` (no terminating
    chunk: the connection drops mid-body) or ``close`` (close-delimited body)."""
    frames = frames + ([b"data: [DONE]\n\n"] if done else [])
    headers = {"content-type": "text/event-stream", "connection": "close"}
    if mode == "close":
        return [_head(200, headers), *frames]
    headers["transfer-encoding"] = "chunked"
    chunks = [f"{len(f):x}\r\n".encode() + f + b"\r\n" for f in frames]
    return [_head(200, headers), *chunks, *([b"0\r\n\r\n"] if mode == "chunked" else [])]


class RawUpstream:
    """The raw server (module docstring); ``handler(request) -> reply``. GET requests (the proxy asking
    ``/v1/models`` or ``/props``) get ``get_handler``'s reply, a 404 by default."""

    def __init__(
        self,
        handler: Callable[[RawRequest], Reply],
        get_handler: Callable[[RawRequest], Reply] | None = None,
        gap_s: float = 0.01,
    ) -> None:
        self.handler = handler
        self.get_handler = get_handler or (lambda r: json_reply(404, {"error": "not found"}))
        self.gap_s = gap_s
        self.requests: list[RawRequest] = []
        self.port = free_port()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def model_calls(self) -> list[RawRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/chat/completions"]

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            raw = await reader.readexactly(length) if length else b""
            req = RawRequest(method, path.split("?")[0], json.loads(raw) if raw else None)
            self.requests.append(req)
            reply = self.get_handler(req) if method == "GET" else self.handler(req)
            for piece in reply:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(self.gap_s)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._serve_one, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await self._stop.wait()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def __enter__(self) -> RawUpstream:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._main(),), daemon=True
        )
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("raw upstream did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
