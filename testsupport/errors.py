"""Errors raised by the test-support package.

One hierarchy rooted in :class:`TestSupportError`, each with a stable ``code`` and a ``retryable`` flag
(callers branch on fields, never on message text).
"""

from __future__ import annotations

__all__ = [
    "ClaudeRunError",
    "ScriptError",
    "TestSupportError",
    "UnknownLatencyModelError",
    "UpstreamStartError",
]


class TestSupportError(Exception):
    """Base class of every testsupport error.

    Attributes:
        code: stable machine-readable code (e.g. ``"unknown_latency_model"``).
        retryable: True when retrying the same call may succeed.
    """

    __test__ = False  # not a pytest test class despite the name
    code: str = "testsupport_error"
    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable


class UnknownLatencyModelError(TestSupportError):
    """A latency model name that is not in :data:`testsupport.latency.LATENCY_MODELS`."""

    code = "unknown_latency_model"


class ScriptError(TestSupportError):
    """A script or step that cannot be played (wrong type, bad arguments JSON)."""

    code = "invalid_script"


class UpstreamStartError(TestSupportError):
    """The scripted upstream server did not start (or stop) within its deadline."""

    code = "upstream_start_failed"
    retryable = True


class ClaudeRunError(TestSupportError):
    """A headless ``claude`` run failed: binary missing, non-zero exit, timeout or unparsable output.

    Attributes:
        returncode: process exit status (None on timeout or when it never started).
        stderr_tail: the last few KiB of the process's stderr.
    """

    code = "claude_run_failed"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        returncode: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, code=code, retryable=retryable)
        self.returncode = returncode
        self.stderr_tail = stderr_tail
