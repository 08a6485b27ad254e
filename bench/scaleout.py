"""Scale-out under failure: turns as jobs on RabbitMQ, run by ``coach worker`` processes, PostgreSQL
holding the truth; the same turns through one in-process supervisor for comparison (docs/scale-out.md).

Everything is real except the model: the scripted upstream plays ``qwen3-30b-a3b@2x4090``
(docs/latency.md) in this process; the workers are ``coach worker`` subprocesses (proxy, MCP server,
real ``claude`` agents each), RabbitMQ and PostgreSQL are the machine's.

The run: ``--workers`` workers start; ``--sessions`` sessions x ``--turns`` turns are queued at once
(turn-major: every session's first turn, then every second turn...). While they run, a worker running a
turn is SIGKILLed (its ``claude`` processes too) and replaced, RabbitMQ is restarted (``rabbitmqctl
stop_app && rabbitmqctl start_app``), and another worker is SIGKILLed and replaced. Then a few probe
turns on idle workers measure the broker hop, the workers stop, and the same sessions x turns run
through one in-process Supervisor (SQLite, as many sessions at once as the workers had together).

Figures:

* ``lost_turns``: jobs not ``done`` at the end; ``duplicate_entries``: blackboard turn entries with more
  than one version, plus turns begun for a job other than the one its row records; ``stale_writes``:
  job results accepted from a holder whose epoch was superseded (epochs of a session's done jobs must
  not decrease in submission order) — refused writes are counted separately (``stale_refused``);
* ``max_recovery_s``: the longest time from a failure until work resumed: for a SIGKILL, until the
  turns it interrupted ran again on a live worker (claimed under a new epoch; this includes waiting for
  the dead worker's lease to expire and for a free slot on a busy worker); for the broker restart, from
  ``stop_app`` until every worker had reconnected and was consuming again;
* ``broker_hop_ms_p50``: submit (job row created, message published with confirm) to a worker's claim,
  on idle workers;
* ``turns_per_min`` (workers, from submit to the last turn done, failures included) and
  ``single_machine_turns_per_min`` (the in-process supervisor).

``python bench/scaleout.py [--sessions 20] [--turns 3] [--workers 3] [--worker-sessions 2]``. The last line:
``sessions=N turns=N lost_turns=0 duplicate_entries=0 stale_writes=0 max_recovery_s=X broker_hop_ms_p50=X
turns_per_min=X single_machine_turns_per_min=X``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402

from blackboard._pg_jobs import TurnJobs  # noqa: E402
from blackboard._pg_lease import Leases  # noqa: E402
from launcher.scaleout.broker import AmqpBroker, BrokerTopology  # noqa: E402
from launcher.scaleout.jobs import JobMessage  # noqa: E402
from tests.scaleout.cluster import WorkerProc, write_config  # noqa: E402
from testsupport.postgres import fresh_schema  # noqa: E402
from testsupport.procs import kill_processes_with  # noqa: E402
from testsupport.rabbitmq import fresh_prefix  # noqa: E402

LATENCY = "qwen3-30b-a3b@2x4090"
MESSAGES = (
    "I keep planning to run three times a week and then skipping it. Work has been intense and by the evening "
    "I just collapse on the sofa.",
    "This week I managed one run, on Sunday morning, and it actually felt good. Weekdays are still impossible.",
    "My sister suggested we run together on Saturdays. I like the idea but I'm worried I'll slow her down.",
)


def log(line: str) -> None:
    print(line, flush=True)


class Watch(threading.Thread):
    """Polls every job row; records when each job was first seen under each epoch and when it was done."""

    def __init__(self, jobs: TurnJobs) -> None:
        super().__init__(daemon=True)
        self.jobs = jobs
        self.claims: dict[tuple[str, int], float] = {}
        self.done: dict[str, float] = {}
        self.rows: dict[str, Any] = {}
        self.stop_ev = threading.Event()

    def run(self) -> None:
        while not self.stop_ev.is_set():
            try:
                rows = self.jobs.all()
            except Exception:
                time.sleep(0.5)
                continue
            now = time.monotonic()
            for j in rows:
                self.rows[j.job_id] = j
                if j.epoch is not None and j.state in ("running", "done"):
                    self.claims.setdefault((j.job_id, j.epoch), now)
                if j.state in ("done", "failed"):
                    self.done.setdefault(j.job_id, now)
            time.sleep(0.25)


def audit(pg: Any, jobs: TurnJobs, sessions: list[str], user: str) -> dict[str, int]:
    from blackboard._pg_conn import connect

    conn = connect(pg.url)
    q = f'"{pg.schema}"'
    try:
        dup = conn.execute(
            f"SELECT count(*) FROM (SELECT key FROM {q}.history WHERE key LIKE 'users/%%/turns/%%'"
            " GROUP BY key HAVING count(*) > 1) d"
        ).fetchone()[0]
        turns = conn.execute(
            f"SELECT split_part(key, '/', 4), split_part(key, '/', 6) FROM {q}.entries"
            " WHERE key LIKE 'users/%%/turns/%%/message'"
        ).fetchall()
    finally:
        conn.close()
    rows = jobs.all()
    recorded = {(j.session, j.turn_id) for j in rows if j.turn_id}
    extra = sum(1 for s, t in turns if (s, t) not in recorded)
    stale = 0
    for s in sessions:
        epochs = [
            j.epoch or 0
            for j in sorted((j for j in rows if j.session == s and j.state == "done"), key=lambda j: j.seq)
        ]
        stale += sum(1 for a, b in itertools.pairwise(epochs) if b < a)
    return {
        "duplicate_entries": int(dup) + extra,
        "stale_writes": stale,
        "lost_turns": sum(1 for j in rows if j.state != "done"),
    }


async def submit_all(
    jobs: TurnJobs, broker: AmqpBroker, user: str, sessions: list[str], turns: int
) -> list[str]:
    ids: list[str] = []
    try:
        for k in range(turns):
            for s in sessions:
                job_id = f"{s}-t{k + 1}"
                job, _ = await anyio.to_thread.run_sync(
                    jobs.create, job_id, user, s, MESSAGES[k % len(MESSAGES)]
                )
                await broker.publish(JobMessage(job_id, user, s, job.seq))
                ids.append(job_id)
    finally:
        await broker.close()  # in this event loop: the connection belongs to it
    return ids


async def probe(jobs: TurnJobs, broker: AmqpBroker, user: str, n: int) -> list[float]:
    """Turns submitted one at a time on idle workers: submit -> a worker's claim, in ms."""
    hops: list[float] = []
    try:
        for i in range(n):
            sess = f"probe{i}"
            job, _ = await anyio.to_thread.run_sync(jobs.create, f"probe-{i}", user, sess, MESSAGES[0])
            await broker.publish(JobMessage(job.job_id, user, sess, job.seq))
            end = time.monotonic() + 300
            claimed = False
            while time.monotonic() < end:
                j = await anyio.to_thread.run_sync(jobs.get, job.job_id)
                if j is not None and j.started_at is not None and not claimed:
                    hops.append((j.started_at - j.created_at) * 1000)
                    claimed = True
                if j is not None and j.state in ("done", "failed"):
                    break
                await anyio.sleep(0.01 if not claimed else 0.2)
    finally:
        await broker.close()
    return hops


