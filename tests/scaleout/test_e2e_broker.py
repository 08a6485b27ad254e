"""``coach run --broker`` against a running ``coach worker`` (real RabbitMQ, real PostgreSQL, real
``claude`` processes, the scripted upstream) prints the same JSON document as ``coach run`` in-process."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from blackboard._pg_jobs import TurnJobs
from tests.e2e.harness import REPO
from tests.scaleout.cluster import WorkerProc, coach, comparable, front, write_config
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]


def test_coach_run_broker_gives_the_in_process_document(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    # in-process, SQLite
    local = tmp_path / "local.toml"
    local.write_text(
        f'[data]\ndir = "{tmp_path / "local"}"\n[upstream]\nurl = "{upstream.base_url}"\nkind = "anthropic"\n'
    )
    p = subprocess.run(
        coach("run", "I want to run more", "-u", "u1", "-s", "s1", "--json", "--config", str(local)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    in_process = json.loads(p.stdout)

    with fresh_schema("sc") as pg, fresh_prefix("e2e") as (url, prefix):
        cfg = write_config(tmp_path, upstream_url=upstream.base_url, pg=pg, broker_url=url, prefix=prefix)
        worker = WorkerProc(cfg, "w1", tmp_path).start()
        try:
            via_broker = front(
                cfg, "I want to run more", "u1", "s1", job_id="job-e2e-1", data_dir=tmp_path / "fe"
            )
            again = front(cfg, "I want to run more", "u1", "s1", job_id="job-e2e-1", data_dir=tmp_path / "fe")
            metrics = urllib.request.urlopen(worker.metrics_url, timeout=10).read().decode()
        finally:
            worker.stop()
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
        finally:
            jobs.close()
    assert comparable(via_broker) == comparable(in_process)
    assert via_broker["synthesis_source"] == "model" and not via_broker["degraded"]
    assert again == via_broker, "the same job id follows the same job: no second turn"
    assert [(r.job_id, r.state, r.attempts) for r in rows] == [("job-e2e-1", "done", 1)]
    assert "coach_worker_turns_done_total" in metrics and "coach_queue_depth" in metrics
    assert "I want to run more" not in worker.log.read_text(), "the user's message is never logged"
