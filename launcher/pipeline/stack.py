"""Run the proxy and the MCP HTTP server in-process for the duration of a command.

``running_stack(...)`` is an async context manager: it binds each server to a free loopback port
(the socket is bound before uvicorn starts, so there is no port race), serves both as anyio tasks in
the current event loop, yields their URLs, and shuts both down on exit (including Ctrl-C: uvicorn's own
signal handlers are not installed, so the interrupt reaches the command). A server whose URL is given
(``proxy_url`` / ``mcp_url``: an already-running ``coach serve``) is not started.

The MCP server uses :class:`launcher.pipeline._turn_scope.DirectoryScope`, so warm agent processes get their
turn from the supervisor's :class:`~launcher.pipeline._turn_scope.TurnDirectory` (see that module); the proxy
meters their requests with the turn from the same directory. An external proxy (``proxy_url``: ``coach
serve``) with an in-process MCP server (so warm processes) gets the directory's changes through
``POST /coach/turns`` (``launcher.pipeline._proxy_turns``, signed with the data directory's secret).
``StackUrls.set_agents`` updates the in-process proxy's per-agent policies after the agent files were
reloaded.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from blackboard import Blackboard
from launcher.agents.policies import policies_from_agents
from launcher.errors import StackError
from launcher.pipeline._turn_scope import DirectoryScope, TurnDirectory

__all__ = ["StackUrls", "running_stack"]

_START_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class StackUrls:
    """``proxy_url``: the ``ANTHROPIC_BASE_URL`` for agents; ``mcp_url``: the streamable-HTTP MCP URL;
    ``in_process_mcp``: True when the MCP server runs here (turns resolved through the directory);
    ``set_agents``: for an in-process proxy, ``set_agents(specs)`` replaces its per-agent policies with
    those of the agent specs (policies written in the proxy config still win; invalid specs raise and
    change nothing); None when the proxy is an external one (its policies come from its own config)."""

    proxy_url: str
    mcp_url: str
    in_process_mcp: bool
    set_agents: Callable[[Mapping[str, Any]], None] | None = field(default=None, compare=False)


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the host command."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, 0))
    except OSError as exc:
        sock.close()
        raise StackError(f"cannot bind a port on {host}: {exc}; pass --proxy-url/--mcp-url instead") from exc
    sock.listen(2048)
    return sock


async def _start(tg: Any, app: Any, host: str, name: str) -> tuple[_EmbeddedServer, int]:
    sock = _bind(host)
    port = int(sock.getsockname()[1])
    server = _EmbeddedServer(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    )

    async def serve() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()

    tg.start_soon(serve)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline:
            raise StackError(f"the in-process {name} did not start within {_START_TIMEOUT_S:.0f}s")
        await anyio.sleep(0.01)
    return server, port


@contextlib.asynccontextmanager
async def running_stack(
    *,
    board: Blackboard,
    directory: TurnDirectory,
    proxy_config: Any = None,
    mcp_config: Any = None,
    agents: Mapping[str, Any] | None = None,
    proxy_url: str | None = None,
    mcp_url: str | None = None,
    mcp_secret: str | None = None,
    host: str = "127.0.0.1",
    data_dir: Path | None = None,
) -> AsyncIterator[StackUrls]:
    """Start what is not given, yield the URLs, stop on exit.

    Args:
        board: the blackboard the MCP server writes to (same data dir as the supervisor).
        directory: the supervisor's turn directory (shared with the MCP server's scope source).
        proxy_config: a ``proxy.ProxyConfig`` (upstream pools); its per-agent policies are completed
            from ``agents`` (policies written in the config win).
        mcp_config: a ``mcp_server.McpConfig`` (its host/port are ignored: a free loopback port is used).
        agents: the agent specs, for :func:`launcher.agents.policies.policies_from_agents`.
        proxy_url / mcp_url: use these running servers instead of starting one.
        mcp_secret: when set, the in-process MCP server refuses scope headers not signed with it
            (``x-coach-scope-token``; the runner signs with the same secret).
        data_dir: the data directory; with ``proxy_url`` and an in-process MCP server, its secret signs
            the turn updates posted to that proxy (none posted when it has no secret: a warning says so).

    Raises:
        StackError: a server could not be started.
    """
    servers: list[_EmbeddedServer] = []
    mirror: Any = None
    set_agents: Callable[[Mapping[str, Any]], None] | None = None
    async with anyio.create_task_group() as tg:
        try:
            if proxy_url is None:
                from proxy import ProxyConfig, create_app

                cfg = proxy_config if proxy_config is not None else ProxyConfig()
                written = dict(cfg.agents)  # the config's own policies win over the agent files'
                if agents:
                    cfg = cfg.model_copy(update={"agents": {**policies_from_agents(agents), **written}})
                # Warm agent processes send no x-coach-turn: the proxy meters them with the turn the
                # supervisor opened (the same directory the MCP server resolves turns from).
                # The Coach's reply streams to the turn's front end while write_coach's arguments arrive.
                from launcher.pipeline._reply_stream import taps_for
                from launcher.runner._process_pool import bindings_for

                app = create_app(
                    cfg,
                    turn_for=directory.turn_for,
                    on_tool_delta=taps_for(directory).observe,
                    identity_for=bindings_for(directory).resolve,  # pooled processes' sessions
                    fresh_start=bindings_for(directory).fresh.take,  # reset ones: checked
                )
                state = app.state.proxy

                def set_agents(specs: Mapping[str, Any]) -> None:
                    state.set_agent_policies({**policies_from_agents(specs), **written})

                server, port = await _start(tg, app, host, "proxy")
                servers.append(server)
                proxy_url = f"http://{host}:{port}"
            in_process = mcp_url is None
            if mcp_url is None:
                from mcp_server import McpConfig, build_server

                mcfg = mcp_config if mcp_config is not None else McpConfig()
                mcp = build_server(board, DirectoryScope(directory, mcp_secret), mcfg)
                app = mcp.streamable_http_app(streamable_http_path=mcfg.path, stateless_http=True, host=host)
                server, port = await _start(tg, app, host, "MCP server")
                servers.append(server)
                mcp_url = f"http://{host}:{port}{mcfg.path}"
            if in_process and set_agents is None:  # an external proxy, and warm agent processes
                from launcher.pipeline._proxy_turns import mirror_for

                mirror = mirror_for(proxy_url, data_dir)
                if mirror is not None:
                    await tg.start(mirror.run)
                    directory.add_listener(mirror)
            yield StackUrls(
                proxy_url=proxy_url, mcp_url=mcp_url, in_process_mcp=in_process, set_agents=set_agents
            )
        finally:
            if mirror is not None:
                mirror.stop()
            for s in servers:
                s.should_exit = True
