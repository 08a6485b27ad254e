"""Helpers shared by the ``coach`` subcommand modules (``launcher/cli_*.py``).

Each helper either returns a value or prints one plain ``error: ...`` line on stderr and raises
``typer.Exit(2)`` (bad input or configuration), so every command refuses bad input the same way before
any process starts. Heavy imports (config, blackboard, rich) happen inside the functions so that
building the ``coach`` command tree stays cheap.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer

__all__ = [
    "EXIT_BAD_INPUT",
    "ConfigOpt",
    "SessionOpt",
    "Terminated",
    "UserOpt",
    "agent_timeline",
    "check_data_dir",
    "check_ids",
    "check_service_urls",
    "check_session_open",
    "check_user",
    "fail",
    "load_config_or_exit",
    "plural",
    "quiet_cancelled_server_tasks",
    "read_only_data_dir",
    "run_async",
    "store_error",
]


#: The exit code of bad input, bad configuration, or an unusable data directory or store.
EXIT_BAD_INPUT = 2

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")]
UserOpt = Annotated[str, typer.Option("--user", "-u", help="user id ([A-Za-z0-9_.-], 1-64 chars)")]
SessionOpt = Annotated[str, typer.Option("--session", "-s", help="session id ([A-Za-z0-9_.-], 1-64 chars)")]


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``message`` (one plain line: ``error: <what is wrong>. Fix: ...``) on stderr and end the
    command with exit ``code`` (see the module docstring)."""
    typer.echo(message, err=True)
    raise typer.Exit(code)


def broker_url_or_exit(flag: str | None, config: Any) -> str | None:
    """The RabbitMQ URL a command uses: ``--broker`` when given (checked here: ``[broker] url`` and
    ``COACH_BROKER_URL`` were checked with the configuration), else ``[broker] url``; None for neither.
    A ``--broker`` that is not an AMQP URL exits 2 with what is wrong and the form to use."""
    if not flag:
        return cast(str | None, config.broker.url)
    from launcher.config import check_amqp_url

    try:
        return check_amqp_url(flag)
    except ValueError as exc:
        fail(f"error: --broker: {exc}")


def check_data_dir(config: Any) -> None:
    """Refuse a data directory that cannot hold the blackboard before anything starts (exit 2)."""
    from launcher.errors import DataDirError
    from launcher.pipeline._data_dir import prepare_data_dir

    try:
        prepare_data_dir(config.data.dir)
    except DataDirError as exc:
        fail(f"error: {exc}")


def load_config_or_exit(config_path: Path | None) -> Any:
    """``launcher.config.load_config(config_path)`` (``None`` = ``./coach.toml`` plus env overrides).

    Returns the ``CoachConfig``. On ``ConfigError`` prints ``error: <what is wrong and how to fix it>`` on
    stderr and raises ``typer.Exit(2)``.
    """
    from launcher.config import ConfigError, load_config

    try:
        return load_config(config_path)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def check_ids(user: str, session: str) -> None:
    """Refuse a user or session id that is not a valid blackboard key part ([A-Za-z0-9_.-], 1-64 chars,
    not ``.``/``..``): prints ``error: --user/--session: ...`` on stderr and raises ``typer.Exit(2)``."""
    from blackboard import InvalidKeyError, session_key

    try:
        session_key(user, session)
    except InvalidKeyError as exc:
        typer.echo(f"error: --user/--session: {exc}", err=True)
        raise typer.Exit(2) from None


def check_user(user: str) -> None:
    """Refuse a user id that is not a valid blackboard key part: prints ``error: --user: ...`` on stderr
    and raises ``typer.Exit(2)``."""
    from blackboard import InvalidKeyError, profile_key

    try:
        profile_key(user)
    except InvalidKeyError as exc:
        typer.echo(f"error: --user: {exc}", err=True)
        raise typer.Exit(2) from None


