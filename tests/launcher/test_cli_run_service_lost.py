"""``coach run --proxy-url/--mcp-url`` whose ``coach serve`` stops during the turn (kill -9 or restart):
the turn still ends (degraded, exit 0, stored), and now a warning on stderr names the agents, the URLs
and the fix. Before, the only trace was the timeline's error column, which showed the first 60
characters, ``agent pineal: Claude Code ended with an error (success): API``, and cut off the cause.

The runtime is replaced at its boundary by the real supervisor over a fake runner whose Pineal fails
with Claude Code's own words for a refused connection (measured: serve killed with kill -9 while
Pineal's model call was open); the URLs are real listening sockets (``coach run`` checks them first)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from blackboard import Blackboard
from launcher.cli import app
from launcher.errors import AgentFailedError
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import FakeRunner, fake_screen, specs

REFUSED = (
    "Claude Code ended with an error (success): API Error: Connection refused — a firewall or proxy may be "
    "blocking it (ECONNREFUSED)"
)


class _ServeGoneRunner(FakeRunner):
    async def run(self, invocation: Any, events: Any) -> Any:
        if invocation.agent == "pineal":
            raise AgentFailedError("pineal", REFUSED, status="error", code="upstream_error", retryable=False)
        return await super().run(invocation, events)


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "coach.toml"
    path.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\nwatch = false\n')

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        board = Blackboard(config.data.dir)
        s = specs()
        try:
            yield type(
                "RT",
                (),
                {"supervisor": Supervisor(board, _ServeGoneRunner(board), lambda: s, screen=fake_screen)},
            )()
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    return path


@pytest.fixture
def listening() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def _run(cfg: Path, *extra: str) -> Any:
    return CliRunner().invoke(
        app, ["run", "hi", "-u", "u1", "-s", "s1", "--config", str(cfg), *extra], env={"COLUMNS": "200"}
    )


def test_serve_gone_mid_turn_is_a_warning_naming_the_urls_and_the_fix(cfg: Path, listening: str) -> None:
    res = _run(cfg, "--proxy-url", listening, "--mcp-url", listening + "/mcp")
    assert res.exit_code == 0, (res.output, res.exception)
    assert (
        f"warning: pineal could not reach {listening} and {listening}/mcp (connection refused)" in res.output
    )
    assert "`coach serve` is running" in res.output
    row = next(line for line in res.output.splitlines() if line.startswith("│ pineal"))
    assert "Connection refused" in row and "agent pineal:" not in row  # the cause, not the prefix


def test_in_process_stack_gives_no_such_warning(cfg: Path) -> None:
    res = _run(cfg)
    assert res.exit_code == 0, (res.output, res.exception)
    assert "could not reach" not in res.output
