"""Run any ASGI app on a real loopback port in a background thread (uvicorn), for tests and benches.

Usage::

    with ThreadedServer(app) as server:
        httpx.get(server.base_url + "/health")
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Any

import uvicorn

from ._lifecycle import StartStop
from .errors import UpstreamStartError

__all__ = ["ThreadedServer", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (bind to 0, read, close). Racy by nature:
    prefer passing a bound socket (as :class:`ThreadedServer` does) when you own the server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, started: threading.Event) -> None:
        super().__init__(config)
        self._started_event = started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._started_event.set()


class ThreadedServer(StartStop):
    """A uvicorn server for ``app`` on ``host:port`` (port 0 => a free one) in a daemon thread.

    Args:
        app: any ASGI application.
        host: bind address (loopback by default).
        port: 0 picks a free port; the socket is bound before the thread starts, so no race.
        start_timeout_s: :meth:`start` raises :class:`UpstreamStartError` past it.
        graceful_s: on :meth:`stop`, open connections get this long before their tasks are cancelled.
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout_s: float = 10.0,
        graceful_s: float = 1.0,
        log_level: str = "warning",
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.start_timeout_s = start_timeout_s
        self.graceful_s = graceful_s
        self.log_level = log_level
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        """``http://host:port`` (raises :class:`UpstreamStartError` before :meth:`start`)."""
        if self._socket is None:
            raise UpstreamStartError("server not started; call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> str:
        """Bind, start the thread, wait for uvicorn's startup. Returns :attr:`base_url`."""
        if self.running:
            return self.base_url
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.set_inheritable(True)
        self.port = int(sock.getsockname()[1])
        self._socket = sock
        started = threading.Event()
        config = uvicorn.Config(
            self.app,
            log_level=self.log_level,
            lifespan="off",
            timeout_graceful_shutdown=max(1, round(self.graceful_s)),
            access_log=False,
        )
        self._server = _Server(config, started)
        self._thread = threading.Thread(target=self._run, name=f"uvicorn:{self.port}", daemon=True)
        self._thread.start()
        if not started.wait(self.start_timeout_s) or self._error is not None:
            self.stop()
            raise UpstreamStartError(f"server on {self.host}:{self.port} did not start: {self._error!r}")
        return self.base_url

    def _run(self) -> None:
        assert self._server is not None and self._socket is not None
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        except BaseException as exc:  # reported by start()
            self._error = exc

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask uvicorn to exit, join the thread (at most ``timeout_s``), close the socket. Idempotent."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout_s)
        self._thread = None
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
