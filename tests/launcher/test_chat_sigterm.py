"""In-process ``coach chat`` stopped by SIGTERM (``timeout``, systemd, ``docker stop``) mid-session: the
same clean stop as Ctrl-C, with its own line and exit 143 (it was killed at once, exit -15, printing
nothing). Real ``claude`` agents against the scripted upstream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]


def test_sigterm_stops_the_chat_like_ctrl_c_and_says_the_session_is_open(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n[upstream]\nurl = "{upstream.base_url}"\n[agents]\nwatch = false\n'
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from launcher.cli import app; app()",
            "chat",
            "-u",
            "u1",
            "-s",
            "s1",
            "--config",
            str(cfg),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "400"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[str] = []
    replied = threading.Event()

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("Coach:"):
                replied.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc.stdin.write("I keep skipping my runs\n")
    proc.stdin.flush()
    try:
        assert replied.wait(180), "".join(lines)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(30)  # the rest of the output, up to EOF
    out = " ".join("".join(lines).split())
    assert code == 143, out
    assert "terminated (SIGTERM): agent processes stopped; session s1 is still open" in out
    assert "Traceback" not in out
