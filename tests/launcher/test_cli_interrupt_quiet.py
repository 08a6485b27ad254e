"""Ctrl-C while an in-process server has an open request: ``run_async`` (``coach run``/``chat``) ends with
the command's own line, not uvicorn tracebacks. Before the fix, ``coach run`` interrupted while Pineal's
model call was open printed three "ERROR: Exception in ASGI application" / lifespan tracebacks (about
200 lines, each ending in ``asyncio.exceptions.CancelledError``) above ``interrupted: ...``.

SIGTERM, when asked for (``coach run``), is the same clean stop with its own line and exit 143.

Real process, real uvicorn server (the in-process stack's ``_start``), a real HTTP request over a
socket and a real SIGINT; the child restores the default SIGINT handler (a background test run
inherits SIGINT ignored)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, signal, socket, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import anyio
from starlette.applications import Starlette
from starlette.routing import Route
from launcher.cli._common import Terminated, run_async
from launcher.pipeline.stack import _start

MODE = sys.argv[1]


async def main():
    arrived = anyio.Event()

    async def endpoint(request):
        arrived.set()
        if MODE == "error":
            raise RuntimeError("a real application error")
        await anyio.sleep_forever()

    app = Starlette(routes=[Route("/", endpoint)])
    async with anyio.create_task_group() as tg:
        server, port = await _start(tg, app, "127.0.0.1", "test server")
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        await arrived.wait()
        if MODE == "error":
            await anyio.to_thread.run_sync(sock.recv, 65536)  # the 500 answer
            sock.close()
            server.should_exit = True
            return "done"
        if MODE == "raise":  # what a turn does when the store fails (a full disk)
            raise OSError("database or disk is full")
        try:
            os.kill(os.getpid(), signal.SIGTERM if MODE == "term" else signal.SIGINT)
            await anyio.sleep_forever()
        finally:
            print("cleaned up", flush=True)  # what the runtime's exit does: stop the agent processes


try:
    print(run_async(main, sigterm=MODE == "term"))
except Terminated:
    print("terminated: stopped", file=sys.stderr)
    sys.exit(143)
except KeyboardInterrupt:
    print("interrupted: stopped", file=sys.stderr)
    sys.exit(130)
except OSError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def _child(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode], cwd=REPO, capture_output=True, text=True, timeout=45
    )


def test_interrupt_with_an_open_request_prints_no_traceback() -> None:
    p = _child("interrupt")
    assert p.returncode == 130, p.stderr[-3000:]
    assert p.stderr.strip() == "interrupted: stopped", p.stderr[-3000:]


def test_sigterm_cancels_like_ctrl_c_runs_the_clean_up_and_says_so() -> None:
    """``coach run`` under ``timeout``/systemd/docker stop: SIGTERM killed it at once (exit -15, no
    message, none of its clean-up ran); with ``sigterm=True`` it is a cancellation like Ctrl-C."""
    p = _child("term")
    assert p.returncode == 143, p.stderr[-3000:]
    assert p.stderr.strip() == "terminated: stopped", p.stderr[-3000:]
    assert "cleaned up" in p.stdout


def test_an_error_raised_with_a_request_open_prints_only_the_error() -> None:
    """The turn's error leaves through the task groups while a model call is open: Starlette's
    lifespan reported its cancellation as an exception-group traceback text (not exc_info)."""
    p = _child("raise")
    assert p.returncode == 2, p.stderr[-3000:]
    assert p.stderr.strip() == "error: database or disk is full", p.stderr[-3000:]


def test_a_real_application_error_is_still_reported() -> None:
    p = _child("error")
    assert p.returncode == 0, p.stderr[-3000:]
    assert (
        "Exception in ASGI application" in p.stderr and "RuntimeError: a real application error" in p.stderr
    )