def check_service_urls(proxy_url: str | None, mcp_url: str | None, *, connect_timeout_s: float = 3.0) -> None:
    """Refuse a ``--proxy-url`` / ``--mcp-url`` that is not an ``http(s)://host[:port]`` URL, or where
    nothing accepts a TCP connection within ``connect_timeout_s`` seconds, before any agent starts:
    prints ``error: --proxy-url URL: ...`` (with the fix: start ``coach serve`` or drop the option) on
    stderr and raises ``typer.Exit(2)``. Without the check every agent failed ("Invalid URL", HTTP 529)
    and the turn ended with fallback texts and exit 0."""
    import socket
    from urllib.parse import urlsplit

    for option, url in (("--proxy-url", proxy_url), ("--mcp-url", mcp_url)):
        if url is None:
            continue
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            parts, port = None, 0
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            typer.echo(
                f"error: {option} {url!r} is not an http(s) URL. Fix: pass e.g. "
                f"{'http://127.0.0.1:8082' if option == '--proxy-url' else 'http://127.0.0.1:8765/mcp'} "
                "(what `coach serve` prints), or omit it to run one in-process",
                err=True,
            )
            raise typer.Exit(2)
        try:
            socket.create_connection((parts.hostname, port), timeout=connect_timeout_s).close()
        except OSError as exc:
            typer.echo(
                f"error: {option} {url}: nothing answers there ({exc.strerror or type(exc).__name__}). "
                "Fix: start `coach serve` (or the server) first, or omit the option to run one in-process",
                err=True,
            )
            raise typer.Exit(2) from None


def read_only_data_dir(directory: Path) -> str | None:
    """When ``directory`` holds a blackboard but cannot be written (a read-only mount, no permission),
    the plain explanation (SQLite in WAL mode creates ``-wal``/``-shm`` files beside the database even
    to read it, so the store reported "not a usable blackboard database ... move it aside", which is
    wrong advice for an intact database); else None."""
    import os

    if (directory / "blackboard.sqlite3").is_file() and not os.access(directory, os.W_OK | os.X_OK):
        return (
            f"the data directory {directory} is read-only: the blackboard (SQLite, WAL mode) must create its "
            "-wal/-shm files beside blackboard.sqlite3 even to read it; the database was not touched. Fix: "
            "make the folder writable, or copy it to a writable place and point COACH_DATA_DIR there"
        )
    return None


def store_error(exc: Exception, data_dir: str | Path | None = None) -> NoReturn:
    """Print ``error (<code>): <exc>`` on stderr (``code`` is the error's ``code`` field, else its class
    name) and raise ``typer.Exit(2)``: the data directory or its store is unusable. With ``data_dir``,
    a store error on a full disk (``launcher.pipeline._data_dir.disk_full``) is printed as ``error (disk_full):
    <why and the fix> (<exc>)``: SQLite's own words ("disk I/O error", "database or disk is full") gave
    no fix, or the wrong one (move the database aside)."""
    from launcher.pipeline._data_dir import disk_full

    code = getattr(exc, "code", type(exc).__name__)
    full = disk_full(data_dir) if data_dir is not None and code != "disk_full" else None
    if full is not None:
        typer.echo(f"error (disk_full): {full} ({exc})", err=True)
    else:
        typer.echo(f"error ({code}): {exc}", err=True)
    raise typer.Exit(2) from None


def check_session_open(config: Any, user: str, session: str) -> None:
    """Refuse a closed session before anything starts: ``SessionClosedError`` prints ``error: ...`` and
    raises ``typer.Exit(2)``; an unusable data dir or store goes through ``store_error`` (exit 2).
    ``Blackboard.begin_turn`` applies the same rule (``check_session_open``) to a session closed
    meanwhile."""
    from blackboard import BlackboardError, SessionClosedError
    from launcher.errors import DataDirError
    from launcher.pipeline._data_dir import open_board

    try:
        board = open_board(config.data.dir, **config.data.board_options())
        try:
            board.check_session_open(user, session)
        finally:
            board.close()
    except SessionClosedError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except (DataDirError, BlackboardError) as exc:
        store_error(exc, config.data.dir)


