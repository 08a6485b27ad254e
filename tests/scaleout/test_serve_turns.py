"""``coach serve``'s ``POST /v1/turns`` with ``[broker] url``: the turn runs on a ``coach worker``; the answer
is server-sent events, the Coach's reply first, then the synthesis (real RabbitMQ, PostgreSQL, claude)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.harness import REPO
from tests.scaleout.cluster import WorkerProc, coach, write_config
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]


def _events(resp: httpx.Response) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    event = None
    for line in resp.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event:
            out.append((event, json.loads(line[6:])))
    return out


def test_post_a_turn_get_the_coach_reply_then_the_synthesis_as_events(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    with fresh_schema("sv") as pg, fresh_prefix("serve") as (url, prefix):
        cfg = write_config(tmp_path, upstream_url=upstream.base_url, pg=pg, broker_url=url, prefix=prefix)
        cfg.write_text(cfg.read_text() + "turns_port = 0\n")
        worker = WorkerProc(cfg, "w1", tmp_path).start()
        serve_dir = tmp_path / "serve-data"
        env = {**os.environ, "PYTHONPATH": str(REPO), "COACH_DATA_DIR": str(serve_dir)}
        serve = subprocess.Popen(
            coach("serve", "--config", str(cfg), "--proxy-port", "0", "--mcp-port", "0"),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines: list[str] = []
        assert serve.stdout is not None
        threading.Thread(target=lambda: [lines.append(x) for x in serve.stdout], daemon=True).start()  # type: ignore[union-attr]
        try:
            end = time.monotonic() + 60
            while not any("coach serve: ready" in x for x in lines) and time.monotonic() < end:
                assert serve.poll() is None, serve.stderr.read()  # type: ignore[union-attr]
                time.sleep(0.1)
            ready = next(x for x in lines if "coach serve: ready" in x)
            turns_url = ready.split("turns ", 1)[1].split()[0]
            secret = (serve_dir / "mcp_secret").read_text().strip()
            body = {"user": "u1", "session": "s1", "message": "I want to run more", "job_id": "job-sse-1"}
            assert httpx.post(turns_url, json=body, timeout=10).status_code == 401
            with httpx.stream(
                "POST", turns_url, json=body, headers={"authorization": f"Bearer {secret}"}, timeout=300
            ) as resp:
                assert resp.status_code == 200 and resp.headers["content-type"].startswith(
                    "text/event-stream"
                )
                events = _events(resp)
            state = httpx.get(
                f"{turns_url}/job-sse-1", headers={"authorization": f"Bearer {secret}"}, timeout=10
            ).json()
        finally:
            serve.terminate()
            serve.wait(30)
            worker.stop()
    assert [e for e, _ in events] == ["job", "coach_reply", "synthesis"]
    assert events[1][1]["coach_reply"] == events[2][1]["coach_reply"]
    assert events[2][1]["synthesis_source"] == "model" and events[2][1]["turn_id"] == "t000001"
    assert state["state"] == "done" and state["attempts"] == 1
