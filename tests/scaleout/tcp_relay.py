"""A TCP relay that can be switched off: a broker or database "going away" for one client without touching
the real server (other users of the machine's RabbitMQ and PostgreSQL are not disturbed).

    with TcpRelay("127.0.0.1", 5672) as relay:   # relay.port forwards to the target
        relay.down()                              # every relayed connection cut, new ones refused
        relay.up()                                # accepting again
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from testsupport.server import free_port


class TcpRelay:
    """See the module docstring."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: Any = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            ureader, uwriter = await asyncio.open_connection(*self.target)
        except OSError:
            cwriter.close()
            return
        self._writers |= {cwriter, uwriter}
        await asyncio.gather(self._pipe(creader, uwriter), self._pipe(ureader, cwriter))
        self._writers -= {cwriter, uwriter}

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for w in list(self._writers):
            with contextlib.suppress(Exception):
                w.transport.abort()
        self._writers.clear()

    def _run(self, coro: Any) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def up(self) -> None:
        self._run(self._start())

    def down(self) -> None:
        self._run(self._stop())

    def __enter__(self) -> TcpRelay:
        self._thread.start()
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
