"""``coach proxy``: :func:`proxy.cli.proxy_command` with the config file found as every ``coach`` command
finds it (``--config``, else ``$COACH_CONFIG``, else ``./coach.toml``; ``launcher.config.find_config_file``)."""

from __future__ import annotations

from pathlib import Path

from proxy.cli import proxy_command

__all__ = ["proxy_cmd"]


def _default_config(path: Path | None) -> Path | None:
    """``launcher.config.find_config_file(path)``. Raises proxy's ConfigError: ``--config`` or
    ``$COACH_CONFIG`` names no file."""
    from launcher.config import ConfigError as CoachConfigError
    from launcher.config import find_config_file
    from proxy.errors import ConfigError

    try:
        return find_config_file(path)
    except CoachConfigError as exc:
        raise ConfigError(str(exc)) from None


proxy_cmd = proxy_command(_default_config)
