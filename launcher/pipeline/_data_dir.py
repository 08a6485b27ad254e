"""The data directory and the blackboard in it, opened for a command: an unusable folder (a file, no
permission) or a corrupt store is a :class:`~launcher.errors.DataDirError` with a plain message saying
what to fix, never a traceback. Used by ``coach run`` / ``session close`` and by
:func:`launcher.pipeline._runtime.coach_runtime` (chat, replay, demo, MCP session mode).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from blackboard import Blackboard, StoreUnavailableError
from launcher.errors import DataDirError

__all__ = ["LOW_SPACE_BYTES", "disk_full", "open_board", "prepare_data_dir"]

#: Free bytes below which a store failure is explained as a full disk: SQLite needs room for the 32 KiB
#: ``-shm`` index even to open the blackboard and for the WAL frames of every write (SQLITE_FULL or
#: "disk I/O error" when it cannot grow them); a turn writes about 50-100 KiB.
LOW_SPACE_BYTES = 1 << 20


def disk_full(data_dir: str | os.PathLike[str]) -> str | None:
    """When the file system holding ``data_dir`` (or its nearest existing parent) has less than
    ``LOW_SPACE_BYTES`` free, the plain explanation with the fix; else (or when it cannot be measured)
    None. Callers use it only after a store failure: SQLite then says "disk I/O error" or "database or
    disk is full", and the store's advice to move the database aside would be wrong for an intact file."""
    directory = Path(data_dir)
    probe = next((p for p in (directory, *directory.parents) if p.exists()), None)
    if probe is None:
        return None
    try:
        st = os.statvfs(probe)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free >= LOW_SPACE_BYTES:
        return None
    return (
        f"the disk holding the data directory {directory} is full ({free // 1024} KiB free), so SQLite cannot "
        "write the blackboard or its -wal/-shm files; what is already stored is intact (do not move the "
        f"database aside). Fix: free space there (df -h {probe}) or point COACH_DATA_DIR or [data] dir at a "
        "folder on another disk, then run the command again"
    )


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
        DataDirError: code ``data_dir_unusable`` (see above), ``disk_full`` (the store cannot be opened
            and its disk has less than ``LOW_SPACE_BYTES`` free: ``disk_full``'s message) or
            ``store_unavailable`` (the store file is corrupt or cannot be opened; the message names the
            file and the fix, the file is left).
    """
    directory = prepare_data_dir(data_dir)
    try:
        return Blackboard(directory, **kw)
    except StoreUnavailableError as exc:
        if (full := disk_full(directory)) is not None:
            # the store's own message says to move the (intact) database aside: not shown here
            raise DataDirError(full, code="disk_full", retryable=True) from None
        raise DataDirError(f"{exc}", code=exc.code, retryable=exc.retryable) from None
