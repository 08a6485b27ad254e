"""Running pip to build llama.cpp: progress at least every few seconds (ninja's ``[n/N]`` step or pip's
latest step), the full output in a log file, and on failure the output's tail with what to do."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from launcher.errors import LauncherError

__all__ = ["BuildError", "pip_run", "say"]

_NINJA = re.compile(r"\[(\d+)/(\d+)\]\s*(.*)")
_PIP_STEP = re.compile(
    r"^(Collecting|Downloading|Using cached|Processing|Building wheel|Created wheel|Stored in directory|"
    r"Installing|Successfully|Preparing metadata|Getting requirements|Requirement already)"
)
_HEARTBEAT_S = 3.0


class BuildError(LauncherError):
    """The embedded model server could not be installed or does not run. ``code``: ``bad_spec``,
    ``build_failed``, ``not_runnable``, ``model_missing``; the message says what to do. Not retryable
    without a fix."""

    code = "embedded_build_error"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, retryable=False)


def say(msg: str) -> None:
    """One progress line on stdout, prefixed ``[embedded]``."""
    print(f"[embedded] {msg}", flush=True)


def _fmt(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:d}:{s:02d}"


class _Progress:
    """Reads pip's merged output on a thread; keeps the latest step and a tail for error reports."""

    def __init__(self, stream, log) -> None:  # type: ignore[no-untyped-def]
        self.step = "starting pip"
        self.ninja: tuple[int, int] | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=60)
        self.changed = True
        self._stream = stream
        self._log = log
        self._thread = threading.Thread(target=self._run, name="embedded-build-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for raw in self._stream:
            line = raw.rstrip()
            self._log.write(raw)
            if not line.strip():
                continue
            self.tail.append(line)
            m = _NINJA.search(line)
            if m:
                done, total, what = int(m.group(1)), int(m.group(2)), m.group(3)
                self.ninja = (done, total)
                obj = what.split()[-1] if what else ""
                self.step = (
                    f"compiling llama.cpp [{done}/{total}] {100 * done // max(total, 1)}% {Path(obj).name}"
                )
                self.changed = True
            elif _PIP_STEP.match(line.strip()):
                self.step = line.strip()[:120]
                self.changed = True
            elif line.lstrip().startswith("-- ") and self.ninja is None:
                self.step = f"configuring llama.cpp (cmake): {line.strip()[3:90]}"
                self.changed = True

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def pip_run(cmd: list[str], spec: str, env: dict[str, str] | None = None) -> None:
    """Run a ``pip ... -v`` command building ``spec``, printing progress at least every ``_HEARTBEAT_S``
    seconds; a failure raises BuildError("build_failed") with the output's tail and what to do."""
    log_path = Path(tempfile.gettempdir()) / f"coachboard-embedded-build-{os.getpid()}.log"
    env = env if env is not None else dict(os.environ)
    say(f"running: {' '.join(cmd)}")
    say(
        f"CMAKE_ARGS={env.get('CMAKE_ARGS', '(unset)')!s}  "
        f"LLAMA_CPP_BUILD_JOBS={env.get('LLAMA_CPP_BUILD_JOBS', '(unset)')}  full log: {log_path}"
    )
    start = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            bufsize=1,
            env=env,
        )
        assert proc.stdout is not None
        progress = _Progress(proc.stdout, log)
        last_print = 0.0
        try:
            while True:
                try:
                    proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if (progress.changed and now - last_print >= 1.0) or now - last_print >= _HEARTBEAT_S:
                    say(f"{_fmt(now - start)} {progress.step}")
                    progress.changed = False
                    last_print = now
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait(timeout=30)
            raise
        progress.join(timeout=5)
    elapsed = _fmt(time.monotonic() - start)
    if proc.returncode != 0:
        tail = "\n".join(progress.tail)
        raise BuildError(
            "build_failed",
            f"building {spec} failed after {elapsed} (exit {proc.returncode}). Last lines:\n{tail}\n\n"
            f"Full log: {log_path}\nWhat to do: the build needs a C++17 compiler (g++ or clang++), and, with "
            "CMAKE_ARGS='-G Ninja ...', the `ninja` program (apt-get install build-essential ninja-build, or "
            "unset CMAKE_ARGS to use make); cmake comes from PyPI, so PyPI must be reachable. Fewer parallel "
            "jobs (LLAMA_CPP_BUILD_JOBS=1) help when the compiler runs out of memory. Then rerun `make embedded`.",
        )
    say(f"{elapsed} pip finished")
