"""``coach run --broker`` stopped while it follows its job: the job is not cancelled (it runs on a worker
all the same), so the message names the job id and the command that follows it, instead of "the turn was
cancelled and every agent process stopped" (no agent runs in a front end)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from blackboard._pg_jobs import TurnJobs
from testsupport.child_output import coach_argv
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("sig", "code", "said"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]
)
def test_a_front_end_stopped_while_following_names_its_job_which_stays_queued(
    tmp_path: Path, sig: str, code: int, said: str
) -> None:
    with fresh_schema("rb") as pg, fresh_prefix("run") as (url, prefix):  # no worker consumes this prefix
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
            f'[broker]\nurl = "{url}"\nprefix = "{prefix}"\n'
        )
        proc = subprocess.Popen(
            coach_argv("run", "a turn no worker takes", "-u", "u1", "-s", "s1", "--config", str(cfg)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"},
        )
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
            while not rows and proc.poll() is None:  # the row is stored within moments of the start
                rows = jobs.all()
            proc.send_signal(getattr(signal, sig))
            out, _ = proc.communicate(timeout=60)
            rows = jobs.all()
        finally:
            jobs.close()
            if proc.poll() is None:
                proc.kill()
    flat = " ".join(out.split())
    assert proc.returncode == code, out
    assert [r.state for r in rows] == ["queued"], "the job is left for a worker"
    job = rows[0].job_id
    assert f"{said}" in flat and f"job {job} is not cancelled" in flat
    assert f"coach run MESSAGE -u u1 -s s1 --broker URL --job-id {job}" in flat
    assert "every agent process stopped" not in flat and "Traceback" not in out


def test_following_a_job_with_other_text_is_refused_and_keeps_the_job(tmp_path: Path) -> None:
    """``--job-id`` of a stored job with another message: before, the front end followed the stored job
    and the new text was dropped without a word; now it is a clear error (exit 2) and the job is kept."""
    with fresh_schema("rb") as pg, fresh_prefix("run") as (url, prefix):
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
            f'[broker]\nurl = "{url}"\nprefix = "{prefix}"\n'
        )
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            jobs.create("job-1", "u1", "s1", "the first message")
            done = subprocess.run(
                [sys.executable, "-c", "from launcher.cli import app; app()", "run", "quite another message",
                 "-u", "u1", "-s", "s1", "--job-id", "job-1", "--config", str(cfg)],
                capture_output=True, text=True, timeout=90,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"},
            )  # fmt: skip
            rows = jobs.all()
            kept = jobs.message("job-1")
        finally:
            jobs.close()
    flat = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, flat
    assert "job id job-1 was sent with another message" in flat and "Traceback" not in flat
    assert "quite another message" not in flat and "the first message" not in flat  # no user text
    assert [r.job_id for r in rows] == ["job-1"] and kept == "the first message"
