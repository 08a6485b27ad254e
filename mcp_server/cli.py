"""``coach mcp``: serve the blackboard tools over stdio (default) or streamable HTTP (``--http``).

stdio (one server per Claude Code process; the scope is fixed at start)::

    coach mcp --data-dir .coachboard/data --user u1 --session s1 --turn t000003 --agent persona
    # or COACH_USER / COACH_SESSION / COACH_TURN / COACH_AGENT / COACH_DATA_DIR in the environment

HTTP (one shared server; each request's x-coach-* headers fix its scope and must carry
x-coach-scope-token = HMAC-SHA256 of the scope under the server's secret, see ``scope_token``: the
secret is COACH_MCP_SECRET, else ``<data dir>/mcp_secret``, created with mode 0600 if missing, which
clients in the same data dir read, see ``mcp_server.mcp_secret``)::

    coach mcp --http --port 8765 --data-dir .coachboard/data

``coach mcp`` is :func:`mcp_command` with the hooks of ``launcher.cli.mcp`` (the whole ``coach.toml``
checked by its one loader, its ``[data] url``, the Claude Code session mode); ``python -m mcp_server``
is ``mcp_command()`` with the defaults: the blackboard tools alone, reading only ``[mcp]`` and
``[data] dir`` of ``--config``. This package imports nothing above ``blackboard`` (docs/layout.md).
"""

from __future__ import annotations

import logging
import os
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from mcp_server.config import McpConfig
from mcp_server.errors import McpConfigError, McpServerError

__all__ = [
    "DEFAULT_DATA_DIR",
    "READY_PREFIX",
    "SECRET_ENV",
    "ConfigHooks",
    "load_config",
    "mcp_cmd",
    "mcp_command",
    "resolve_data_dir",
    "run",
]

#: Data directory when neither --data-dir, COACH_DATA_DIR nor [data] dir is given.
DEFAULT_DATA_DIR = ".coachboard/data"


def _given(path: Path | None) -> Path | None:
    return path


def _no_check(path: Path) -> None:
    return None


def _no_options(path: Path | None) -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class ConfigHooks:
    """What the application embedding the server decides (``launcher.cli.mcp`` for ``coach mcp``); the
    defaults serve the blackboard tools alone. Each hook raises :class:`McpConfigError` (or a subclass of
    :class:`McpServerError`) with the message to print.

    Attributes:
        find_config: ``--config`` (or None) to the file to read (``coach mcp``: else ``$COACH_CONFIG``,
            else ``./coach.toml``; default: ``--config`` only).
        check_file: checks the rest of the file (``coach mcp``: every section by the coach.toml loader).
        board_options: keyword arguments of ``Blackboard`` that pick the backend for ``--config``
            (``coach mcp``: ``[data] url`` / ``schema``, ``COACH_DATABASE_URL`` winning; default SQLite).
        session: ``session(data_dir=, config=, user=, session=)`` serves another stdio mode and returns
            True, or returns False to serve the plain tools (``coach mcp``: the Claude Code session mode
            when ``COACH_MCP_SESSION`` is set); None: no other mode.
    """

    find_config: Callable[[Path | None], Path | None] = _given
    check_file: Callable[[Path], None] = _no_check
    board_options: Callable[[Path | None], Mapping[str, Any]] = _no_options
    session: Callable[..., bool] | None = None


