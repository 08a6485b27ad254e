"""How many warm sessions fit in a node's memory (docs/scale-out.md, "Capacity per node").

The per-session figures are the RSS of six warm ``claude`` processes measured with ``bench/warm_memory.py``
(``claude`` 2.1.332, claude-agent-sdk 0.2.189): new processes, and the plateau of processes reset for
other sessions (``[agents] reuse_processes``; a reset process keeps its heap).
"""

from __future__ import annotations

__all__ = ["REUSED_SESSION_RSS_MIB", "SESSION_RSS_MIB", "mem_available_mib", "sessions_that_fit"]

SESSION_RSS_MIB = 1403
"""RSS of one warm session's six new processes (``bench/warm_memory.py --sessions 2``)."""
REUSED_SESSION_RSS_MIB = 1623
"""RSS of six processes after 9 resets, where it flattens (``bench/warm_memory.py --reuse 10 --chain``)."""
RESERVE_MIB = 1024
"""Memory left for the worker's own Python process, the OS and the page cache."""


def sessions_that_fit(mem_mib: int, *, reuse: bool) -> int:
    """Warm sessions whose processes fit in ``mem_mib`` MiB (RSS, ``RESERVE_MIB`` kept free); >= 0."""
    per = REUSED_SESSION_RSS_MIB if reuse else SESSION_RSS_MIB
    return max(0, (mem_mib - RESERVE_MIB) // per)


def mem_available_mib() -> int | None:
    """``MemAvailable`` of /proc/meminfo in MiB; None where there is none (not Linux, unreadable)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
