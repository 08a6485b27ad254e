"""``coach serve``: the proxy and the streamable-HTTP MCP server in the foreground, with upstream health.

Both servers run in one process and one event loop (uvicorn, signal handling left to this command):

* the proxy (``proxy.create_app``) on ``[proxy] host:port`` (default 127.0.0.1:8082), its pools from
  ``CoachConfig.proxy_config()`` and its per-agent policies from the agent files
  (``launcher.agents.policies.policies_from_agents``; policies written in ``[proxy.agents.*]`` win); with
  ``[agents] watch`` (the default) the agents folder is watched and an edited, valid agent file replaces
  those policies before the next request (``launcher.agents._serve_agents``; a line says so);
* the MCP server (``mcp_server.build_server``) on ``[mcp] host:port`` + ``path`` (default
  127.0.0.1:8765/mcp) over the blackboard in ``[data] dir``; each request's ``x-coach-*`` headers fix
  its scope, and every request must carry a valid ``x-coach-scope-token`` signed with
  ``COACH_MCP_SECRET`` or, when unset, the secret file ``<data dir>/mcp_secret`` (mode 0600, created if
  missing; ``coach run --mcp-url`` in the same data dir reads it: ``mcp_server.mcp_secret``). The
  same secret authenticates the proxy's ``POST /coach/turns``, where ``coach run``/``chat --proxy-url``
  post the open turn of their warm agent processes (``proxy._turns``), so metering names each turn.

Agents started elsewhere use them with ``coach run --proxy-url ... --mcp-url ...``. Upstream health:
every replica of every model pool is checked the way the proxy's router checks it (``GET
{replica}/health``; an answer below 500 is healthy) every ``[proxy] health_interval_s`` seconds, and its
state is printed at start and whenever it changes. Ctrl-C (SIGINT) or SIGTERM stops both servers
cleanly (open requests get ``GRACE_S`` seconds) and the command exits 0.

Sessions are closed (compacted into the profile, ``launcher.pipeline.sessions.close_session``) once no MCP
request of theirs arrived for ``[agents] idle_close_s`` seconds (issue 5's idle timeout; 0 = never).

Exit codes: 0 stopped by a signal, 2 bad configuration or agent files, 1 a server could not start
(e.g. the port is taken; the message names it).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from launcher.cli._common import fail

__all__ = ["GRACE_S", "READY_PREFIX", "idle_closing_scopes", "serve_cmd"]

#: Seconds open requests get when the servers stop.
GRACE_S = 2
#: First words of the line printed once both servers listen (tests and scripts wait for it).
READY_PREFIX = "coach serve: ready"


def _bind(host: str, port: int, what: str) -> socket.socket:
    """Bind for ``coach serve`` or exit 1 with the cause and the fix (``launcher.cli._listen.bind``)."""
    from launcher.cli._listen import Setting, bind
    from launcher.errors import StackError

    where = {
        "proxy": Setting("--proxy-port", "[proxy] port", "[proxy] host"),
        "mcp server": Setting("--mcp-port", "[mcp] port", "[mcp] host"),
    }.get(what, Setting(None, "[broker] turns_port", "[proxy] host"))
    try:
        return bind(host, port, f"the {what}", where)
    except StackError as exc:
        fail(f"coach serve: {exc}", 1)


async def check_upstreams(client: Any, pools: list[Any]) -> dict[str, str]:
    """``{"<pool> <replica url>": "healthy" | "unreachable (...)"}``, by the proxy router's own rule:
    ``GET {replica}/health`` answering below 500 is healthy; a 5xx, timeout or connection error is not."""
    import httpx

    out: dict[str, str] = {}
    for pool in pools:
        for url in pool.replicas:
            try:
                resp = await client.get(url + "/health")
                state = "healthy" if resp.status_code < 500 else f"unreachable (HTTP {resp.status_code})"
            except httpx.HTTPError as exc:
                state = f"unreachable ({type(exc).__name__})"
            out[f"{pool.name} {url}"] = state
    return out


async def _watch_health(pools: list[Any], interval_s: float) -> None:
    """Print each upstream replica's state at start and whenever it changes."""
    import anyio
    import httpx

    seen: dict[str, str] = {}
    async with httpx.AsyncClient(timeout=5) as client:
        while True:
            now = await check_upstreams(client, pools)
            for name, state in now.items():
                if seen.get(name) != state:
                    mark = "ok" if state == "healthy" else "!!"
                    typer.echo(f"coach serve: [{mark}] upstream {name}: {state}")
            sys.stdout.flush()
            seen = now
            await anyio.sleep(interval_s)