def load_config(
    path: Path | None, check_file: Callable[[Path], None] = _no_check
) -> tuple[McpConfig, str | None]:
    """Read ``[mcp]`` and ``[data] dir`` from a ``coach.toml``; defaults when ``path`` is None.

    Raises:
        McpConfigError: unreadable file, invalid TOML, invalid ``[mcp]`` values, or an unknown key or
            invalid value in another section (named; the rest of the file is checked by ``check_file``).
    """
    if path is None:
        return McpConfig(), None
    try:
        doc: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise McpConfigError(
            f"cannot read config {path}: {type(exc).__name__}: {exc}. Fix: pass a readable UTF-8 TOML file"
        ) from exc
    try:
        cfg = McpConfig.model_validate(doc.get("mcp", {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'mcp'}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors()
        )
        raise McpConfigError(f"invalid [mcp] section in {path}: {problems}") from exc
    check_file(path)
    data = doc.get("data", {})
    return cfg, (str(data["dir"]) if isinstance(data, dict) and data.get("dir") else None)


def resolve_data_dir(cli_value: str | None, config_value: str | None) -> Path:
    """--data-dir wins, then COACH_DATA_DIR, then ``[data] dir``, then :data:`DEFAULT_DATA_DIR`; a leading
    ``~`` is the home folder, as in ``coach.toml``."""
    path = Path(cli_value or os.environ.get("COACH_DATA_DIR") or config_value or DEFAULT_DATA_DIR)
    try:
        return path.expanduser()
    except RuntimeError:  # no home folder known
        return path


def mcp_command(hooks: ConfigHooks | None = None) -> Callable[..., None]:
    """The ``mcp`` typer command serving with ``hooks`` (:class:`ConfigHooks`; the defaults when None)."""
    hooks = hooks or ConfigHooks()

    def mcp_cmd(
        http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
        host: Annotated[str | None, typer.Option(help="HTTP bind address (default 127.0.0.1).")] = None,
        port: Annotated[int | None, typer.Option(help="HTTP port (default 8765; 0 = any free port).")] = None,
        path: Annotated[str | None, typer.Option(help="HTTP endpoint path (default /mcp).")] = None,
        data_dir: Annotated[
            str | None, typer.Option(help="Blackboard data directory (env COACH_DATA_DIR).")
        ] = None,
        config: Annotated[
            Path | None,
            typer.Option(
                help="coach.toml to read the \\[mcp] and \\[data] sections from (default "
                "$COACH_CONFIG, else ./coach.toml if present)."
            ),
        ] = None,
        user: Annotated[str | None, typer.Option(help="stdio scope: user id (env COACH_USER).")] = None,
        session: Annotated[
            str | None, typer.Option(help="stdio scope: session id (env COACH_SESSION).")
        ] = None,
        turn: Annotated[str | None, typer.Option(help="stdio scope: turn id (env COACH_TURN).")] = None,
        agent: Annotated[str | None, typer.Option(help="stdio scope: agent name (env COACH_AGENT).")] = None,
        log_level: Annotated[
            str, typer.Option(help="Log level (stderr). INFO logs no user text.")
        ] = "WARNING",
    ) -> None:
        """Serve the coachboard blackboard as MCP tools (stdio, or streamable HTTP with --http)."""
        if log_level.upper() not in _LOG_LEVELS:
            typer.echo(
                f"coach mcp: --log-level {log_level!r} is not a log level. Fix: one of {', '.join(_LOG_LEVELS)}",
                err=True,
            )
            raise typer.Exit(code=2)
        logging.basicConfig(
            level=log_level.upper(),
            stream=sys.stderr,
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
        try:
            run(
                http=http,
                host=host,
                port=port,
                path=path,
                data_dir=data_dir,
                config=config,
                user=user,
                session=session,
                turn=turn,
                agent=agent,
                hooks=hooks,
            )
        except McpServerError as exc:
            typer.echo(f"coach mcp: {exc.message}", err=True)
            # exit codes as README: 1 a port is taken (as coach proxy / coach serve), 2 bad input
            raise typer.Exit(code=1 if getattr(exc, "code", None) == "port_in_use" else 2) from None

    return mcp_cmd


_LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


def _option_problems(exc: ValidationError) -> str:
    """``--port: Input should be less than or equal to 65535 (got 99999)``, one per problem, joined."""
    parts = []
    for err in exc.errors():
        field = str(err["loc"][-1]) if err["loc"] else "option"
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"--{field.replace('_', '-')}: {msg} (got {err.get('input')!r})")
    return "; ".join(parts)


READY_PREFIX = "coach mcp: serving streamable HTTP at "
from mcp_server._secret import SECRET_ENV  # noqa: E402  (re-exported: the secret's environment variable)


def _announce(url: str) -> None:
    # One line on stderr once the socket listens; tests and the supervisor wait for it.
    print(READY_PREFIX + url, file=sys.stderr, flush=True)


def run(
    *,
    http: bool,
    host: str | None = None,
    port: int | None = None,
    path: str | None = None,
    data_dir: str | None = None,
    config: Path | None = None,
    user: str | None = None,
    session: str | None = None,
    turn: str | None = None,
    agent: str | None = None,
    hooks: ConfigHooks | None = None,
) -> None:
    """Build the blackboard and the server, then serve (blocking). Raises McpServerError subclasses.

    ``hooks`` (:class:`ConfigHooks`) find and check the configuration file and pick the backend."""
    from blackboard import Blackboard, BlackboardError
    from mcp_server._scope import FixedScope, HeaderScope, ScopeSource, scope_from_env
    from mcp_server._secret import mcp_secret
    from mcp_server._server import build_server, serve_http, serve_stdio

    hooks = hooks or ConfigHooks()
    if (
        not http
        and hooks.session is not None
        and hooks.session(data_dir=data_dir, config=config, user=user, session=session)
    ):
        return
    cfg, cfg_data_dir = load_config(hooks.find_config(config), hooks.check_file)
    overrides = {k: v for k, v in (("host", host), ("port", port), ("path", path)) if v is not None}
    if overrides:
        try:
            cfg = McpConfig.model_validate({**cfg.model_dump(), **overrides})
        except ValidationError as exc:
            raise McpConfigError(
                f"invalid option {_option_problems(exc)}. Fix: correct it (coach mcp --help)"
            ) from None
    scopes: ScopeSource
    if http:
        if any((user, session, turn, agent)):
            raise McpConfigError(
                "--user/--session/--turn/--agent are for stdio; over HTTP the scope comes from the "
                "x-coach-* headers of each request"
            )
    else:
        scopes = FixedScope(scope_from_env(user=user, session=session, turn=turn, agent=agent))
    directory = resolve_data_dir(data_dir, cfg_data_dir)
    if (directory / "blackboard.sqlite3").is_file() and not os.access(directory, os.W_OK | os.X_OK):
        raise McpConfigError(
            f"the data directory {directory} is read-only: the blackboard (SQLite, WAL mode) must create its "
            "-wal/-shm files beside blackboard.sqlite3 even to read it; the database was not touched. Fix: make the "
            "folder writable, or copy it to a writable place and pass --data-dir / COACH_DATA_DIR"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        board = Blackboard(directory, **hooks.board_options(hooks.find_config(config)))
    except (OSError, BlackboardError) as exc:
        raise McpConfigError(
            f"cannot open the blackboard in {directory}: {type(exc).__name__}: {exc}"
        ) from exc
    if http:
        # Always signed: every request must carry x-coach-scope-token (COACH_MCP_SECRET, else the
        # data dir's mcp_secret file, created if missing).
        try:
            scopes = HeaderScope(secret=mcp_secret(directory))
        except McpConfigError:
            board.close()
            raise
    server = build_server(board, scopes, cfg)
    try:
        if http:
            serve_http(server, cfg, on_ready=_announce)
        else:
            serve_stdio(server)
    finally:
        close = getattr(board, "close", None)
        if callable(close):
            close()


#: ``python -m mcp_server``: the blackboard tools alone (:class:`ConfigHooks` defaults).
mcp_cmd = mcp_command()
