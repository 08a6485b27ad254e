"""``coach chat --broker`` against a running ``coach worker`` (real RabbitMQ, real PostgreSQL, real ``claude``
processes, the scripted upstream): the Coach's reply first, then the synthesis, each once; the session
closes on the shared blackboard at the end."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from blackboard._pg_jobs import TurnJobs
from tests.e2e.harness import REPO
from tests.scaleout.cluster import WorkerProc, coach, write_config
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]


def test_coach_chat_broker_shows_the_reply_then_the_synthesis_from_a_worker(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    with fresh_schema("ce") as pg, fresh_prefix("chate2e") as (url, prefix):
        cfg = write_config(tmp_path, upstream_url=upstream.base_url, pg=pg, broker_url=url, prefix=prefix)
        worker = WorkerProc(cfg, "w1", tmp_path).start()
        try:
            env = {
                **os.environ,
                "PYTHONPATH": str(REPO),
                "COACH_DATA_DIR": str(tmp_path / "fe"),
                "COLUMNS": "400",
            }
            p = subprocess.run(
                coach("chat", "-u", "u1", "-s", "s1", "--config", str(cfg), "--broker", url),
                cwd=REPO,
                input="I want to run more\n",
                capture_output=True,
                text=True,
                timeout=360,
                env=env,
            )
        finally:
            worker.stop()
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
        finally:
            jobs.close()
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    out = p.stdout
    assert [(r.state, r.attempts, r.turn_id) for r in rows] == [("done", 1, "t000001")]
    assert out.count("Coach:") == 1 and out.count("Synthesis:") == 1
    assert out.index("Coach:") < out.index("Synthesis:") < out.index("turn t000001 done")
    assert rows[0].coach_reply and " ".join(rows[0].coach_reply.split())[:40] in " ".join(out.split())
    assert "session s1 closed (1 turn)" in out
    assert "I want to run more" not in worker.log.read_text(), "the user's message is never logged"
