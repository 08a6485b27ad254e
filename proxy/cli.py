"""``coach proxy``: run the proxy with uvicorn. :func:`proxy_command` builds the command with the way the
config file is found (``launcher.cli.proxy`` passes coach.toml's; this package imports nothing from
``launcher``, docs/layout.md)."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer


def _given(path: Path | None) -> Path | None:
    return path


def proxy_command(find_config: Callable[[Path | None], Path | None] = _given) -> Callable[..., None]:
    """The ``proxy`` typer command; ``find_config(--config)`` is the file to read (None: no file) and
    raises ``proxy.errors.ConfigError`` with the message to print (default: ``--config`` only)."""

    def proxy_cmd(
        config: Annotated[
            Path | None,
            typer.Option(
                "--config",
                "-c",
                help="coach.toml (its \\[proxy] and \\[upstream] tables) or a proxy-only TOML file; default $COACH_CONFIG, "
                "else ./coach.toml if present.",
            ),
        ] = None,
        upstream: Annotated[
            str | None,
            typer.Option(
                help="One OpenAI-compatible upstream URL serving every model name "
                "(default: $COACH_UPSTREAM_URL when the config has no models)."
            ),
        ] = None,
        kind: Annotated[
            str, typer.Option(help="Upstream kind for --upstream: openai or anthropic.")
        ] = "openai",
        upstream_model: Annotated[str | None, typer.Option(help="Model name sent to --upstream.")] = None,
        host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
        port: Annotated[int | None, typer.Option(help="Port (default 8082).")] = None,
        api_key: Annotated[
            str | None, typer.Option(help="Require this API key (x-api-key or Bearer).")
        ] = None,
        log_level: Annotated[str, typer.Option(help="uvicorn/proxy log level.")] = "info",
    ) -> None:
        """Serve the Anthropic Messages API in front of vLLM / OpenAI-compatible or Anthropic upstreams."""
        import logging

        import uvicorn
        from pydantic import ValidationError

        from . import ModelPool, ProxyConfig, create_app, load_config
        from .errors import ConfigError

        if log_level.lower() not in _LOG_LEVELS:
            typer.echo(
                f"coach proxy: --log-level {log_level!r} is not a log level. Fix: one of {', '.join(_LOG_LEVELS)}",
                err=True,
            )
            raise typer.Exit(2)
        try:
            config = find_config(config)
            cfg = load_config(config) if config is not None else ProxyConfig()
            url = upstream or (os.environ.get("COACH_UPSTREAM_URL") if not cfg.models else None)
            updates: dict[str, Any] = {}
            if url:
                if kind not in ("openai", "anthropic"):
                    raise ConfigError(f"--kind must be openai or anthropic, got {kind!r}")
                pool = ModelPool(name="default", replicas=[url], kind=kind, upstream_model=upstream_model)  # type: ignore[arg-type]
                updates.update(models=[pool], default_model="default")
            for k, v in (("host", host), ("port", port), ("api_key", api_key)):
                if v is not None:
                    updates[k] = v
            if updates:
                cfg = ProxyConfig.model_validate({**cfg.model_dump(), **updates})
        except ValidationError as exc:
            typer.echo(f"coach proxy: {_options_problem(exc)}", err=True)
            raise typer.Exit(2) from None
        except (ConfigError, ValueError) as exc:
            typer.echo(f"coach proxy: {exc}", err=True)
            raise typer.Exit(2) from None
        if not cfg.models:
            typer.echo(
                "coach proxy: no upstream configured; pass --config FILE with [[proxy.models]], --upstream URL, "
                "or set COACH_UPSTREAM_URL",
                err=True,
            )
            raise typer.Exit(2)
        logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        sock = _listen(cfg.host, cfg.port)
        typer.echo(
            f"coach proxy: serving on http://{cfg.host}:{sock.getsockname()[1]} -> "
            + ", ".join(f"{p.name}={p.kind}:{'|'.join(p.replicas)}" for p in cfg.models)
        )
        # With the data directory's scope secret in COACH_MCP_SECRET (as coach run/chat --proxy-url read it), the
        # supervisors may post the turns of their warm agent processes (POST /coach/turns) for metering.
        app = create_app(cfg, turn_secret=os.environ.get("COACH_MCP_SECRET") or None)
        server = uvicorn.Server(uvicorn.Config(app, log_level=log_level.lower(), access_log=False))
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()

    return proxy_cmd


_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")

#: Which command-line option sets each ProxyConfig / ModelPool field (for error messages).
_OPTION_OF = {
    "port": "--port",
    "host": "--host",
    "api_key": "--api-key",
    "replicas": "--upstream",
    "upstream_model": "--upstream-model",
    "kind": "--kind",
}


def _options_problem(exc: Any) -> str:
    """One line per problem of a pydantic ``ValidationError`` raised by the command-line overrides,
    naming the option (``--port: Input should be less than or equal to 65535 (got 99999)``)."""
    parts = []
    for err in exc.errors():
        field = str(err["loc"][-1]) if err["loc"] else ""
        name = _OPTION_OF.get(field, field or "option")
        msg = str(err["msg"]).removeprefix("Value error, ")
        got = err.get("input")
        shown = "" if f"{got!r}" in msg or isinstance(got, dict | list) else f" (got {got!r})"
        parts.append(f"{name}: {msg}{shown}")
    return "; ".join(parts) + ". Fix: correct the option (coach proxy --help)"


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use exits 1 with a plain message naming it and the fix
    (uvicorn only logged "[Errno 98] error while attempting to bind")."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            fix = f"stop whatever uses port {port}, or pass another --port (--port 0 picks a free one)"
        else:  # not a port problem: an unknown host name or an address this machine does not have
            fix = "pass a --host this machine can bind, such as 127.0.0.1 or 0.0.0.0 ([proxy] host)"
        typer.echo(
            f"coach proxy: cannot listen on {host}:{port}: {exc.strerror or exc}. Fix: {fix}", err=True
        )
        raise typer.Exit(1) from None
    sock.listen(2048)
    return sock


#: The command with ``--config`` only (``coach proxy`` is ``launcher.cli.proxy.proxy_cmd``).
proxy_cmd = proxy_command()
