"""``coach mcp``: the blackboard tools of :mod:`mcp_server` (stdio, or streamable HTTP with ``--http``) with
the whole ``coach.toml``: the file found and checked by :mod:`launcher.config`'s one loader, the
backend of ``[data] url`` / ``schema`` (``COACH_DATABASE_URL`` winning), and the Claude Code session mode
(``COACH_MCP_SESSION=1``, :mod:`launcher.claude_code.session`). ``mcp_server`` itself imports nothing
from ``launcher``: this module passes it these decisions (:class:`mcp_server.cli.ConfigHooks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_server.cli import ConfigHooks, mcp_command
from mcp_server.errors import McpConfigError

__all__ = ["HOOKS", "mcp_cmd"]


def _default_config(path: Path | None) -> Path | None:
    """The config file as every ``coach`` command finds it (``launcher.config.find_config_file``:
    ``--config``, else ``$COACH_CONFIG``, else ``./coach.toml``, else None).

    Raises McpConfigError: ``--config`` or ``$COACH_CONFIG`` names no file.
    """
    from launcher.config import ConfigError, find_config_file

    try:
        return find_config_file(path)
    except ConfigError as exc:
        raise McpConfigError(str(exc)) from None


def _check_whole_file(path: Path) -> None:
    """The rest of the file by the one coach.toml loader (``launcher.config.load_config``), without
    environment overrides: an unknown key (``[data] dirr``) or an invalid value in any section is an
    error here too, as in every other command."""
    from launcher.config import ConfigError, load_config

    try:
        load_config(path, env={})
    except ConfigError as exc:
        raise McpConfigError(str(exc)) from None


def _board_options(path: Path | None) -> Mapping[str, Any]:
    """The backend of the blackboard as every ``coach`` command picks it: ``[data] url`` / ``schema``,
    ``COACH_DATABASE_URL`` winning (``launcher.config.DataConfig.board_options``). Raises McpConfigError."""
    from launcher.config import ConfigError, load_config

    try:
        return load_config(path).data.board_options()
    except ConfigError as exc:
        raise McpConfigError(str(exc)) from None


def _session_mode(
    *, data_dir: str | None, config: Path | None, user: str | None, session: str | None
) -> bool:
    """Serve the Claude Code session mode (stdio) when ``COACH_MCP_SESSION`` asks for it; else False."""
    from launcher.claude_code.session import run_session, session_mode_requested

    if not session_mode_requested():
        return False
    from launcher.scaleout.frontend import BrokerFrontend

    run_session(data_dir=data_dir, config=config, user=user, session=session, broker_frontend=BrokerFrontend)
    return True


#: The decisions ``coach mcp`` passes to the server (see the module docstring).
HOOKS = ConfigHooks(
    find_config=_default_config,
    check_file=_check_whole_file,
    board_options=_board_options,
    session=_session_mode,
)

mcp_cmd = mcp_command(HOOKS)
