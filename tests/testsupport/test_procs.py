"""testsupport.procs: processes found, and stopped, by a marker in their environment."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from testsupport import kill_processes_with, processes_with


def test_a_process_is_found_by_its_environment_and_killed_only_with_its_marker() -> None:
    marker = f"/tmp/marker-{uuid.uuid4().hex}"
    other = f"/tmp/marker-{uuid.uuid4().hex}"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    mine = subprocess.Popen(sleeper, env={**os.environ, "COACH_TEST_MARKER": marker})
    theirs = subprocess.Popen(sleeper, env={**os.environ, "COACH_TEST_MARKER": other})
    try:
        assert processes_with(marker) == [mine.pid]
        assert kill_processes_with(marker) == [mine.pid]
        assert mine.wait(timeout=10) == -9
        assert processes_with(marker) == [] and theirs.poll() is None
    finally:
        for p in (mine, theirs):
            p.kill()
            p.wait()
