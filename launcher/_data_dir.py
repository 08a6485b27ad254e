"""The data directory and the blackboard in it, opened for a command: an unusable folder (a file, no
permission) or a corrupt store is a :class:`~launcher.errors.DataDirError` with a plain message saying
what to fix, never a traceback. Used by ``coach run`` / ``session close`` and by
:func:`launcher._runtime.coach_runtime` (chat, replay, demo, MCP session mode).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from blackboard import Blackboard, StoreUnavailableError
from launcher.errors import DataDirError

__all__ = ["open_board", "prepare_data_dir"]


def prepare_data_dir(data_dir: str | os.PathLike[str]) -> Path:
    """Create ``data_dir`` (and parents) if missing; returns it as a Path.

    Raises:
        DataDirError (code ``data_dir_unusable``): it is a file, is under a file, or is not writable.
    """
    directory = Path(data_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise DataDirError(
            f"the data directory {directory} cannot be used ({exc.strerror or exc}). Fix: point "
            "COACH_DATA_DIR or [data] dir at a writable folder",
            code="data_dir_unusable",
        ) from None
    return directory


def open_board(data_dir: str | os.PathLike[str], **kw: Any) -> Blackboard:
    """``prepare_data_dir`` then ``Blackboard(data_dir, **kw)``.

    Raises:
        DataDirError: code ``data_dir_unusable`` (see above) or ``store_unavailable`` (the store file
            is corrupt or cannot be opened; the message names the file and the fix, the file is left).
    """
    directory = prepare_data_dir(data_dir)
    try:
        return Blackboard(directory, **kw)
    except StoreUnavailableError as exc:
        raise DataDirError(f"{exc}", code=exc.code, retryable=exc.retryable) from None
