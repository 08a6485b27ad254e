"""Helpers shared by the embedded-model tests."""

from __future__ import annotations

import os
import select


def gone(pid: int, timeout_s: float = 10.0) -> bool:
    """True once process ``pid`` has exited (waits on a pidfd, up to ``timeout_s``)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
        return bool(readable)
    finally:
        os.close(fd)
