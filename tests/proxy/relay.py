"""A recording TCP relay in front of a real server: what the proxy sent upstream, and a stream cut on demand.

    with Relay("127.0.0.1", 8080) as relay:          # listens on relay.url, forwards every connection
        ... point the proxy at relay.url ...
        relay.requests                                # [RelayedRequest(method, path, json), ...]
        relay.cut_after(b"data: ", 3)                 # the next response is cut (both sockets closed)
                                                      # right after the 3rd piece containing the marker;
                                                      # clean=True first ends the chunked body properly
                                                      # (a zero-length chunk: the response "finished")

Bytes are forwarded as they arrive, in both directions; requests are parsed from the client side's bytes
(keep-alive connections carry several, each with a Content-Length body).
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

from testsupport.server import free_port


@dataclass
class RelayedRequest:
    method: str
    path: str
    json: Any


class Relay:
    """See the module docstring."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self.requests: list[RelayedRequest] = []
        self._cut: tuple[bytes, int, bool] | None = None
        self.cuts = 0
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut_after(self, marker: bytes, pieces: int, *, clean: bool = False) -> None:
        """Cut the next response that carries ``marker`` after ``pieces`` pieces containing it; ``clean``
        sends the chunked body's terminating zero-length chunk before closing (the body looks complete
        at the HTTP level, as when a server ends a response early), else the connection just drops."""
        self._cut = (marker, pieces, clean)

    def model_calls(self) -> list[RelayedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/chat/completions"]

    def _record(self, buf: bytearray) -> None:
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if len(buf) < end + 4 + length:
                return
            body = bytes(buf[end + 4 : end + 4 + length])
            del buf[: end + 4 + length]
            method, path, _ = head[0].split(" ", 2)
            try:
                parsed = json.loads(body) if body else None
            except ValueError:
                parsed = body
            self.requests.append(RelayedRequest(method, path.split("?")[0], parsed))

    async def _pipe_up(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        buf = bytearray()
        while data := await reader.read(65536):
            buf += data
            self._record(buf)
            writer.write(data)
            await writer.drain()
        writer.close()

    async def _pipe_down(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_writer: asyncio.StreamWriter
    ) -> None:
        seen = 0
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
            if self._cut is not None and self._cut[0] in data:
                seen += 1
                if seen >= self._cut[1]:
                    if self._cut[2] and data.endswith(b"\r\n"):
                        writer.write(b"0\r\n\r\n")
                        await writer.drain()
                    self._cut, self.cuts = None, self.cuts + 1
                    break
        writer.close()
        up_writer.close()

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            ureader, uwriter = await asyncio.open_connection(*self.target)
            up = asyncio.create_task(self._pipe_up(creader, uwriter))
            await self._pipe_down(ureader, cwriter, uwriter)
            up.cancel()
            await asyncio.gather(up, return_exceptions=True)
        except (ConnectionError, OSError):
            cwriter.close()
        finally:
            self._tasks.discard(task)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await self._stop.wait()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def __enter__(self) -> Relay:
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._main(),), daemon=True
        )
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("relay did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
