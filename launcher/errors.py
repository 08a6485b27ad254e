"""The launcher's error hierarchy: every error is a :class:`LauncherError` with a stable ``code``.

Callers branch on ``code`` / ``retryable`` (or the subclass), never on message text. Messages say what
was wrong and what to do; they never contain a user's message text.
"""

from __future__ import annotations

__all__ = [
    "AgentFailedError",
    "DataDirError",
    "LauncherError",
    "SessionError",
    "StackError",
]


class LauncherError(Exception):
    """Root of all launcher errors.

    Attributes:
        code: stable machine-readable identifier (e.g. ``"agent_crashed"``).
        retryable: True when the same call may succeed if repeated.
    """

    code: str = "launcher_error"
    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return self.message


class AgentFailedError(LauncherError):
    """One agent's Claude Code process failed during a turn.

    Attributes:
        agent: the agent name.
        status: ``"error"`` (the process answered with an error, e.g. the upstream returned 5xx) or
            ``"crashed"`` (the process died or its stream broke).
    Codes: ``upstream_error`` (retryable for 5xx/429/connection problems), ``agent_crashed``
    (retryable: a fresh process is started), ``agent_error`` (not retryable).
    """

    code = "agent_error"

    def __init__(self, agent: str, message: str, *, status: str, code: str, retryable: bool) -> None:
        super().__init__(f"agent {agent}: {message}", code=code, retryable=retryable)
        self.agent = agent
        self.status = status


class StackError(LauncherError):
    """The in-process proxy / MCP HTTP server could not be started (port, config or import problem)."""

    code = "stack_error"


class SessionError(LauncherError):
    """A session could not be closed or compacted (bad ids, store unavailable, repeated CAS conflicts)."""

    code = "session_error"


class DataDirError(LauncherError):
    """The data directory cannot be used (a file, not writable; code ``data_dir_unusable``) or the
    blackboard in it cannot be opened (corrupt file; code ``store_unavailable``). Nothing is changed."""

    code = "data_dir_unusable"
