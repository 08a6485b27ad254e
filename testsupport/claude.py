"""Run the real bundled ``claude`` binary (claude-agent-sdk's CLI) headless against a local endpoint.

Verified with the bundled CLI 2.1.332 (claude-agent-sdk 0.2.189): ``claude -p PROMPT --output-format json
--system-prompt S --tools "" --strict-mcp-config --mcp-config JSON --allowedTools ... --permission-mode
bypassPermissions --max-turns N --no-session-persistence`` works offline against
``ANTHROPIC_BASE_URL``; as root, ``bypassPermissions`` needs ``IS_SANDBOX=1``. The environment below
makes requests plain (DESIGN.md, "Verified facts"; the settings come from ``launcher.runner.claude_env``, which
the agent runner uses too).

Usage::

    with ScriptedUpstream({"coach": [Text("hello")]}) as up:
        result = run_claude_headless("hi", base_url=up.base_url, headers={"x-coach-agent": "coach"})
        assert result.result == "hello"
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from launcher.runner.claude_env import PLAIN_REQUEST_ENV

from .errors import ClaudeRunError

__all__ = [
    "PLAIN_REQUEST_ENV",
    "ClaudeResult",
    "claude_binary_path",
    "claude_command",
    "plain_claude_env",
    "run_claude_headless",
    "run_claude_headless_async",
]

_DROPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_CONFIG_DIR", "CLAUDECODE", "CLAUDE_AGENT_SDK")


def claude_binary_path() -> Path:
    """Path of the ``claude`` binary bundled in claude-agent-sdk (``.../_bundled/claude``).

    Raises :class:`ClaudeRunError` (code ``claude_binary_missing``) if the SDK or binary is absent.
    """
    try:
        import claude_agent_sdk
    except ImportError as exc:  # pragma: no cover - dependency of the distribution
        raise ClaudeRunError(
            "claude-agent-sdk is not installed; pip install claude-agent-sdk", code="claude_binary_missing"
        ) from exc
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ClaudeRunError(
            f"bundled claude binary not found or not executable at {path}; "
            "reinstall claude-agent-sdk (the wheel ships it)",
            code="claude_binary_missing",
        )
    return path


def plain_claude_env(
    base_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    max_output_tokens: int | None = None,
    home: str | os.PathLike[str] | None = None,
    max_retries: int | None = 0,
    api_key: str = "test-key",
    inherit: bool = True,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a ``claude`` process talking to ``base_url`` with plain requests.

    Args:
        base_url: the Anthropic-compatible endpoint (``ANTHROPIC_BASE_URL``), e.g. the proxy or the
            scripted upstream's ``base_url``.
        headers: sent on every model request via ``ANTHROPIC_CUSTOM_HEADERS`` ("Name: value" lines),
            e.g. ``{"x-coach-agent": "shadow", "x-coach-turn": "3"}``.
        max_output_tokens: ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` (caps ``max_tokens`` of each request).
        home: directory used as ``HOME`` and parent of ``CLAUDE_CONFIG_DIR`` (a fresh temp dir if None)
            so runs never read or write the user's Claude config.
        max_retries: ``CLAUDE_CODE_MAX_RETRIES``. Default 0: a scripted ``Error`` fails the run at once.
            Measured with CLI 2.1.332: the CLI's own default retries a 5xx about ten times with
            exponential backoff (8 attempts took > 100 s); with 2 retries the waits were ~0.7 s and ~1.2 s.
            None leaves the CLI default.
        api_key: ``ANTHROPIC_API_KEY`` (any value works against a fake endpoint).
        inherit: start from ``os.environ`` minus any ``ANTHROPIC_*``/``CLAUDE_CODE_*``/``CLAUDECODE``
            variables (True), or from ``PATH`` only (False).
        extra: more variables, applied last.

    Returns a complete environment mapping (usable for ``subprocess`` and ``ClaudeAgentOptions(env=...)``).
    Raises ``ValueError`` for a header name or value containing a newline or a colon in the name.
    """
    if inherit:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_PREFIXES)}
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    home_dir = Path(home) if home is not None else Path(tempfile.mkdtemp(prefix="coach-claude-home-"))
    config_dir = home_dir / ".claude"
    config_dir.mkdir(parents=True, exist_ok=True)
    env.update(PLAIN_REQUEST_ENV)
    env.update(
        {
            "IS_SANDBOX": "1",
            "HOME": str(home_dir),
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "ANTHROPIC_BASE_URL": base_url.rstrip("/"),
            "ANTHROPIC_API_KEY": api_key,
        }
    )
    if headers:
        lines = []
        for name, value in headers.items():
            if "\n" in name or "\n" in str(value) or ":" in name:
                raise ValueError(f"header {name!r} must not contain newlines (or ':' in its name)")
            lines.append(f"{name}: {value}")
        env["ANTHROPIC_CUSTOM_HEADERS"] = "\n".join(lines)
    if max_output_tokens is not None:
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(int(max_output_tokens))
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(int(max_retries))
    if extra:
        env.update(extra)
    return env


@dataclass
class ClaudeResult:
    """Outcome of one headless run.

    Attributes:
        result: the final assistant text (``result`` of the JSON output; "" if absent).
        is_error: the CLI's own error flag; returncode: process exit status.
        data: the whole parsed JSON result object (``num_turns``, ``usage``, ``duration_ms``, ...).
        wall_s: wall-clock seconds from spawn to exit; duration_ms: the CLI's own measure (None if absent).
    """

    result: str
    is_error: bool
    returncode: int
    data: dict[str, Any]
    wall_s: float
    stdout: str = ""
    stderr: str = ""
    command: list[str] = field(default_factory=list)

    @property
    def num_turns(self) -> int:
        return int(self.data.get("num_turns") or 0)

    @property
    def session_id(self) -> str | None:
        value = self.data.get("session_id")
        return str(value) if value else None

    @property
    def duration_ms(self) -> float | None:
        value = self.data.get("duration_ms")
        return float(value) if isinstance(value, int | float) else None

    @property
    def startup_overhead_s(self) -> float | None:
        """Wall time not spent inside the CLI's measured run (process start, load, exit)."""
        return None if self.duration_ms is None else self.wall_s - self.duration_ms / 1000.0


