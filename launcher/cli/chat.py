"""``coach chat --user U [--session S]``: an interactive coaching session in the terminal (rich).

Each line the user types is one turn (``Supervisor.run_turn``): the Coach's reply is printed the moment
it exists, a live per-agent status line runs while the specialists and Pineal work, and the synthesis is
appended when it is ready, followed by one ``turn <id> done`` line. A crisis message (safety tier 3)
is shown as a crisis response (no coaching content follows); a tier-2 message gets the support response
first. ``/quit`` (or ``/exit``, Ctrl-D / end of input) closes the session: it is compacted into the
user's profile (``launcher.pipeline.sessions.close_session``) and every agent process is stopped.

The agents folder is watched (watchfiles, :meth:`launcher.agents.AgentRegistry.watch`) while the chat
runs: a valid edit is used from the next turn (the edited agent's warm process is replaced because its
prompt changed), including the in-process proxy's per-agent policies (forced tool, max tokens, model
alias: ``Runtime.current_agents``); an invalid edit is reported with file, line and fix, and the
previous version keeps being used. With ``--proxy-url`` the external proxy keeps its own policies.
The session's agent processes are started while the user types the first line (``Supervisor.prewarm``).

With ``--broker URL`` (or ``[broker] url``) nothing runs here: each line is a turn job for ``coach worker``
(``launcher.cli._chat_broker``; docs/scale-out.md).

When stdout is not a terminal (pipes, tests) the status line is replaced by one plain line per agent
result, so the output stays line-oriented. Exit codes: 0 closed normally, 2 bad configuration, agent
files or ids, 130 interrupted (the session is left open; ``coach session close`` closes it later).
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

import typer

from launcher.cli._common import plural

__all__ = ["QUIT_COMMANDS", "chat_cmd"]

#: Lines that end the session (case-insensitive, surrounding spaces ignored).
QUIT_COMMANDS = frozenset({"/quit", "/exit", "/q"})

_ICON = {
    "pending": "·",
    "running": "…",
    "ok": "✓",
    "error": "✗",
    "timeout": "⌛",
    "crashed": "✗",
    "skipped": "-",
}
_DONE = frozenset({"ok", "error", "timeout", "crashed", "skipped"})


def default_session_id(now: datetime | None = None) -> str:
    """A new session id for a chat started without ``--session``: ``chat-YYYYMMDD-HHMMSS`` (UTC)."""
    return (now or datetime.now(UTC)).strftime("chat-%Y%m%d-%H%M%S")


class _RecordingScreen:
    """Wraps the safety screen and remembers the tier of the latest message (to label the first reply),
    also when an agent's risk assessment raised it (``raised``, which the supervisor calls)."""

    def __init__(self, inner: Callable[[str, Mapping[str, Any] | None], Any]) -> None:
        self._inner = inner
        self.last_tier = 0

    def __call__(self, text: str, state: Mapping[str, Any] | None) -> Any:
        outcome = self._inner(text, state)
        self.last_tier = int(outcome.tier)
        return outcome

    def raised(self, outcome: Any, decision: Any) -> Any:
        from launcher.pipeline._model_raise import raise_fn_of

        new = raise_fn_of(self._inner)(outcome, decision)
        self.last_tier = int(new.tier)
        return new


