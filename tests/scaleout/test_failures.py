"""Failures against the real RabbitMQ and PostgreSQL, real ``coach worker`` processes and real ``claude``
agents (the scripted upstream at the model boundary):

* a worker SIGKILLed mid-turn: the job is delivered again and finished by another worker; the agents
  whose entries were written are not run again, no entry gets a second version, one Coach reply;
* a poison turn (the worker crashes on it every time) is dead-lettered after the delivery limit and
  marked failed while another session's turn completes;
* a worker paused past its lease: another takes the session over (epoch 2), the paused one's writes
  are refused when it wakes up, and logged;
* the broker closes the worker's connection: it reconnects and consumes again by itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from blackboard import Blackboard
from blackboard._pg_jobs import TurnJobs
from blackboard._pg_lease import Leases
from tests.e2e.harness import agent_script
from tests.scaleout.cluster import WorkerProc, front, write_config
from testsupport.postgres import fresh_schema
from testsupport.procs import kill_processes_with
from testsupport.rabbitmq import fresh_prefix
from testsupport.script import Delay
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SPECIALISTS = ("shadow", "persona", "plasticity", "stability")


def slow(agent: str, seconds: float) -> Any:
    return agent_script(agent, lambda r: Delay(seconds, then=agent_script(agent)(r)))


@pytest.fixture
def env(tmp_path: Path, upstream: ScriptedUpstream) -> Iterator[dict[str, Any]]:
    with fresh_schema("sf") as pg, fresh_prefix("fail") as (url, prefix):
        cfg = write_config(
            tmp_path,
            upstream_url=upstream.base_url,
            pg=pg,
            broker_url=url,
            prefix=prefix,
            delivery_limit=1,
            lease_ttl_s=3.0,
        )
        workers: list[WorkerProc] = []
        jobs = TurnJobs(pg.url, schema=pg.schema)
        board = Blackboard(tmp_path / "inspect", database_url=pg.url, database_schema=pg.schema)
        try:
            yield {
                "cfg": cfg,
                "pg": pg,
                "tmp": tmp_path,
                "workers": workers,
                "jobs": jobs,
                "board": board,
                "prefix": prefix,
            }
        finally:
            for w in workers:
                w.kill()
            for w in workers:
                kill_processes_with(w.data_dir)
            jobs.close()
            board.close()


def wait_until(pred: Callable[[], Any], timeout: float, what: str) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _background_front(
    cfg: Path, message: str, user: str, session: str, job_id: str, tmp: Path
) -> dict[str, Any]:
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            box["doc"] = front(
                cfg, message, user, session, job_id=job_id, timeout=500, data_dir=tmp / f"fe-{job_id}"
            )
        except BaseException as exc:  # reported by the test
            box["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    box["thread"] = t
    return box


def _versions(board: Blackboard, user: str, session: str, turn: str) -> dict[str, int]:
    return {k: len(board.store.history(e.key)) for k, e in board.read_turn(user, session, turn).items()}


def test_worker_sigkilled_mid_turn_the_job_finishes_on_another_nothing_doubled(
    env: dict[str, Any], upstream: ScriptedUpstream
) -> None:
    upstream.set_script("persona", slow("persona", 25.0))  # the turn is long: the kill lands mid-turn
    w1 = WorkerProc(env["cfg"], "w1", env["tmp"]).start()
    env["workers"].append(w1)
    box = _background_front(env["cfg"], "I want to run more", "u1", "s1", "job-kill", env["tmp"])
    jobs: TurnJobs = env["jobs"]
    board: Blackboard = env["board"]
    job = wait_until(
        lambda: (j := jobs.get("job-kill")) is not None and j.coach_reply and j.turn_id and j,
        240,
        "the Coach reply of the first attempt",
    )
    wait_until(
        lambda: {"shadow", "stability"} <= set(board.read_turn("u1", "s1", job.turn_id)),
        120,
        "shadow and stability written",
    )
    w2 = WorkerProc(env["cfg"], "w2", env["tmp"]).start()
    env["workers"].append(w2)
    before = set(board.read_turn("u1", "s1", job.turn_id))
    assert "persona" not in before and "delivery" not in before
    upstream.set_script("persona", agent_script("persona"))
    killed_at = time.monotonic()
    w1.kill()
    kill_processes_with(w1.data_dir)
    box["thread"].join(400)
    assert "error" not in box, box.get("error")
    doc = box["doc"]
    recovery = time.monotonic() - killed_at
    done = jobs.get("job-kill")
    assert done is not None and done.state == "done" and done.worker_id == "w2" and done.epoch == 2
    assert done.attempts == 2
    assert doc["turn_id"] == job.turn_id and doc["coach_reply"] == job.coach_reply == done.coach_reply
    assert doc["synthesis"] == done.synthesis and doc["synthesis_source"] == "model"
    versions = _versions(board, "u1", "s1", job.turn_id)
    assert all(n == 1 for n in versions.values()), versions
    assert {"coach", *SPECIALISTS, "pineal", "delivery", "record"} <= set(versions)
    assert board.store.read("users/u1/sessions/s1").value["turn_count"] == 1, "no second turn begun"
    # the agents already written were not run again by w2 (its log: only what was missing)
    log2 = w2.log.read_text()
    assert "attempt 2 (resuming turn" in log2
    print(f"recovery after SIGKILL: {recovery:.1f}s")


def test_poison_turn_is_dead_lettered_and_failed_while_another_session_completes(
    env: dict[str, Any], upstream: ScriptedUpstream
) -> None:
    crash = {"COACH_WORKER_CRASH_ON": "job-poison"}
    names = iter(f"p{i}" for i in range(20))
    workers = [WorkerProc(env["cfg"], next(names), env["tmp"], env=crash).start() for _ in range(2)]
    env["workers"].extend(workers)
    jobs: TurnJobs = env["jobs"]
    poison = _background_front(env["cfg"], "poison", "u1", "sp", "job-poison", env["tmp"])
    good = _background_front(env["cfg"], "I want to run more", "u2", "sg", "job-good", env["tmp"])
    end = time.monotonic() + 420
    while time.monotonic() < end and (poison["thread"].is_alive() or good["thread"].is_alive()):
        for i, w in enumerate(workers):  # a crashed worker is restarted, as systemd would
            if not w.alive():
                kill_processes_with(w.data_dir)
                workers[i] = WorkerProc(env["cfg"], next(names), env["tmp"], env=crash).start()
                env["workers"].append(workers[i])
        time.sleep(0.5)
    assert "error" not in good, good.get("error")
    assert good["doc"]["synthesis_source"] == "model"
    assert "failed" in str(poison.get("error")) and "dead-lettered" in str(poison.get("error"))
    p = jobs.get("job-poison")
    assert p is not None and p.state == "failed" and p.attempts >= 2 and "dead-lettered" in (p.error or "")
    assert p.coach_reply is None and p.result is None
    assert jobs.get("job-good").state == "done"  # type: ignore[union-attr]


def test_a_paused_worker_past_its_lease_has_its_writes_refused(
    env: dict[str, Any], upstream: ScriptedUpstream
) -> None:
    upstream.set_script("persona", slow("persona", 12.0))
    w1 = WorkerProc(env["cfg"], "w1", env["tmp"]).start()
    env["workers"].append(w1)
    jobs: TurnJobs = env["jobs"]
    board: Blackboard = env["board"]
    first = _background_front(env["cfg"], "I want to run more", "u1", "s1", "job-a", env["tmp"])
    job = wait_until(
        lambda: (j := jobs.get("job-a")) is not None and j.coach_reply and j.turn_id and j,
        240,
        "the first attempt's Coach reply",
    )
    w2 = WorkerProc(env["cfg"], "w2", env["tmp"]).start()
    env["workers"].append(w2)
    assert w1.proc is not None
    os.kill(w1.proc.pid, signal.SIGSTOP)  # a GC pause, a partition: w1 stops renewing its lease
    try:
        upstream.set_script("persona", agent_script("persona"))
        second = _background_front(env["cfg"], "And swim", "u1", "s1", "job-b", env["tmp"])
        second["thread"].join(300)  # w2 takes the session over (epoch 2): job-a, then job-b
        assert "error" not in second, second.get("error")
    finally:
        os.kill(w1.proc.pid, signal.SIGCONT)
    first["thread"].join(120)
    assert "error" not in first, first.get("error")
    a, b = jobs.get("job-a"), jobs.get("job-b")
    assert a is not None and b is not None
    assert (a.state, a.worker_id, a.epoch) == ("done", "w2", 2) and (b.state, b.worker_id, b.epoch) == (
        "done",
        "w2",
        2,
    )
    assert a.turn_id == job.turn_id and a.coach_reply == job.coach_reply
    assert first["doc"]["turn_id"] == a.turn_id and second["doc"]["turn_id"] != a.turn_id
    refusals = wait_until(
        lambda: [
            r for r in Leases(env["pg"].url, schema=env["pg"].schema).refusals() if r["worker_id"] == "w1"
        ],
        60,
        "w1's refused writes",
    )
    assert all(r["epoch"] == 1 for r in refusals)
    for t in (a.turn_id, b.turn_id):
        assert all(n == 1 for n in _versions(board, "u1", "s1", t).values())  # type: ignore[arg-type]


def _close_connections_of(name: str) -> int:
    out = subprocess.run(
        ["rabbitmqctl", "-q", "list_connections", "pid", "client_properties"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    pids = [line.split("\t", 1)[0] for line in out.splitlines() if name in line]
    for pid in pids:
        subprocess.run(
            ["rabbitmqctl", "close_connection", pid, "test: connection drop"],
            capture_output=True,
            timeout=60,
            check=True,
        )
    return len(pids)


def test_the_worker_reconnects_and_consumes_again_after_the_broker_closes_its_connection(
    env: dict[str, Any], upstream: ScriptedUpstream
) -> None:
    w1 = WorkerProc(env["cfg"], "w1", env["tmp"]).start()
    env["workers"].append(w1)
    first = front(env["cfg"], "I want to run more", "u1", "s1", job_id="job-r1", data_dir=env["tmp"] / "fe1")
    assert first["synthesis_source"] == "model"
    assert _close_connections_of("coach worker w1") >= 1
    wait_until(lambda: "reconnected to RabbitMQ" in w1.log.read_text(), 60, "the worker's reconnect")
    second = front(env["cfg"], "And swim", "u1", "s1", job_id="job-r2", data_dir=env["tmp"] / "fe2")
    assert second["synthesis_source"] == "model" and second["turn_id"] == "t000002"
    # and a drop mid-turn: the turn finishes, the redelivered message is acknowledged as a duplicate
    upstream.set_script("persona", slow("persona", 8.0))
    box = _background_front(env["cfg"], "And cycle", "u1", "s1", "job-r3", env["tmp"])
    jobs: TurnJobs = env["jobs"]
    wait_until(
        lambda: (j := jobs.get("job-r3")) is not None and j.coach_reply, 240, "the third turn's Coach reply"
    )
    assert _close_connections_of("coach worker w1") >= 1
    box["thread"].join(300)
    assert "error" not in box, box.get("error")
    r3 = jobs.get("job-r3")
    assert r3 is not None and r3.state == "done" and r3.attempts == 1 and box["doc"]["turn_id"] == "t000003"
    assert w1.alive()
