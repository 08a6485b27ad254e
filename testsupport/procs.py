"""Processes found by their environment (Linux ``/proc``): how tests and benchmarks find, and stop, the
``claude`` processes a run left behind (each run gives its agents a private config dir or HOME, whose
path is the marker)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

__all__ = ["kill_processes_with", "processes_with"]


def processes_with(fragment: str | Path) -> list[int]:
    """Pids of live processes whose environment contains ``fragment`` (a process that ends while it is
    read, or whose environment is not readable, is left out)."""
    needle = str(fragment).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def kill_processes_with(fragment: str | Path) -> list[int]:
    """SIGKILL every process :func:`processes_with` finds (e.g. the agents a SIGKILLed worker left
    reparented); returns the pids signalled."""
    killed = []
    for pid in processes_with(fragment):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
        killed.append(pid)
    return killed
