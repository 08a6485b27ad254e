"""Blackboard store benchmark, SQLite and PostgreSQL in the same run: single-process CAS writes/s,
contended CAS writes/s with 6 processes on one hot key and on distinct keys (one per process), and lost
updates (expected sum minus the final counters; must be 0).

Usage: ``python bench/blackboard.py [--seconds-single S] [--per-process N] [--processes P]
[--pg-url URL | --no-pg]``. SQLiteStore runs with its defaults (WAL, synchronous=FULL) in a temporary
directory; PostgresStore in a temporary schema of ``--pg-url`` (default ``COACH_DATABASE_URL``, else
``postgresql://postgres@127.0.0.1:5432/test``), dropped afterwards. The last line is exactly
``writes_per_s=N contended_writes_per_s=N lost_updates=N pg_contended_writes_per_s=N pg_lost_updates=N``:
the first three are SQLite's (single process; hot key), the last two PostgreSQL's (hot key; hot and
distinct keys together), ``n/a`` when PostgreSQL was not reachable or ``--no-pg`` was given.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blackboard import SQLiteStore, Store, StoreUnavailableError, VersionConflictError, turn_entry_key

KEY = turn_entry_key("bench", "s", "t", "counter")
Spec = tuple[str, ...]  # ("sqlite", path) or ("pg", url, schema)


def open_spec(spec: Spec) -> Store:
    if spec[0] == "sqlite":
        return SQLiteStore(spec[1])
    from blackboard._postgres import PostgresStore

    return PostgresStore(spec[1], schema=spec[2], pool_size=1)


def single(spec: Spec, seconds: float) -> tuple[int, float]:
    store = open_spec(spec)
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


def worker(spec: Spec, key: str, n: int, start: Any, out: Any) -> None:
    store = open_spec(spec)
    done = conflicts = 0
    errors: list[str] = []
    start.wait(60)
    t0 = time.perf_counter()
    while done < n:
        try:
            e = store.read(key)
            store.write(
                key, {"n": (e.value["n"] if e else 0) + 1}, expected_version=e.version if e else 0, author="b"
            )
            done += 1
        except VersionConflictError:
            conflicts += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            break
    out.put({"done": done, "conflicts": conflicts, "errors": errors, "t0": t0, "t1": time.perf_counter()})
    store.close()


def contended(spec: Spec, processes: int, per_process: int, *, distinct: bool) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    open_spec(spec).close()
    keys = [KEY.replace("/t/", f"/t{i}/") if distinct else KEY for i in range(processes)]
    start = ctx.Barrier(processes)
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(spec, k, per_process, start, out)) for k in keys]
    for p in procs:
        p.start()
    reports = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    store = open_spec(spec)
    finals = {k: (e.value["n"] if (e := store.read(k)) else 0) for k in set(keys)}
    store.close()
    done = sum(r["done"] for r in reports)
    return {
        "done": done,
        "elapsed": max(r["t1"] for r in reports) - min(r["t0"] for r in reports),
        "conflicts": sum(r["conflicts"] for r in reports),
        "errors": [e for r in reports for e in r["errors"]],
        "final": sum(finals.values()),
        "lost": processes * per_process - sum(finals.values()),
    }


def run_backend(name: str, spec: Spec, args: argparse.Namespace) -> dict[str, Any]:
    """Single, hot-key and distinct-key runs of one backend; prints their lines; returns the figures."""
    n, elapsed = single(spec, args.seconds_single)
    wps = n / elapsed
    print(f"{name} single process: {n} CAS writes in {elapsed:.2f}s = {wps:.0f} writes/s")
    figures: dict[str, Any] = {"wps": wps, "lost": 0}
    for distinct in (False, True):
        label = "distinct keys" if distinct else "one hot key"
        r = contended(spec, args.processes, args.per_process, distinct=distinct)
        cps = r["done"] / r["elapsed"]
        figures["distinct_cps" if distinct else "cps"] = cps
        figures["lost"] += r["lost"]
        print(
            f"{name} contended, {label}: {args.processes} processes x {args.per_process} increments = "
            f"{r['done']} successful CAS writes in {r['elapsed']:.2f}s = {cps:.0f} writes/s; {r['conflicts']} "
            f"conflicts retried; final {r['final']} (expected {args.processes * args.per_process}); "
            f"lost_updates={r['lost']}; errors reaching callers: {len(r['errors'])}"
        )
        for e in r["errors"][:5]:
            print(f"  error: {e}")
        if not distinct:
            figures["hot_lost"] = r["lost"]
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds-single", type=float, default=5.0)
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--per-process", type=int, default=300)
    ap.add_argument(
        "--pg-url",
        default=os.environ.get("COACH_DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/test",
    )
    ap.add_argument("--no-pg", action="store_true", help="SQLite only (the pg_ figures print n/a)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        sq = run_backend("SQLite (WAL, synchronous=FULL)", ("sqlite", str(Path(d) / "bench.sqlite3")), args)
    pg: dict[str, Any] | None = None
    if not args.no_pg:
        schema = f"bench_{os.getpid()}"
        try:
            from blackboard._pg_conn import connect

            pg = run_backend(
                "PostgreSQL (READ COMMITTED, synchronous_commit=on)", ("pg", args.pg_url, schema), args
            )
        except StoreUnavailableError as exc:
            print(f"PostgreSQL skipped: {exc}")
        finally:
            try:
                conn = connect(args.pg_url)
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                conn.close()
            except StoreUnavailableError:
                pass
    print(f"{'backend':<12} {'single/s':>9} {'hot key/s':>10} {'distinct/s':>11} {'lost_updates':>13}")
    for name, f in (("sqlite", sq), ("postgresql", pg)):
        if f is not None:
            print(f"{name:<12} {f['wps']:>9.0f} {f['cps']:>10.0f} {f['distinct_cps']:>11.0f} {f['lost']:>13}")
    pg_tail = (
        f"pg_contended_writes_per_s={pg['cps']:.0f} pg_lost_updates={pg['lost']}"
        if pg is not None
        else "pg_contended_writes_per_s=n/a pg_lost_updates=n/a"
    )
    print(
        f"writes_per_s={sq['wps']:.0f} contended_writes_per_s={sq['cps']:.0f} lost_updates={sq['hot_lost']} {pg_tail}"
    )


if __name__ == "__main__":
    main()