class _DropCancelledServerTasks(logging.Filter):
    """Drops uvicorn's error records whose exception is a cancellation (``asyncio.CancelledError``).

    On Ctrl-C, or when a turn raises (a full disk), the event loop cancels the in-process servers'
    request and lifespan tasks as it closes;
    uvicorn logs each as "Exception in ASGI application" with a full traceback (three of them, about 200
    lines, above ``interrupted: ...`` when a model call was open); Starlette reports its cancelled
    lifespan task as ``lifespan.shutdown.failed`` whose message is the traceback text, ending in
    ``CancelledError``. A cancelled task is the command stopping, not an application error; every other
    record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        import asyncio

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, asyncio.CancelledError):
            return False
        text = str(record.msg).rstrip()
        return not ("Traceback (most recent call last)" in text and text.endswith("CancelledError"))


@contextlib.contextmanager
def quiet_cancelled_server_tasks() -> Iterator[None]:
    """While inside, uvicorn's reports of server tasks cancelled as the command stops are dropped
    (``_DropCancelledServerTasks``); other uvicorn errors are still logged. Used by ``run_async``
    (``coach run``/``chat``) and ``coach serve`` (SIGTERM or Ctrl-C with a request open)."""
    quiet = _DropCancelledServerTasks()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(quiet)
    try:
        yield
    finally:
        uvicorn_log.removeFilter(quiet)


class Terminated(Exception):
    """SIGTERM arrived while ``run_async(..., sigterm=True)`` ran: ``fn`` was cancelled (its async
    context managers ran: agent processes stopped, servers closed) and this is raised in its place."""


async def _cancel_on_sigterm(fn: Any, *args: Any) -> Any:
    import signal

    import anyio

    async def watch() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                raise Terminated("SIGTERM")

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        result = await fn(*args)
        tg.cancel_scope.cancel()
    return result


def run_async(fn: Any, *args: Any, sigterm: bool = False) -> Any:
    """``anyio.run(fn, *args)``, re-raising the one error inside an exception group (the runtime's task
    groups wrap what a turn raises, so it reached the user as a traceback instead of a plain error).
    A group holding several leaf errors is re-raised unchanged. While it runs, uvicorn's reports of
    server tasks cancelled by an interrupt are dropped (``_DropCancelledServerTasks``), so Ctrl-C prints
    the command's own line, not tracebacks. With ``sigterm``, SIGTERM (``timeout``, systemd, docker stop,
    kill) cancels ``fn`` like Ctrl-C and raises :class:`Terminated`; without it the process died at once
    (exit -15), printing nothing and running none of its clean-up."""
    import anyio

    try:
        with quiet_cancelled_server_tasks():
            if sigterm:
                return anyio.run(_cancel_on_sigterm, fn, *args)
            return anyio.run(fn, *args)
    except BaseExceptionGroup as group:
        leaves: list[BaseException] = []
        pending: list[BaseException] = [group]
        while pending:
            e = pending.pop()
            if isinstance(e, BaseExceptionGroup):
                pending.extend(e.exceptions)
            else:
                leaves.append(e)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _short_error(agent: str, error: str | None) -> str:
    text = (error or "").removeprefix(f"agent {agent}: ")
    return text[:100]


def agent_timeline(result: Any) -> Any:
    """A ``rich.table.Table`` of a ``TurnResult``: one row per agent with status, start, first token and
    end (seconds since the turn started), input/output tokens, whether the process was warm, and the
    first 100 characters of its error without the ``agent <name>: `` prefix the row already shows
    (escaped: model and error text is not rich markup). With 60 characters including that prefix and
    Claude Code's "ended with an error (success): API" wording, the cause (e.g. ``Connection refused``)
    was cut off."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"turn {result.turn_id}: agents (seconds since the turn started)")
    for col in ("agent", "status", "start", "1st tok", "end", "in", "out", "warm"):
        table.add_column(col, no_wrap=True, justify="left" if col in ("agent", "status", "warm") else "right")
    table.add_column("error", overflow="fold")

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for name, st in result.to_json()["agents"].items():
        colour = {"ok": "green", "skipped": "dim"}.get(st["status"], "red")
        table.add_row(
            name,
            f"[{colour}]{st['status']}[/{colour}]",
            fmt(st["started_s"]),
            fmt(st["first_token_s"]),
            fmt(st["finished_s"]),
            str(st["input_tokens"]),
            str(st["output_tokens"]),
            "yes" if st["warm"] else "no",
            escape(_short_error(name, st["error"])),
        )
    return table


def plural(n: int, noun: str) -> str:
    """``"1 turn"``, ``"2 turns"``: ``n`` and ``noun`` with an ``s`` unless ``n`` is 1 (English nouns whose
    plural is ``+s`` only)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