class _TouchingScope:
    """A ScopeSource that records each request's session as active (``IdleSessions.touch``)."""

    def __init__(self, inner: Any, idle: Any) -> None:
        self._inner = inner
        self._idle = idle

    def scope_for(self, headers: Any) -> Any:
        scope = self._inner.scope_for(headers)
        self._idle.touch(scope.user, scope.session)
        return scope


def idle_closing_scopes(board: Any, scopes: Any, timeout_s: float, *, clock: Any = None) -> tuple[Any, Any]:
    """``(scope source, IdleSessions)``: every request that passes ``scopes`` marks its session active;
    ``IdleSessions.run`` (or ``close_idle``) closes sessions without a request for ``timeout_s``
    seconds. ``timeout_s <= 0``: ``(scopes, None)`` (never closed)."""
    import time
    from functools import partial

    from launcher.pipeline.sessions import IdleSessions, close_session

    if timeout_s <= 0:
        return scopes, None
    idle = IdleSessions(partial(close_session, board), timeout_s, clock=clock or time.monotonic)
    return _TouchingScope(scopes, idle), idle


async def _run_server(server: Any, sock: socket.socket) -> None:
    await server.serve(sockets=[sock])


async def _serve(
    config: Any, registry: Any, sync: Any, ports: tuple[int | None, int | None], board: Any
) -> None:
    from functools import partial

    import anyio

    from launcher.agents.policies import policies_from_agents
    from launcher.cli._listen import uvicorn_server, wait_started
    from launcher.pipeline.sessions import idle_check_interval
    from mcp_server import HeaderScope, build_server, mcp_secret
    from proxy import create_app

    pcfg = config.proxy_config()
    written = dict(pcfg.agents)  # policies written in [proxy.agents.*] win over the agent files'
    pcfg = pcfg.model_copy(update={"agents": {**policies_from_agents(registry.current()), **written}})
    mcfg = config.mcp
    proxy_sock = _bind(pcfg.host, pcfg.port if ports[0] is None else ports[0], "proxy")
    mcp_sock = _bind(mcfg.host, mcfg.port if ports[1] is None else ports[1], "mcp server")
    data_dir = Path(config.data.dir)
    secret = mcp_secret(data_dir)  # scope tokens always required
    scopes, idle = idle_closing_scopes(board, HeaderScope(secret=secret), config.agents.idle_close_s)
    mcp = build_server(board, scopes, mcfg)
    mcp_app = mcp.streamable_http_app(streamable_http_path=mcfg.path, stateless_http=True, host=mcfg.host)
    proxy_app = create_app(pcfg, turn_secret=secret)  # POST /coach/turns: the turns of warm agents
    sync.attach(proxy_app.state.proxy.set_agent_policies, written)  # edited agent files reach the proxy
    servers = [uvicorn_server(proxy_app, grace_s=GRACE_S), uvicorn_server(mcp_app, grace_s=GRACE_S)]
    socks = [proxy_sock, mcp_sock]
    proxy_url = f"http://{pcfg.host}:{proxy_sock.getsockname()[1]}"
    mcp_url = f"http://{mcfg.host}:{mcp_sock.getsockname()[1]}{mcfg.path}"
    from launcher.scaleout.http import open_turns_endpoint

    turns = open_turns_endpoint(config, str(secret), _bind, typer.echo)  # [broker] url: POST /v1/turns (SSE)
    if turns is not None:
        servers.append(uvicorn_server(turns[0], grace_s=GRACE_S))
        socks.append(turns[1])
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with anyio.create_task_group() as outer:
                async with anyio.create_task_group() as inner:
                    for server, sock in zip(servers, socks, strict=True):
                        inner.start_soon(_run_server, server, sock)
                    await wait_started(servers, "proxy and MCP server")
                    typer.echo(
                        f"{READY_PREFIX}: proxy {proxy_url}  mcp {mcp_url}  data {data_dir}"
                        "  (MCP scope tokens required)" + (f"  turns {turns[3]}" if turns else "")
                    )
                    typer.echo(
                        f"coach serve: agents use: coach run MESSAGE --user U --session S "
                        f"--proxy-url {proxy_url} --mcp-url {mcp_url}   (Ctrl-C stops)"
                    )
                    sys.stdout.flush()
                    outer.start_soon(_watch_health, pcfg.models, pcfg.health_interval_s)
                    if idle is not None:
                        outer.start_soon(idle.run, idle_check_interval(idle.timeout_s))
                    if config.agents.watch:
                        outer.start_soon(partial(registry.watch, debounce_ms=100))
                    async for signum in signals:
                        typer.echo(
                            f"coach serve: {signal.Signals(signum).name} received, stopping "
                            f"(open requests get {GRACE_S}s)"
                        )
                        break
                    for s in servers:
                        s.should_exit = True
                    # the servers return on their own; past this bound their tasks are cancelled
                    inner.cancel_scope.deadline = anyio.current_time() + GRACE_S + 3
                outer.cancel_scope.cancel()
    finally:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.close()
        if turns is not None:
            turns[2]()
    typer.echo("coach serve: stopped")


