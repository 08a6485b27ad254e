"""The MCP HTTP server's scope-token secret: ``COACH_MCP_SECRET``, else ``<data dir>/mcp_secret``.

A long-running MCP HTTP server (``coach serve``, ``coach mcp --http``) always signs scopes: without
``COACH_MCP_SECRET`` it creates a random secret file in its data directory (mode 0600, created
atomically: written under a temporary name, then hard-linked into place, so a concurrent start or a
reader never sees a partial file; an existing file is reused). Clients of that server in the same data
directory (``coach run --mcp-url``) read the same file, so only local processes that can read the data
directory can mint ``x-coach-scope-token`` values; any other process that reaches the port is refused.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from mcp_server.errors import McpConfigError

__all__ = ["SECRET_ENV", "SECRET_FILE", "mcp_secret"]

#: Environment variable holding the secret (never a command-line option: argv is public).
SECRET_ENV = "COACH_MCP_SECRET"
#: The secret file's name inside the data directory.
SECRET_FILE = "mcp_secret"


def mcp_secret(data_dir: str | os.PathLike[str], *, create: bool = True) -> str | None:
    """The scope-token secret for the MCP HTTP server of ``data_dir``.

    ``COACH_MCP_SECRET`` when set; else the contents of ``<data_dir>/mcp_secret``; else, with
    ``create``, a new random 256-bit secret (hex) written there with mode 0600; else None (a client of
    a server without a secret file).

    Raises:
        McpConfigError: the file cannot be created or read, or is empty (the message names it and the fix).
    """
    env = os.environ.get(SECRET_ENV)
    if env:
        return env
    path = Path(data_dir) / SECRET_FILE
    try:
        if create and not path.exists():
            _create(path)
        if not path.exists():
            return None
        value = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(
            f"cannot use the MCP secret file {path}: {getattr(exc, 'strerror', None) or exc}. Fix: make the data "
            f"directory writable, or set {SECRET_ENV}"
        ) from None
    if not value:
        raise McpConfigError(
            f"the MCP secret file {path} is empty. Fix: delete it (a new one is created) or set {SECRET_ENV}"
        )
    return value


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(32) + "\n")
        with contextlib.suppress(FileExistsError):  # another process won: use its secret
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
