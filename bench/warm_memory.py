"""Memory of warm sessions: RSS and PSS of each session's six warm ``claude`` processes, and how many warm
sessions fit in 24 GiB (docs/scale-out.md, "Capacity per node").

``python bench/warm_memory.py [--sessions 2]`` runs one turn in each of N sessions through the real stack
(in-process proxy and MCP server, real ``claude`` agents, the scripted upstream playing ``instant``), keeps
the processes warm, then reads ``/proc/<pid>/status`` (VmRSS) and ``/proc/<pid>/smaps_rollup`` (Pss: shared
pages, such as the ``claude`` binary's, counted once across processes) of every agent process, grouped by
session. ``--marker TEXT`` measures already-running agent processes instead (those whose environment
contains TEXT, e.g. a worker's data directory). The last line:
``warm_sessions=N procs_per_session=6 rss_mib_per_session=X pss_mib_per_session=X sessions_per_24gib_rss=N
sessions_per_24gib_pss=N``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

GIB24_MIB = 24 * 1024
_SESSION = re.compile(rb'"x-coach-session": "([^"]+)"')


def _kib(path: Path, field: str) -> int:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(marker: str) -> dict[str, list[tuple[int, int, int]]]:
    """``{session: [(pid, rss_kib, pss_kib), ...]}`` of the claude processes whose environment has ``marker``."""
    out: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if marker.encode() not in (d / "environ").read_bytes():
                continue
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if b"claude" not in cmd.split(b"\0", 1)[0]:
            continue
        m = _SESSION.search(cmd)
        session = m.group(1).decode() if m else "?"
        out[session].append((int(d.name), _kib(d / "status", "VmRSS"), _kib(d / "smaps_rollup", "Pss")))
    return dict(out)


def report(groups: dict[str, list[tuple[int, int, int]]]) -> int:
    full = {s: p for s, p in groups.items() if len(p) >= 6}
    for s, procs in sorted(groups.items()):
        rss = sum(r for _, r, _ in procs) / 1024
        pss = sum(p for _, _, p in procs) / 1024
        print(
            f"session {s}: {len(procs)} processes, RSS {rss:.0f} MiB, PSS {pss:.0f} MiB "
            f"(per process RSS {rss / max(1, len(procs)):.0f} MiB)"
        )
    if not full:
        print("no session with six warm processes found", file=sys.stderr)
        return 1
    rss_s = sum(sum(r for _, r, _ in p) for p in full.values()) / len(full) / 1024
    pss_s = sum(sum(x for _, _, x in p) for p in full.values()) / len(full) / 1024
    print(
        f"warm_sessions={len(full)} procs_per_session=6 rss_mib_per_session={rss_s:.0f} "
        f"pss_mib_per_session={pss_s:.0f} sessions_per_24gib_rss={int(GIB24_MIB // rss_s)} "
        f"sessions_per_24gib_pss={int(GIB24_MIB // pss_s)}"
    )
    return 0


async def _run(sessions: int, tmp: Path) -> dict[str, list[tuple[int, int, int]]]:
    from tests.e2e.harness import harness

    async with harness(tmp, max_warm=6 * sessions) as h:
        for i in range(sessions):
            await h.supervisor.run_turn("mem", f"m{i}", "I keep planning to run and then skipping it.")
            await h.supervisor.run_turn("mem", f"m{i}", "This week I managed one run on Sunday.")
        return measure(str(tmp / "claude-home"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--marker", help="measure running agent processes whose environment contains this")
    args = ap.parse_args(argv)
    if args.marker:
        return report(measure(args.marker))
    import anyio

    with tempfile.TemporaryDirectory(prefix="bench-warm-") as d:
        return report(anyio.run(_run, args.sessions, Path(d)))


if __name__ == "__main__":
    raise SystemExit(main())