def reconnected_at(path: Path, since: float) -> float | None:
    """Wall time of the worker's first "reconnected to RabbitMQ" log line after ``since``."""
    import datetime

    for line in path.read_text(errors="replace").splitlines():
        if "reconnected to RabbitMQ" in line:
            try:
                t = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            except ValueError:
                continue
            if t >= since:
                return t
    return None


def rabbit_restart() -> None:
    subprocess.run(["rabbitmqctl", "-q", "stop_app"], check=True, capture_output=True, timeout=120)
    subprocess.run(["rabbitmqctl", "-q", "start_app"], check=True, capture_output=True, timeout=120)
    subprocess.run(["rabbitmqctl", "-q", "await_startup"], check=True, capture_output=True, timeout=120)


class Chaos:
    """The failures injected while the turns run (SIGKILL of a busy worker, a broker restart) and the
    recoveries measured."""

    def __init__(
        self,
        args: argparse.Namespace,
        cfg: Path,
        tmp: Path,
        names: Iterator[str],
        workers: list[WorkerProc],
        watch: Watch,
        total: int,
        t_submit: float,
    ) -> None:
        self.args, self.cfg, self.tmp, self.names = args, cfg, tmp, names
        self.workers, self.watch, self.total, self.t_submit = workers, watch, total, t_submit
        self.recoveries: list[tuple[str, float]] = []
        self.events: list[str] = []

    def n_done(self) -> int:
        return sum(1 for j in self.watch.rows.values() if j.state in ("done", "failed"))

    def kill_one(self, tag: str) -> None:
        """SIGKILL a worker that is running a turn past its Coach reply, start a fresh one in its place."""
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.n_done() >= self.total:
                self.events.append(f"{tag}: not done, every turn finished before a worker was running one")
                log(self.events[-1])
                return
            running = [j for j in self.watch.rows.values() if j.state == "running" and j.coach_reply]
            victims = [w for w in self.workers if w.alive() and any(j.worker_id == w.name for j in running)]
            if victims:
                v = victims[0]
                hit = [(j.job_id, j.epoch or 0) for j in running if j.worker_id == v.name]
                t_kill = time.monotonic()
                v.kill()
                kill_processes_with(v.data_dir)
                self.events.append(f"{tag}: SIGKILL {v.name} running {', '.join(j for j, _ in hit)}")
                log(self.events[-1])
                self.workers[self.workers.index(v)] = WorkerProc(self.cfg, next(self.names), self.tmp).start(
                    timeout=180
                )
                self._wait_resumed(tag, hit, t_kill)
                return
            time.sleep(0.2)

    def _wait_resumed(self, tag: str, hit: list[tuple[str, int]], t_kill: float) -> None:
        """Recovery: from the SIGKILL until every interrupted turn is claimed again (or done)."""
        end = time.monotonic() + 600
        while time.monotonic() < end:
            resumed = [
                min(
                    (t for (jid, e), t in self.watch.claims.items() if jid == j and e > ep),
                    default=self.watch.done.get(j),
                )
                for j, ep in hit
            ]
            if all(r is not None for r in resumed):
                rec = max(r for r in resumed if r is not None) - t_kill
                self.recoveries.append((tag, rec))
                log(f"{tag}: interrupted turns running again after {rec:.1f} s")
                return
            time.sleep(0.2)
        self.recoveries.append((tag, float("inf")))

    def restart_broker(self) -> None:
        """Recovery: from stop_app until every live worker logged its reconnect (consumers restored)."""
        wall0 = time.time()
        t0 = time.monotonic()
        rabbit_restart()
        log(f"rabbitmq: stop_app + start_app took {time.monotonic() - t0:.1f} s")
        end = time.monotonic() + 300
        while time.monotonic() < end:
            stamps = [reconnected_at(w.log, wall0) for w in self.workers if w.alive()]
            if stamps and all(t is not None for t in stamps):
                rec = max(t for t in stamps if t is not None) - wall0
                self.recoveries.append(("broker restart", rec))
                log(f"rabbitmq restart: every worker consuming again {rec:.1f} s after stop_app")
                return
            time.sleep(0.2)
        self.recoveries.append(("broker restart", float("inf")))

    def wait_done(self, frac: float) -> None:
        while self.n_done() < frac * self.total and time.monotonic() - self.t_submit < self.args.timeout:
            time.sleep(0.5)


