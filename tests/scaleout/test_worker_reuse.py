"""``coach worker`` with ``[agents] reuse_processes``: a session evicted to make room for another (one
session of capacity) has its six warm processes reset and reused by the new session: no process started
for it, six resets counted in ``/metrics``, and no model request of the new session's turn holds the token
planted in the evicted session's message. Real RabbitMQ, PostgreSQL, ``claude``; the scripted upstream."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from tests.scaleout.cluster import WorkerProc, front, write_config
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

TOKEN = "PLANTED-3fa81c"


def _counter(metrics: str, name: str) -> int:
    m = re.search(rf"^coach_worker_{name}_total\{{[^}}]*\}} (\d+)$", metrics, re.M)
    assert m, f"{name} missing from /metrics"
    return int(m.group(1))


def test_an_evicted_sessions_processes_are_reset_and_serve_the_next_session(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    with fresh_schema("sc") as pg, fresh_prefix("reuse") as (url, prefix):
        cfg = write_config(tmp_path, upstream_url=upstream.base_url, pg=pg, broker_url=url, prefix=prefix)
        cfg.write_text(cfg.read_text() + "[agents]\nreuse_processes = true\n")
        worker = WorkerProc(cfg, "w1", tmp_path).start()
        try:
            a = front(cfg, f"My code word is {TOKEN}; I skip my runs", "u1", "s1", data_dir=tmp_path / "fe")
            before = len(upstream.model_calls())
            started_a = _counter(
                urllib.request.urlopen(worker.metrics_url, timeout=10).read().decode(), "processes_started"
            )
            b = front(cfg, "I ran once this week", "u2", "s2", data_dir=tmp_path / "fe")
            metrics = urllib.request.urlopen(worker.metrics_url, timeout=10).read().decode()
        finally:
            worker.stop()
    assert a["synthesis_source"] == "model" and b["synthesis_source"] == "model", b
    assert _counter(metrics, "processes_reset") == 6 and _counter(metrics, "resets_failed") == 0
    # session 1's processes may come from the pool filled at start-up (not counted as started): compare
    assert _counter(metrics, "processes_started") == started_a, "the second session started its own processes"
    calls = upstream.model_calls()[before:]
    assert calls and not [r.agent for r in calls if TOKEN in json.dumps(r.body)]
    assert TOKEN not in worker.log.read_text()
