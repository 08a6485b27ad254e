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

``--reuse N`` measures what ``[agents] reuse_processes`` saves instead: N new sessions through the same real
stack with reuse on, alternating a session whose predecessor's processes were stopped (so six new processes
start) with one whose predecessor's were reset with ``/clear`` (so the six are handed over). Per process it
times a new process's start (``prestart``: connect until MCP is connected, one at a time) against a reused
one's reset plus hand-over, and reads each session's RSS both ways. ``--chain``: every session's processes
are reset for the next (the same six serve all N sessions; their RSS per session is printed). The last line:
``reuse_rounds=N new_process_start_ms_p50=X reset_ms_p50=X reused_process_start_ms_p50=X
saved_ms_per_process=X saved_s_per_session=X rss_mib_per_session_new=X rss_mib_per_session_reused=X``.
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


def _p50(xs: list[float]) -> float:
    ys = sorted(xs)
    return ys[len(ys) // 2] if ys else float("nan")


async def _reuse_rounds(rounds: int, tmp: Path, chain: bool = False) -> str:
    import dataclasses
    import time

    from launcher.pipeline.supervisor import pool_invocations
    from launcher.runner import _reset
    from tests.e2e.harness import harness

    resets: list[float] = []
    plain_reset = _reset.reset_conversation

    async def timed_reset(client: object, **kw: float) -> bool:
        t0 = time.perf_counter()
        try:
            return await plain_reset(client, **kw)
        finally:
            resets.append(time.perf_counter() - t0)

    _reset.reset_conversation = timed_reset  # type: ignore[assignment]
    new_ms: list[float] = []
    reused_ms: list[float] = []
    rss: dict[bool, list[float]] = {False: [], True: []}
    from tests.e2e.harness import agent_script
    from tests.launcher.fakes import OUTPUT_TOOLS
    from testsupport.script import Text

    scripts: dict[str, object] = {a: agent_script(a) for a in OUTPUT_TOOLS}
    pineal = agent_script("pineal")

    def pineal_or_prefill(request: object) -> object:
        try:
            return pineal(request)
        except AssertionError:  # Pineal's prefill (x-coach-prefill, sent before the brief exists)
            return Text("ok")

    scripts["pineal"] = pineal_or_prefill
    async with harness(tmp, scripts, max_warm=12, reuse_processes=True) as h:
        invs = pool_invocations(h.specs)
        reused = False
        for i in range(rounds):
            session = f"r{i}"
            before = h.runner.started_processes
            for inv in invs:  # one at a time: each process's own start
                t0 = time.perf_counter()
                await h.runner.prestart(dataclasses.replace(inv, user="bench", session=session))
                (reused_ms if reused else new_ms).append((time.perf_counter() - t0) * 1000)
            if (h.runner.started_processes == before) is not reused:
                raise RuntimeError(f"session {session}: reuse did not happen as planned")
            await h.supervisor.run_turn("bench", session, "I keep planning to run and then skipping it.")
            # every live agent process is this session's now (the previous one's were stopped or handed over)
            procs = [p for ps in measure(str(tmp / "claude-home")).values() for p in ps]
            rss[reused].append(sum(r for _, r, _ in procs) / 1024 * 6 / max(1, len(procs)))
            print(
                f"session {session}: {'reused' if reused else 'new'} processes, RSS {rss[reused][-1]:.0f} MiB"
            )
            reused = (
                chain or i % 2 == 0
            )  # alternate: this session's processes are reset (or stopped) for the next
            cfg = h.runner.config
            h.runner.config = dataclasses.replace(cfg, reuse_processes=reused)  # for this close only
            await h.runner.close_session("bench", session)
            h.runner.config = cfg
    _reset.reset_conversation = plain_reset  # type: ignore[assignment]
    per_new, per_reset = _p50(new_ms), _p50(resets) * 1000
    per_reused = _p50(reused_ms) + per_reset
    return (
        f"reuse_rounds={rounds} new_process_start_ms_p50={per_new:.0f} reset_ms_p50={per_reset:.0f} "
        f"reused_process_start_ms_p50={per_reused:.0f} saved_ms_per_process={per_new - per_reused:.0f} "
        f"saved_s_per_session={6 * (per_new - per_reused) / 1000:.2f} "
        f"rss_mib_per_session_new={_p50(rss[False]):.0f} rss_mib_per_session_reused={_p50(rss[True]):.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--marker", help="measure running agent processes whose environment contains this")
    ap.add_argument("--reuse", type=int, metavar="N", help="measure process reuse over N new sessions")
    ap.add_argument("--chain", action="store_true", help="with --reuse: reset every session's processes")
    args = ap.parse_args(argv)
    if args.reuse:
        import anyio

        with tempfile.TemporaryDirectory(prefix="bench-reuse-") as d:
            print(anyio.run(_reuse_rounds, args.reuse, Path(d), args.chain))
        return 0
    if args.marker:
        return report(measure(args.marker))
    import anyio

    with tempfile.TemporaryDirectory(prefix="bench-warm-") as d:
        return report(anyio.run(_run, args.sessions, Path(d)))


if __name__ == "__main__":
    raise SystemExit(main())
