"""Blackboard store benchmark: single-process CAS writes/s, contended CAS writes/s with 6 processes,
and lost updates (expected sum minus the final counter).

Usage: ``python bench/blackboard.py [--seconds-single S] [--per-process N] [--processes P]``.
Runs against SQLiteStore with its defaults (WAL, synchronous=FULL) in a temporary directory.
The last line is exactly ``writes_per_s=N contended_writes_per_s=N lost_updates=N``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blackboard import SQLiteStore, VersionConflictError, turn_entry_key

KEY = turn_entry_key("bench", "s", "t", "counter")


def single(db: str, seconds: float) -> tuple[int, float]:
    store = SQLiteStore(db)
    version, n = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        e = store.write(
            turn_entry_key("bench", "single", f"t{n}", "x"), {"n": n}, expected_version=0, author="bench"
        )
        e = store.write(KEY.replace("/s/", "/single/"), {"n": n}, expected_version=version, author="bench")
        version = e.version
        n += 2
    elapsed = time.perf_counter() - start
    store.close()
    return n, elapsed


def worker(db: str, n: int, start: Any, out: Any) -> None:
    store = SQLiteStore(db)
    done = conflicts = 0
    errors: list[str] = []
    start.wait(60)
    t0 = time.perf_counter()
    while done < n:
        try:
            e = store.read(KEY)
            store.write(
                KEY, {"n": (e.value["n"] if e else 0) + 1}, expected_version=e.version if e else 0, author="b"
            )
            done += 1
        except VersionConflictError:
            conflicts += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            break
    out.put({"done": done, "conflicts": conflicts, "errors": errors, "t0": t0, "t1": time.perf_counter()})
    store.close()


def contended(db: str, processes: int, per_process: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    SQLiteStore(db).close()
    start = ctx.Barrier(processes)
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(db, per_process, start, out)) for _ in range(processes)]
    for p in procs:
        p.start()
    reports = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    store = SQLiteStore(db)
    final = store.read(KEY)
    store.close()
    done = sum(r["done"] for r in reports)
    elapsed = max(r["t1"] for r in reports) - min(r["t0"] for r in reports)
    return {
        "done": done,
        "elapsed": elapsed,
        "conflicts": sum(r["conflicts"] for r in reports),
        "errors": [e for r in reports for e in r["errors"]],
        "final": final.value["n"] if final else 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds-single", type=float, default=5.0)
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--per-process", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        n, elapsed = single(str(Path(d) / "single.sqlite3"), args.seconds_single)
        wps = n / elapsed
        print(
            f"single process: {n} CAS writes in {elapsed:.2f}s = {wps:.0f} writes/s (SQLite WAL, synchronous=FULL)"
        )
        r = contended(str(Path(d) / "contended.sqlite3"), args.processes, args.per_process)
        cps = r["done"] / r["elapsed"]
        expected = args.processes * args.per_process
        lost = expected - r["final"]
        print(
            f"contended: {args.processes} processes x {args.per_process} increments = {r['done']} successful CAS "
            f"writes in {r['elapsed']:.2f}s = {cps:.0f} writes/s; {r['conflicts']} conflicts retried; "
            f"final counter {r['final']} (expected {expected}); errors reaching callers: {len(r['errors'])}"
        )
        for e in r["errors"][:5]:
            print(f"  error: {e}")
    print(f"writes_per_s={wps:.0f} contended_writes_per_s={cps:.0f} lost_updates={lost}")


if __name__ == "__main__":
    main()