def claude_command(
    prompt: str,
    *,
    mcp_config: Mapping[str, Any] | None = None,
    system_prompt: str | None = "You are a test agent. Follow the user's instructions.",
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    builtin_tools: Sequence[str] | None = (),
    max_turns: int | None = 8,
    model: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The argv of a headless run (see :func:`run_claude_headless` for the arguments)."""
    cmd = [
        str(claude_binary_path()),
        "-p",
        prompt,
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
        "--no-session-persistence",
    ]
    if system_prompt is not None:
        cmd += ["--system-prompt", system_prompt]
    if builtin_tools is not None:
        cmd += ["--tools", ",".join(builtin_tools)]
    cmd += ["--strict-mcp-config", "--mcp-config", json.dumps(dict(mcp_config or {"mcpServers": {}}))]
    if allowed_tools:
        cmd += ["--allowedTools", ",".join(allowed_tools)]
    if disallowed_tools:
        cmd += ["--disallowedTools", ",".join(disallowed_tools)]
    if max_turns is not None:
        cmd += ["--max-turns", str(max_turns)]
    if model is not None:
        cmd += ["--model", model]
    cmd += list(extra_args)
    return cmd


def run_claude_headless(
    prompt: str,
    *,
    base_url: str,
    mcp_config: Mapping[str, Any] | None = None,
    system_prompt: str | None = "You are a test agent. Follow the user's instructions.",
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    builtin_tools: Sequence[str] | None = (),
    cwd: str | os.PathLike[str] | None = None,
    timeout_s: float = 60.0,
    headers: Mapping[str, str] | None = None,
    max_output_tokens: int | None = None,
    max_turns: int | None = 8,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    check: bool = True,
) -> ClaudeResult:
    """Run ``claude -p PROMPT --output-format json`` against ``base_url`` and parse its result.

    Args:
        prompt: the user message.
        base_url: Anthropic-compatible endpoint (scripted upstream or proxy).
        mcp_config: ``{"mcpServers": {name: {...}}}`` passed with ``--strict-mcp-config`` (only these
            servers; none if None). Tool names are then ``mcp__<name>__<tool>``.
        system_prompt: replaces Claude Code's system prompt (None keeps the default ~12k-token prompt).
        allowed_tools: ``--allowedTools`` (e.g. ``["mcp__coachboard__write_persona"]``).
        disallowed_tools: ``--disallowedTools`` (hides tools from the model).
        builtin_tools: ``--tools``: built-in tools to keep (``()`` => none; None => Claude Code's default).
        cwd: working directory (a project's ``.claude/`` there is read by default setting sources).
        timeout_s: the process group is killed past it (:class:`ClaudeRunError`, code ``claude_timeout``).
        headers / max_output_tokens: see :func:`plain_claude_env`.
        env: a full environment to use instead of ``plain_claude_env(base_url, ...)``.
        check: raise :class:`ClaudeRunError` (code ``claude_failed``) on non-zero exit or ``is_error``.

    Returns a :class:`ClaudeResult`. Raises :class:`ClaudeRunError` (codes ``claude_binary_missing``,
    ``claude_timeout``, ``claude_bad_output``, ``claude_failed``).
    """
    cmd = claude_command(
        prompt,
        mcp_config=mcp_config,
        system_prompt=system_prompt,
        allowed_tools=allowed_tools,
        disallowed_tools=disallowed_tools,
        builtin_tools=builtin_tools,
        max_turns=max_turns,
        model=model,
        extra_args=extra_args,
    )
    run_env = (
        dict(env)
        if env is not None
        else plain_claude_env(base_url, headers=headers, max_output_tokens=max_output_tokens)
    )
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=run_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        stdout, stderr = proc.communicate()
        raise ClaudeRunError(
            f"claude did not finish within {timeout_s} s",
            code="claude_timeout",
            retryable=True,
            returncode=None,
            stderr_tail=stderr[-4000:],
        ) from None
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    wall = time.monotonic() - started
    data = _parse_result(stdout)
    if data is None:
        if check:
            raise ClaudeRunError(
                f"claude exited {proc.returncode} without a JSON result; stdout tail: {stdout[-500:]!r}",
                code="claude_bad_output",
                returncode=proc.returncode,
                stderr_tail=stderr[-4000:],
            )
        data = {}
    result = ClaudeResult(
        result=str(data.get("result") or ""),
        is_error=bool(data.get("is_error")),
        returncode=proc.returncode,
        data=data,
        wall_s=wall,
        stdout=stdout,
        stderr=stderr,
        command=cmd,
    )
    if check and (proc.returncode != 0 or result.is_error):
        raise ClaudeRunError(
            f"claude failed (exit {proc.returncode}, is_error={result.is_error}, "
            f"subtype={data.get('subtype')!r}): {result.result[:300]!r}",
            code="claude_failed",
            returncode=proc.returncode,
            stderr_tail=stderr[-4000:],
        )
    return result


async def run_claude_headless_async(prompt: str, **kwargs: Any) -> ClaudeResult:
    """:func:`run_claude_headless` in a worker thread (same arguments), for async tests."""
    return await anyio.to_thread.run_sync(lambda: run_claude_headless(prompt, **kwargs))


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None
