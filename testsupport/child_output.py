"""Reading a child process's output line by line in tests, and stopping it like a user would.

Usage::

    proc = subprocess.Popen([...], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = OutputLines(proc)
    url = out.expect(r"serving on (\\S+)").group(1)    # waits, fails the test with the output so far
    ...
    interrupt(proc)                                    # SIGINT, then SIGKILL after ``grace_s``
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

__all__ = ["FOREGROUND_SIGINT", "OutputLines", "coach_argv", "interrupt", "start_coach_serve"]

# Ctrl-C reaches a foreground job whose SIGINT is at its default. A shell without job control
# (``make test > log &``, nohup, a CI runner) starts background jobs with SIGINT *ignored*, pytest inherits
# that, and so would a ``coach`` child: Python then installs no KeyboardInterrupt handler (rightly: a
# background job must survive the terminal's Ctrl-C), and a test's SIGINT is a no-op. A child that a test
# interrupts is put back in the foreground state first, whatever this process inherited.
FOREGROUND_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "


def coach_argv(*args: str) -> list[str]:
    """The command line of ``coach ARGS`` run by this interpreter, with SIGINT at its default
    (:data:`FOREGROUND_SIGINT`), for a test that sends it SIGINT."""
    return [sys.executable, "-c", FOREGROUND_SIGINT + "from launcher.cli import app; app()", *args]


class OutputLines:
    """A thread pumps ``proc.stdout`` (text mode) into a queue; :meth:`expect` waits for a matching line.
    ``seen`` holds every line read so far (for failure messages)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.q: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def expect(self, pattern: str, timeout_s: float = 30.0) -> re.Match[str]:
        """The first line (after those already seen) matching ``pattern`` within ``timeout_s`` seconds;
        fails the test (``pytest.fail``) when the child's output ends or the time runs out first."""
        deadline = time.monotonic() + timeout_s
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            try:
                line = self.q.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                pytest.fail(f"the child exited before {pattern!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            m = rx.search(line)
            if m:
                return m
        pytest.fail(f"no line matching {pattern!r} within {timeout_s}s:\n" + "\n".join(self.seen))


def interrupt(proc: subprocess.Popen[str], grace_s: float = 15.0) -> int:
    """Stop ``proc`` as Ctrl-C would: SIGINT, then SIGKILL if it is still running after ``grace_s``
    seconds. Returns its exit status (negative: the signal that ended it). A no-op if it already exited."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(10)


def start_coach_serve(config: Path, *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``coach serve --config CONFIG`` on free ports as a child (this interpreter, ``cwd`` = the repository),
    unbuffered, stdout and stderr merged as text; ``COACH_*`` variables of ``env`` (default this process's
    environment) are dropped so only the file configures it. Read it with :class:`OutputLines`, stop it
    with :func:`interrupt`."""
    base = {k: v for k, v in (os.environ if env is None else env).items() if not k.startswith("COACH_")}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from launcher.cli import app; app()",
            "serve",
            "--config",
            str(config),
            "--proxy-port",
            "0",
            "--mcp-port",
            "0",
        ],
        cwd=cwd,
        env={**base, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
