"""The scripted upstream in a child process (``python -m testsupport``), so a benchmark's own event
loop and GIL do not distort the modelled timings.

Usage::

    with ScriptedUpstreamProcess({"coach": [Text("hi")]}, latency="qwen3-30b-a3b@2x4090") as up:
        ...  # point the proxy / claude at up.base_url
        records = up.requests()   # list of dicts (RecordedRequest.to_json())
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from ._lifecycle import StartStop
from .errors import UpstreamStartError
from .latency import LatencyModel
from .script import Step, step_to_json

__all__ = ["ScriptedUpstreamProcess"]

_REPO_ROOT = Path(__file__).resolve().parent.parent


class ScriptedUpstreamProcess(StartStop):
    """Start/stop a ``python -m testsupport`` child. Scripts must be step lists (no callables).

    Args: as :class:`~testsupport.upstream.ScriptedUpstream` (``latency`` by name), plus
        ``start_timeout_s`` (raises :class:`UpstreamStartError` past it) and ``python`` (interpreter).
    """

    def __init__(
        self,
        scripts: Mapping[str, Sequence[Step]] | None = None,
        *,
        latency: str | LatencyModel = "instant",
        time_scale: float = 1.0,
        default_text: str = "ok",
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout_s: float = 20.0,
        python: str = sys.executable,
    ) -> None:
        self.scripts = {agent: [step_to_json(s) for s in steps] for agent, steps in (scripts or {}).items()}
        self.latency = latency.name if isinstance(latency, LatencyModel) else latency
        self.time_scale = time_scale
        self.default_text = default_text
        self.host = host
        self.port = port
        self.start_timeout_s = start_timeout_s
        self.python = python
        self._proc: subprocess.Popen[str] | None = None
        self._url: str | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.log_path: Path | None = None

    @property
    def base_url(self) -> str:
        if self._url is None:
            raise UpstreamStartError("upstream process not started; call start() first")
        return self._url

    def start(self) -> str:
        """Spawn the child, wait for its ``LISTENING`` line; returns the base URL."""
        if self._url is not None:
            return self._url
        self._tmp = tempfile.TemporaryDirectory(prefix="scripted-upstream-")
        scripts_file = Path(self._tmp.name) / "scripts.json"
        scripts_file.write_text(json.dumps(self.scripts))
        cmd = [
            self.python,
            "-m",
            "testsupport",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--latency",
            self.latency,
            "--time-scale",
            str(self.time_scale),
            "--default-text",
            self.default_text,
            "--scripts",
            str(scripts_file),
        ]
        self.log_path = Path(self._tmp.name) / "stderr.log"
        with self.log_path.open("w") as err:
            self._proc = subprocess.Popen(
                cmd, cwd=_REPO_ROOT, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True
            )
        line: list[str] = []
        reader = threading.Thread(
            target=lambda: line.append(
                self._proc.stdout.readline() if self._proc and self._proc.stdout else ""
            ),
            daemon=True,
        )
        reader.start()
        reader.join(self.start_timeout_s)
        if not line or not line[0].startswith("LISTENING "):
            detail = self.log_path.read_text()[-2000:] if self.log_path and self.log_path.exists() else ""
            self.stop()
            raise UpstreamStartError(
                f"scripted upstream process did not start within {self.start_timeout_s} s "
                f"(first line {line[:1]!r}; stderr tail {detail!r})"
            )
        self._url = line[0].split()[1]
        return self._url

    def requests(self) -> list[dict[str, Any]]:
        """Every recorded request (``RecordedRequest.to_json()`` dicts, child's monotonic clock)."""
        return list(httpx.get(self.base_url + "/_scripted/requests", timeout=10).json())

    def set_scripts(self, scripts: Mapping[str, Sequence[Step]]) -> None:
        """Replace the scripts of the given agents in the running child."""
        body = {agent: [step_to_json(s) for s in steps] for agent, steps in scripts.items()}
        httpx.post(self.base_url + "/_scripted/scripts", json=body, timeout=10).raise_for_status()

    def reset(self) -> None:
        httpx.post(self.base_url + "/_scripted/reset", timeout=10).raise_for_status()

    def stop(self) -> None:
        """Terminate the child (kill after 5 s) and clean up. Idempotent."""
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
            if self._proc.stdout is not None:
                with contextlib.suppress(OSError):
                    self._proc.stdout.close()
            self._proc = None
        self._url = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