def distributed(args: argparse.Namespace, tmp: Path, upstream_url: str) -> dict[str, Any]:
    with fresh_schema("bench") as pg, fresh_prefix("bench") as (url, prefix):
        cfg = write_config(
            tmp,
            upstream_url=upstream_url,
            pg=pg,
            broker_url=url,
            prefix=prefix,
            delivery_limit=args.delivery_limit,
            lease_ttl_s=args.lease_ttl,
            sessions=args.worker_sessions,
        )
        jobs = TurnJobs(pg.url, schema=pg.schema)
        names = iter(f"w{i}" for i in range(1, 100))
        workers = [WorkerProc(cfg, next(names), tmp) for _ in range(args.workers)]
        for w in workers:
            w.start(timeout=180)
        log(f"workers up: {', '.join(w.name for w in workers)}")
        sessions = [f"s{i:03d}" for i in range(1, args.sessions + 1)]
        user = "bench"
        watch = Watch(jobs)
        watch.start()
        broker = AmqpBroker(
            url, BrokerTopology(prefix=prefix, delivery_limit=args.delivery_limit), name="bench"
        )
        t_submit = time.monotonic()
        ids = anyio.run(submit_all, jobs, broker, user, sessions, args.turns)
        log(f"queued {len(ids)} turns at once in {time.monotonic() - t_submit:.2f} s")
        total = len(ids)
        chaos = Chaos(args, cfg, tmp, names, workers, watch, total, t_submit)
        n_done, wait_done = chaos.n_done, chaos.wait_done
        recoveries, events = chaos.recoveries, chaos.events
        wait_done(0.1)
        chaos.kill_one("kill 1")
        wait_done(0.35)
        chaos.restart_broker()
        wait_done(0.55)
        chaos.kill_one("kill 2")
        while n_done() < total and time.monotonic() - t_submit < args.timeout:
            time.sleep(0.5)
        t_end = max(watch.done.values()) if watch.done else time.monotonic()
        elapsed = t_end - t_submit
        log(f"{n_done()}/{total} turns finished in {elapsed:.1f} s")
        time.sleep(1)
        # broker hop on idle workers: submit -> claim
        broker = AmqpBroker(
            url, BrokerTopology(prefix=prefix, delivery_limit=args.delivery_limit), name="bench"
        )
        hops = anyio.run(probe, jobs, broker, user, args.probes)
        watch.stop_ev.set()
        refused = Leases(pg.url, schema=pg.schema).refusals()
        docs = [j for j in jobs.all() if j.job_id in set(ids)]
        degraded = sum(1 for j in docs if j.result and json.loads(j.result).get("degraded"))
        missing: dict[str, int] = {}
        for j in docs:
            for name in json.loads(j.result).get("missing", []) if j.result else []:
                missing[name] = missing.get(name, 0) + 1
        figures = audit(pg, jobs, sessions, user)
        for w in workers:
            w.stop()
        for w in workers:
            kill_processes_with(w.data_dir)
        jobs.close()
        return {
            **figures,
            "elapsed": elapsed,
            "total": total,
            "recoveries": recoveries,
            "hops": hops,
            "stale_refused": len(refused),
            "degraded": degraded,
            "events": events,
            "missing": missing,
        }