class _StatusView:
    """The per-agent status of the running turn: a rich ``Live`` line on a terminal, else one plain
    line per agent that finishes."""

    def __init__(self, console: Any, t0: float) -> None:
        self.console = console
        self.t0 = t0
        # every agent shown from the start, in display order, as pending until its first status change
        from blackboard import AGENT_ORDER

        self.states: dict[str, Any] = {n: SimpleNamespace(agent=n, status="pending") for n in AGENT_ORDER}
        self.live: Any = None
        self._printed: set[str] = set()
        # the Coach's reply as it is written (launcher.pipeline._reply_view.ReplyText), live only
        self.reply: Any = None

    def __enter__(self) -> _StatusView:
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live(self._render(), console=self.console, transient=True, refresh_per_second=8)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)
            self.live = None

    def _render(self) -> Any:
        from rich.text import Text

        line = Text(f"[{time.monotonic() - self.t0:5.1f}s] ", style="dim")
        for name, st in self.states.items():
            colour = {"ok": "green", "running": "yellow", "pending": "dim", "skipped": "dim"}.get(
                st.status, "red"
            )
            line.append(f"{_ICON.get(st.status, '?')} {name}  ", style=colour)
        if self.reply is not None and self.reply.text and not self.reply.ended:  # words being written
            from rich.console import Group

            return Group(Text.assemble(("Coach: ", "bold cyan"), self.reply.text), line)
        return line

    def reply_event(self, event: Any) -> None:
        """``on_reply_stream``: re-render the words written so far (a retraction empties them; the final
        reply is printed above the live line by ``on_coach_reply``)."""
        if self.reply is None:
            from launcher.pipeline._reply_view import ReplyText

            self.reply = ReplyText()
        self.reply(event)
        self.refresh()

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print above the live line (or plainly)."""
        self.console.print(*objects, **kwargs)
        self.console.file.flush()

    def update(self, status: Any) -> None:
        self.states[status.agent] = status
        if self.live is not None:
            self.live.update(self._render())
        elif status.status in _DONE and status.agent not in self._printed and status.status != "skipped":
            self._printed.add(status.agent)
            took = "" if status.finished_s is None else f" at {status.finished_s:.1f}s"
            detail = f" ({status.error})" if status.error and status.status != "ok" else ""
            self.print(f"  · {status.agent}: {status.status}{took}{detail}", markup=False)

    def refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._render())


class _LineReader:
    """Reads stdin lines in a daemon thread (a blocked read never holds up the exit) and hands them to
    the event loop; None means end of input."""

    def __init__(self) -> None:
        import anyio

        self._send, self._recv = anyio.create_memory_object_stream[str | None](16)
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._run, name="coach-chat-stdin", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                line = sys.stdin.readline()
            except (OSError, ValueError):
                line = ""
            item = line.rstrip("\r\n") if line else None
            try:
                self._loop.call_soon_threadsafe(self._send.send_nowait, item)
            except RuntimeError:  # the loop is closed: the chat is over
                return
            if item is None:
                return

    async def read(self) -> str | None:
        return await self._recv.receive()


def _problems_text(error: Any) -> str:
    problems = getattr(error, "problems", None)
    if not problems:
        return f"  {error}"
    return "\n".join(f"  {p}" for p in problems)


async def _watch_agents(
    registry: Any, console: Any, stop: Any, on_reload: Callable[[], Any] | None = None
) -> None:
    """Run the registry's watcher and report every reload attempt (valid or not) on the console;
    ``on_reload()`` is called after each valid reload."""
    import anyio

    async def report() -> None:
        seen_version, seen_error = registry.version, registry.last_error
        while True:
            await registry.next_change().wait()
            if registry.last_error is not None and registry.last_error is not seen_error:
                console.print(
                    f"[bold red]agents:[/bold red] the edited agent files are invalid; still using version "
                    f"{registry.version}. Fix:\n" + _problems_text(registry.last_error),
                    highlight=False,
                )
            elif registry.version != seen_version:
                if on_reload is not None:
                    on_reload()  # the proxy's per-agent policies follow at once, not only at the next turn
                console.print(
                    f"[bold green]agents:[/bold green] reloaded agent files (version {registry.version}); "
                    "used from the next turn",
                    highlight=False,
                )
            console.file.flush()
            seen_version, seen_error = registry.version, registry.last_error

    async with anyio.create_task_group() as tg:
        tg.start_soon(report)
        await registry.watch(stop_event=stop)
        tg.cancel_scope.cancel()


def _warn_reuse_off(config: Any, proxy_url: str | None, mcp_url: str | None, err: Any) -> None:
    """On stderr, before the chat's screen: ``[agents] reuse_processes`` has no effect with a running proxy
    or MCP server (the runtime's own warning goes to chat.log, where nobody sees it at start)."""
    if config.agents.reuse_processes and (proxy_url or mcp_url):
        err.print(
            "warning: [agents] reuse_processes is off in this chat: it needs the in-process proxy and MCP "
            "server (drop --proxy-url/--mcp-url to reuse processes, or set reuse_processes = false)",
            markup=False,
        )


def _log_to_file(data_dir: Path) -> None:
    """Send log records (warnings and up; never user text) to ``<data dir>/logs/chat.log`` so they do
    not tear the chat's screen; problems the user must act on are printed by the chat itself."""
    import logging

    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(logs / "chat.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


def _show_first_reply(view: _StatusView, text: str, tier: int) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    if tier >= 3:
        view.print(Panel(escape(text), title="Crisis response", border_style="bold red", expand=False))
    elif tier == 2:
        view.print(Panel(escape(text), title="Support", border_style="yellow", expand=False))
    else:
        view.print("[bold cyan]Coach:[/bold cyan]", escape(text), highlight=False)  # model text is not markup


def _show_result(console: Any, result: Any) -> None:
    from rich.markup import escape

    if result.synthesis_source in ("crisis", "support") and result.synthesis:  # an agent raised the tier
        from rich.panel import Panel

        crisis = result.synthesis_source == "crisis"
        console.print(
            Panel(
                escape(result.synthesis),
                title="Crisis response" if crisis else "Support",
                border_style="bold red" if crisis else "yellow",
                expand=False,
            )
        )
    elif result.crisis_tier >= 3:
        console.print("[dim](crisis response only: no coaching content this turn)[/dim]")
    elif result.synthesis:
        label = "Synthesis"
        if result.degraded:
            label += " (degraded: missing " + (", ".join(result.missing) or "nothing") + ")"
        console.print(
            f"[bold magenta]{escape(label)}:[/bold magenta]", escape(result.synthesis), highlight=False
        )
    took = "" if result.synthesis_s is None else f"; synthesis after {result.synthesis_s:.1f}s"
    first = "" if result.coach_reply_s is None else f"first reply after {result.coach_reply_s:.1f}s"
    console.print(f"[dim]── turn {result.turn_id} done ({first}{took}) ──[/dim]", highlight=False)
    console.file.flush()


async def _read_line(console: Any, reader: Any, closed: list[Any], waiting: list[Any]) -> str | None:
    """The next line typed (the prompt shown on a terminal); None when the session ends: closed while
    idle (the wait is cancelled through ``waiting[0]``), end of input, or a quit command."""
    import anyio

    if console.is_terminal:
        console.print("[bold]you>[/bold] ", end="")
    line: str | None = None
    waiting[0] = anyio.CancelScope()
    if not closed:
        with waiting[0]:
            line = await reader.read()
    if closed or line is None or line.strip().lower() in QUIT_COMMANDS:
        return None
    return line


async def _chat_turn(
    tg: Any, supervisor: Any, screen: Any, console: Any, user: str, session: str, line: str
) -> tuple[bool, Any]:
    """Run one turn under the live status view: ``(go on, the TurnResult or None)``. A session closed by
    another process meanwhile ends the chat; an unusable store is reported and the chat goes on."""
    import anyio
    from rich.markup import escape

    from blackboard import BlackboardError, InvalidValueError, SessionClosedError

    view = _StatusView(console, time.monotonic())
    with view:
        tick = anyio.Event()

        async def ticker() -> None:
            while not tick.is_set():
                view.refresh()
                await anyio.sleep(0.25)

        def first_reply(text: str) -> None:
            _show_first_reply(view, text, screen.last_tier)

        tg.start_soon(ticker)
        try:
            result = await supervisor.run_turn(
                user,
                session,
                line,
                on_coach_reply=first_reply,
                on_status=view.update,
                on_reply_stream=view.reply_event if view.live is not None else None,
            )
        except SessionClosedError as exc:  # closed by another process meanwhile
            console.print(f"error: {exc}", markup=False, highlight=False)
            return False, None
        except InvalidValueError as exc:  # the line itself (not UTF-8, a NUL): nothing ran
            result = None
            console.print(f"error: this line was not sent: {exc}", markup=False, highlight=False)
        except BlackboardError as exc:  # the store itself is unusable; agents' failures never raise
            result = None
            console.print(
                f"[bold red]error:[/bold red] this turn could not run ({exc.code}: "
                f"{escape(str(exc))}); nothing stored was lost. Check the data directory, "
                "then type again.",
                highlight=False,
            )
        finally:
            tick.set()
    return True, result


async def _chat(
    config: Any, user: str, session: str, console: Any, urls: tuple[str | None, str | None]
) -> int:
    import anyio
    import anyio.to_thread
    from rich.markup import escape

    from blackboard import SessionClosedError
    from launcher.errors import LauncherError, SessionError
    from launcher.pipeline._data_dir import prepare_data_dir
    from launcher.pipeline._runtime import coach_runtime
    from launcher.pipeline._screen import SafetyScreen
    from launcher.pipeline.sessions import IdleSessions, close_session, idle_check_interval
    from launcher.pipeline.supervisor import Supervisor

    _log_to_file(prepare_data_dir(config.data.dir))
    async with coach_runtime(config, proxy_url=urls[0], mcp_url=urls[1]) as rt:
        try:  # refused before any agent process starts
            await anyio.to_thread.run_sync(rt.board.check_session_open, user, session)
        except SessionClosedError as exc:
            raise LauncherError(str(exc), code=exc.code) from None
        screen = _RecordingScreen(SafetyScreen(config.safety))
        supervisor = Supervisor(
            rt.board,
            rt.runner,
            rt.current_agents,
            screen=screen,
            directory=rt.supervisor.directory,
            settings=rt.supervisor.settings,
        )
        reader = _READER()
        stop = anyio.Event()
        closed: list[Any] = []  # the close result once the session was closed while idle
        waiting = [anyio.CancelScope()]  # the scope of the current wait for a line

        async def idle_close(u: str, s: str) -> None:
            closed.append(await close_session(rt.board, u, s, runner=rt.runner))
            waiting[0].cancel()

        async with anyio.create_task_group() as tg:
            if config.agents.watch:
                tg.start_soon(_watch_agents, rt.registry, console, stop, rt.current_agents)
            idle = None
            if config.agents.idle_close_s > 0:
                idle = IdleSessions(idle_close, config.agents.idle_close_s, clock=_CLOCK)
                idle.touch(user, session)
                tg.start_soon(idle.run, idle_check_interval(config.agents.idle_close_s))
            # the session's agent processes start while the user types (the first turn skips start-up)
            tg.start_soon(supervisor.prewarm, user, session)
            console.print(
                f"[bold]coach chat[/bold] user [bold]{user}[/bold], session [bold]{session}[/bold] "
                f"(agents v{rt.registry.version} from {escape(str(rt.registry.directory))}; /quit or Ctrl-D ends "
                "the session)",
                highlight=False,
            )
            console.file.flush()
            while True:
                line = await _read_line(console, reader, closed, waiting)
                if line is None:
                    break
                if not line.strip():
                    continue
                if idle is not None:
                    idle.forget(user, session)  # not idle while a turn runs
                go_on, result = await _chat_turn(tg, supervisor, screen, console, user, session, line)
                if not go_on:
                    break
                if idle is not None:
                    idle.touch(user, session)
                if result is not None:
                    _show_result(console, result)
            stop.set()
            tg.cancel_scope.cancel()
        if closed:
            res = closed[0]
            console.print(
                f"session {session} was idle for {config.agents.idle_close_s:g}s and was closed "
                f"({plural(res.turns, 'turn')}): merged {', '.join(res.merged) or 'nothing'}; profile "
                f"v{res.profile_version}",
                highlight=False,
                markup=False,
            )
            return 0
        console.print("[dim]closing the session (compacting it into the profile)…[/dim]")
        console.file.flush()
        try:
            res = await close_session(rt.board, user, session, runner=rt.runner)
        except SessionError as exc:
            if exc.code != "no_such_session":
                raise
            console.print(f"session {session} had no turns: nothing to close", highlight=False, markup=False)
            return 0
        merged = ", ".join(res.merged) or "nothing"
        console.print(
            f"session {session} closed ({plural(res.turns, 'turn')}): merged {merged}; profile v{res.profile_version}",
            highlight=False,
        )
    return 0


_READER = _LineReader  # the terminal boundary (tests replace it)
_CLOCK = time.monotonic  # the idle clock (tests replace it)


def chat_cmd(
    user: Annotated[str, typer.Option("--user", "-u", help="user id ([A-Za-z0-9_.-], 1-64 chars)")],
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="session id (default: a new chat-YYYYMMDD-HHMMSS)")
    ] = None,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
    proxy_url: Annotated[str | None, typer.Option("--proxy-url", help="use a running proxy")] = None,
    mcp_url: Annotated[str | None, typer.Option("--mcp-url", help="use a running MCP HTTP server")] = None,
    broker: Annotated[
        str | None,
        typer.Option(
            "--broker",
            help="publish each turn as a job for `coach worker` and follow it (RabbitMQ URL; default "
            "\\[broker] url; needs \\[data] url)",
        ),
    ] = None,
) -> None:
    """Chat with the coach: the Coach's reply at once, the synthesis appended later.

    With --broker (or \\[broker] url) every turn runs on a `coach worker` (docs/scale-out.md); a line
    that could not be sent is kept and sent again with the next one (or /retry)."""
    from rich.console import Console

    from blackboard import BlackboardError
    from launcher.agents import AgentSpecError
    from launcher.cli._common import (
        Terminated,
        broker_url_or_exit,
        check_ids,
        check_service_urls,
        check_session_open,
        fail,
        load_config_or_exit,
        run_async,
        store_error,
    )
    from launcher.errors import LauncherError

    session = session or default_session_id()
    check_ids(user=user, session=session)
    config = load_config_or_exit(config_path)
    broker_url = broker_url_or_exit(broker, config)
    if broker_url and (proxy_url or mcp_url):
        fail(
            "error: --proxy-url/--mcp-url are for turns run in this process; with --broker (or [broker] url) "
            "the turns run on `coach worker`, which has its own proxy and MCP server: drop one of them"
        )
    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    err = Console(file=sys.stderr, highlight=False, soft_wrap=True)
    _warn_reuse_off(config, proxy_url, mcp_url, err)
    check_session_open(config, user, session)  # before any process starts
    check_service_urls(proxy_url, mcp_url)
    try:
        if broker_url:
            from launcher.cli._chat_broker import run_chat_via_broker
            from launcher.pipeline._data_dir import prepare_data_dir

            _log_to_file(prepare_data_dir(config.data.dir))
            code = run_chat_via_broker(config, broker_url, user, session, console, err)
        else:
            code = run_async(_chat, config, user, session, console, (proxy_url, mcp_url), sigterm=True)
    except (KeyboardInterrupt, Terminated) as exc:
        how = "interrupted" if isinstance(exc, KeyboardInterrupt) else "terminated (SIGTERM)"
        err.print(
            f"{how}: agent processes stopped; session {session} is still open "
            f"(close it with: coach session close --user {user} --session {session})"
        )
        raise typer.Exit(130 if isinstance(exc, KeyboardInterrupt) else 143) from None
    except (AgentSpecError, LauncherError) as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(2) from None
    except BlackboardError as exc:  # the store is unusable at start (PostgreSQL unreachable, ...)
        store_error(exc, config.data.dir)
    raise typer.Exit(code)
