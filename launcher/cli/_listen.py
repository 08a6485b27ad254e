"""Listening sockets and in-process uvicorn servers for the long-running commands (``coach serve``'s proxy,
MCP server and turn endpoint, ``coach worker``'s ``/metrics``): one bind with an error that names the
cause and its fix, one way to run an app on the bound socket and wait until it accepts."""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from launcher.errors import StackError

__all__ = ["Setting", "bind", "serve_app", "uvicorn_server"]

#: Seconds a server may take to accept connections after it was started.
START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Setting:
    """Where the user sets what a bind failure is about: the command's port option (``--proxy-port``), the
    coach.toml port key (``[proxy] port``) and host key (``[proxy] host``)."""

    option: str | None  # None: the command has no option for it, only the coach.toml key
    port_key: str
    host_key: str

    def port_fix(self, lead: str) -> str:
        """``{lead} --opt N / set [s] port`` or, without an option, ``set [s] port``."""
        return f"{lead} {self.option} / set {self.port_key}" if self.option else f"set {self.port_key}"


def bind_fix(exc: OSError, where: Setting) -> str:
    """The fix for a failed bind, by its cause: the port is taken (EADDRINUSE), needs privileges (EACCES:
    ports below 1024), or the host is not an address of this machine (EADDRNOTAVAIL, or a name that does
    not resolve: ``socket.gaierror``)."""
    if exc.errno == errno.EADDRINUSE:
        return (
            f"stop whatever uses that port (ss -ltnp shows it) or {where.port_fix('pass another')} "
            "(0 = any free port)"
        )
    if exc.errno == errno.EACCES:
        fix = (
            f"pass {where.option} 1024 or higher / set {where.port_key}"
            if where.option
            else f"set {where.port_key} to 1024 or higher"
        )
        return f"ports below 1024 need privileges: {fix}"
    return (
        f"set {where.host_key} to an address of this machine (127.0.0.1 for local agents only, 0.0.0.0 for "
        "all interfaces)"
    )


def bind(host: str, port: int, what: str, where: Setting, *, backlog: int = 2048) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: any free port). Raises StackError: ``cannot listen on
    host:port for <what>: <reason>. Fix: <bind_fix>``."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StackError(
            f"cannot listen on {host}:{port} for {what}: {exc.strerror or exc}. Fix: {bind_fix(exc, where)}"
        ) from None
    sock.listen(backlog)
    return sock


def uvicorn_server(app: Any, *, lifespan: Literal["on", "off"] = "on", grace_s: int = 2) -> Any:
    """A uvicorn server for ``app`` that leaves SIGINT/SIGTERM to the command."""
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the command handles SIGINT/SIGTERM itself
            yield

    return _Server(
        uvicorn.Config(
            app, log_level="warning", lifespan=lifespan, access_log=False, timeout_graceful_shutdown=grace_s
        )
    )


async def wait_started(servers: list[Any], what: str) -> None:
    """Return once every server accepts connections; StackError after :data:`START_TIMEOUT_S`."""
    import anyio

    with anyio.move_on_after(START_TIMEOUT_S):
        while not all(s.started for s in servers):  # noqa: ASYNC110 (uvicorn has no started event)
            await anyio.sleep(0.02)
        return
    raise StackError(f"the {what} did not start within {START_TIMEOUT_S:.0f}s")


async def serve_app(
    tg: Any, app: Any, sock: socket.socket, what: str, *, lifespan: Literal["on", "off"] = "on"
) -> Any:
    """Run ``app`` on ``sock`` as a task of ``tg`` (the socket is closed when it stops) and return the
    server once it accepts connections (set ``server.should_exit`` to stop it)."""
    server = uvicorn_server(app, lifespan=lifespan)

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()

    tg.start_soon(run)
    await wait_started([server], what)
    return server
