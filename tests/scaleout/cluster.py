"""Helpers of the scale-out tests: a coach.toml for PostgreSQL + RabbitMQ + the scripted upstream, and
``coach worker`` / ``coach run --broker`` as real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.harness import REPO

READY = "coach worker: ready"


def write_config(
    tmp: Path,
    *,
    upstream_url: str,
    pg: Any,
    broker_url: str,
    prefix: str,
    delivery_limit: int = 3,
    lease_ttl_s: float = 15.0,  # the product's default; the fail-over tests pass 3 s (a lease renewed
    # every ttl/3 on a busy 2-core CI machine missed 3 s once, and the turn ran twice: CI of stop 26)
    sessions: int = 1,
    name: str = "coach.toml",
) -> Path:
    cfg = tmp / name
    cfg.write_text(
        f'[data]\ndir = "{tmp / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
        f'[upstream]\nurl = "{upstream_url}"\nkind = "anthropic"\n'
        f'[broker]\nurl = "{broker_url}"\nprefix = "{prefix}"\ndelivery_limit = {delivery_limit}\n'
        f"lease_ttl_s = {lease_ttl_s}\nsessions = {sessions}\nmetrics_port = 0\n"
    )
    return cfg


def coach(*args: str) -> list[str]:
    return [sys.executable, "-c", "from launcher.cli import app; app()", *args]


@dataclass
class WorkerProc:
    """One ``coach worker`` subprocess; its stdout lines collected, its stderr in ``log``."""

    cfg: Path
    name: str
    tmp: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[str] | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.tmp / f"{self.name}.log"

    @property
    def data_dir(self) -> Path:
        return self.tmp / f"data-{self.name}"

    def start(self, timeout: float = 90) -> WorkerProc:
        env = {**os.environ, "COACH_DATA_DIR": str(self.data_dir), "PYTHONPATH": str(REPO), **self.env}
        self.lines = []
        errf = open(self.log, "a")
        self.proc = subprocess.Popen(
            coach("worker", "--config", str(self.cfg), "--worker-id", self.name),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=errf,
            text=True,
            env=env,
        )
        errf.close()
        out = self.proc.stdout
        assert out is not None
        threading.Thread(target=lambda: [self.lines.append(line) for line in out], daemon=True).start()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(line.startswith(READY) for line in self.lines):
                return self
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"worker {self.name} exited {self.proc.returncode}: {self.log.read_text()[-3000:]}"
                )
            time.sleep(0.1)
        raise AssertionError(f"worker {self.name} not ready in {timeout}s: {self.log.read_text()[-3000:]}")

    @property
    def metrics_url(self) -> str:
        line = next(x for x in self.lines if x.startswith(READY))
        return line.rsplit("metrics=", 1)[1].strip()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def front(
    cfg: Path,
    message: str,
    user: str,
    session: str,
    *,
    job_id: str | None = None,
    timeout: float = 300,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """``coach run --broker ... --json`` as a subprocess; returns the JSON document."""
    args = ["run", message, "-u", user, "-s", session, "--json", "--config", str(cfg)]
    if job_id:
        args += ["--job-id", job_id]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if data_dir is not None:
        env["COACH_DATA_DIR"] = str(data_dir)
    p = subprocess.run(coach(*args), cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return dict(json.loads(p.stdout))


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """A result document without what differs between two runs of the same turn: timings and tokens."""
    out = {k: v for k, v in doc.items() if not k.endswith("_s")}
    out["agents"] = {
        n: {k: v for k, v in a.items() if k in ("agent", "status", "error", "attempts")}
        for n, a in doc["agents"].items()
    }
    return out