def serve_cmd(
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
    proxy_port: Annotated[
        int | None, typer.Option("--proxy-port", help="proxy port (default \\[proxy] port; 0 = any free)")
    ] = None,
    mcp_port: Annotated[
        int | None, typer.Option("--mcp-port", help="MCP port (default \\[mcp] port; 0 = any free)")
    ] = None,
) -> None:
    """Serve the proxy and the MCP HTTP server in the foreground, showing upstream health."""
    import anyio

    from launcher.agents import AgentRegistry, AgentSpecError
    from launcher.agents._serve_agents import AgentPolicySync
    from launcher.cli._common import load_config_or_exit, read_only_data_dir

    config = load_config_or_exit(config_path)
    for name, port in (("--proxy-port", proxy_port), ("--mcp-port", mcp_port)):
        if port is not None and not 0 <= port <= 65535:
            fail(f"coach serve: {name} must be 0-65535 (0 = any free port), got {port}")
    try:
        sync = AgentPolicySync(typer.echo)
        registry = AgentRegistry(config.agents.resolved_dir(), on_change=sync)
        sync.registry = registry
    except AgentSpecError as exc:
        fail(f"coach serve: {exc}\nFix the agent files (coach agents check) or set [agents] dir.")
    from blackboard import Blackboard, BlackboardError

    if (problem := read_only_data_dir(Path(config.data.dir))) is not None:
        fail(f"coach serve: {problem}")
    try:
        Path(config.data.dir).mkdir(parents=True, exist_ok=True)
        board = Blackboard(Path(config.data.dir), thresholds=config.thresholds, **config.data.board_options())
    except (OSError, BlackboardError) as exc:
        fail(
            f"coach serve: cannot open the blackboard in {config.data.dir}: {exc}. Fix: point [data] dir "
            "(or COACH_DATA_DIR) at a writable folder"
        )
    from launcher.cli._common import quiet_cancelled_server_tasks

    try:
        with quiet_cancelled_server_tasks():  # requests cut at the grace deadline: no uvicorn tracebacks
            anyio.run(_serve, config, registry, sync, (proxy_port, mcp_port), board)
    finally:
        board.close()
