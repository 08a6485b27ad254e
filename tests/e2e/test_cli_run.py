"""``coach run`` as a real subprocess: in-process proxy + MCP HTTP server, real ``claude`` processes,
SQLite, against the scripted upstream running in this test process. Also: Ctrl-C mid-turn stops every
agent process and exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import REPO
from tests.launcher.fakes import OUTPUT_TOOLS
from testsupport.child_output import FOREGROUND_SIGINT, coach_argv
from testsupport.procs import processes_with
from testsupport.script import Hang
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def _config(tmp_path: Path, up: ScriptedUpstream) -> Path:
    cfg = tmp_path / "coach.toml"
    # Deadlines of the shipped files are kept; the machine may be slow, so only the data dir is set.
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n[upstream]\nurl = "{up.base_url}"\nkind = "anthropic"\n'
    )
    return cfg


def _coach(*args: str) -> list[str]:
    return coach_argv(*args)


def test_coach_run_json_document(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    cfg = _config(tmp_path, upstream)
    p = subprocess.run(
        _coach("run", "I want to run more", "-u", "u1", "-s", "s1", "--json", "--config", str(cfg)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["turn_id"] == "t000001" and doc["crisis_tier"] == 0
    assert doc["coach_reply"].startswith("It sounds like running matters")
    assert doc["synthesis"] and doc["synthesis_source"] == "model"
    for name in OUTPUT_TOOLS:
        a = doc["agents"][name]
        assert a["status"] == "ok" and a["input_tokens"] > 0 and a["output_tokens"] > 0, (name, a)
        assert 0 <= a["started_s"] <= a["first_token_s"] <= a["finished_s"]
    assert doc["agents"]["pineal"]["started_s"] >= max(
        doc["agents"][n]["finished_s"] for n in OUTPUT_TOOLS if n != "pineal"
    )
    assert not processes_with(str(tmp_path / "data" / "claude-home")), "agent processes left behind"


def test_ctrl_c_mid_turn_stops_every_agent_process(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    for a in ("shadow", "persona", "plasticity", "stability"):
        upstream.set_script(a, lambda r: Hang())
    cfg = _config(tmp_path, upstream)
    proc = subprocess.Popen(
        _coach("run", "hello", "-u", "u1", "-s", "s1", "--config", str(cfg)),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert upstream.wait_for(
            lambda rs: sum(1 for r in rs if r.agent in ("shadow", "persona", "plasticity", "stability")) >= 4,
            120,
        )
        marker = str(tmp_path / "data" / "claude-home")
        assert processes_with(marker), "agent processes are running"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err
    assert not processes_with(marker), "agent processes left behind after Ctrl-C"


def test_coach_child_gets_default_sigint_even_when_the_suite_ignores_it() -> None:
    """The suite run as a background job (SIGINT ignored, inherited by every child) made the Ctrl-C test
    fail: the child of _coach must still turn SIGINT into KeyboardInterrupt."""
    probe = "import signal, sys; sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 3)"
    assert _coach()[2].startswith(FOREGROUND_SIGINT)
    outer = (
        "import signal, subprocess, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        f"sys.exit(subprocess.call([sys.executable, '-c', {probe!r}]))"
    )
    assert subprocess.run([sys.executable, "-c", outer], timeout=60).returncode == 3, "SIG_IGN not inherited"
    fixed = outer.replace("'-c', ", f"'-c', {FOREGROUND_SIGINT!r} + ")
    assert subprocess.run([sys.executable, "-c", fixed], timeout=60).returncode == 0