async def in_process(args: argparse.Namespace, tmp: Path, total_sessions: int) -> tuple[float, int, int]:
    from launcher.agents import load_agents
    from tests.e2e.harness import agent_script, harness
    from tests.launcher.fakes import OUTPUT_TOOLS

    specs = load_agents(ROOT / "agents")
    scripts = {a: agent_script(a) for a in OUTPUT_TOOLS}
    concurrent = args.workers * args.worker_sessions
    done = degraded = 0
    async with harness(
        tmp / "inproc",
        scripts,
        specs=specs,
        max_warm=min(64, 6 * concurrent),
        time_scale=1.0,
        latency=LATENCY,
    ) as h:
        limiter = anyio.CapacityLimiter(concurrent)
        t0 = time.monotonic()

        async def session(s: str) -> None:
            nonlocal done, degraded
            async with limiter:
                for k in range(args.turns):
                    res = await h.supervisor.run_turn("bench", s, MESSAGES[k % len(MESSAGES)])
                    done += 1
                    degraded += int(res.degraded)
                await h.runner.close_session("bench", s)

        async with anyio.create_task_group() as tg:
            for i in range(1, total_sessions + 1):
                tg.start_soon(session, f"s{i:03d}")
        return time.monotonic() - t0, done, degraded


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--worker-sessions", type=int, default=2, help="warm sessions per worker (its prefetch)")
    ap.add_argument("--lease-ttl", type=float, default=5.0)
    ap.add_argument("--delivery-limit", type=int, default=5)
    ap.add_argument("--probes", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=3000.0)
    ap.add_argument("--skip-single", action="store_true", help="skip the in-process comparison")
    args = ap.parse_args(argv)

    def on_term(*_a: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM cleans up like Ctrl-C: workers stopped, schema and queues dropped

    signal.signal(signal.SIGTERM, on_term)
    from tests.e2e.harness import agent_script
    from tests.launcher.fakes import OUTPUT_TOOLS
    from testsupport.upstream import ScriptedUpstream

    log(
        f"latency model: {LATENCY} (scripted upstream; docs/latency.md); {args.workers} workers x "
        f"{args.worker_sessions} sessions; {args.sessions} sessions x {args.turns} turns"
    )
    with tempfile.TemporaryDirectory(prefix="bench-scaleout-") as d:
        tmp = Path(d)
        up = ScriptedUpstream({a: agent_script(a) for a in OUTPUT_TOOLS}, latency=LATENCY, time_scale=1.0)
        up.start()
        try:
            r = distributed(args, tmp, up.base_url)
            single_tpm = float("nan")
            if not args.skip_single:
                up.reset()
                elapsed, n, deg = asyncio.run(_run_in_process(args, tmp))
                single_tpm = n / elapsed * 60
                log(f"in-process supervisor: {n} turns in {elapsed:.1f} s ({deg} degraded)")
        finally:
            up.stop()
    for line in r["events"]:
        log(f"event: {line}")
    for tag, rec in r["recoveries"]:
        log(f"recovery: {tag}: {rec:.1f} s")
    log(f"missing agents in the workers' turns: {r['missing'] or 'none'}")
    log(
        f"stale_refused={r['stale_refused']} degraded_turns={r['degraded']} broker_hops_ms="
        + ",".join(f"{h:.1f}" for h in r["hops"])
    )
    max_rec = max((rec for _, rec in r["recoveries"]), default=0.0)
    hop = statistics.median(r["hops"]) if r["hops"] else float("nan")
    tpm = (r["total"] - r["lost_turns"]) / r["elapsed"] * 60 if r["elapsed"] else 0.0
    print(
        f"sessions={args.sessions} turns={r['total']} lost_turns={r['lost_turns']} "
        f"duplicate_entries={r['duplicate_entries']} stale_writes={r['stale_writes']} max_recovery_s={max_rec:.1f} "
        f"broker_hop_ms_p50={hop:.1f} turns_per_min={tpm:.1f} single_machine_turns_per_min={single_tpm:.1f}",
        flush=True,
    )
    return 0 if r["lost_turns"] == 0 and r["duplicate_entries"] == 0 and r["stale_writes"] == 0 else 1


async def _run_in_process(args: argparse.Namespace, tmp: Path) -> tuple[float, int, int]:
    return await in_process(args, tmp, args.sessions)


if __name__ == "__main__":
    raise SystemExit(main())
