"""``coach serve`` that cannot listen: the message names the address and the fix for the actual cause.
Before the fix every bind failure said "stop whatever uses that port or pass another --proxy-port",
also for a ``[proxy] host`` that is not an address of this machine ("Cannot assign requested address")
or does not resolve, where no port change helps. Real sockets, real binds; exit code 1 (README).
And SIGTERM with a model call open stops it without uvicorn tracebacks (real subprocess)."""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from launcher.cli import app
from testsupport.child_output import OutputLines, start_coach_serve
from testsupport.script import Hang
from testsupport.upstream import ScriptedUpstream

REPO = Path(__file__).resolve().parents[2]


def _serve(tmp_path: Path, extra: str, *args: str) -> Any:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\nwatch = false\n{extra}')
    return CliRunner().invoke(app, ["serve", "--config", str(cfg), *args], env={"COLUMNS": "400"})


def test_port_in_use_says_which_and_how_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = _serve(tmp_path, "", "--proxy-port", "0", "--mcp-port", str(port))
    assert res.exit_code == 1, (res.output, res.exception)
    assert f"cannot listen on 127.0.0.1:{port} for the mcp server: Address already in use" in res.output
    assert (
        "stop whatever uses that port" in res.output
        and "--mcp-port" in res.output
        and "[mcp] port" in res.output
    )


def test_host_that_is_not_this_machine_says_to_fix_the_host_not_the_port(tmp_path: Path) -> None:
    res = _serve(
        tmp_path, '[proxy]\nhost = "192.0.2.1"\n', "--proxy-port", "0", "--mcp-port", "0"
    )  # TEST-NET-1
    assert res.exit_code == 1, (res.output, res.exception)
    assert "cannot listen on 192.0.2.1:0 for the proxy" in res.output
    assert "set [proxy] host to an address of this machine" in res.output
    assert "stop whatever uses that port" not in res.output


@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_sigterm_with_a_request_open_stops_without_tracebacks(tmp_path: Path) -> None:
    """A model call still streaming when coach serve gets SIGTERM is cut after the grace period; uvicorn
    logged the cancelled request as "Exception in ASGI application" with a CancelledError traceback."""
    upstream = ScriptedUpstream({"held": [Hang()]}, matchers=[lambda request: "held"])
    up_url = upstream.start()
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\nwatch = false\n'
        f'[upstream]\nurl = "{up_url}"\nkind = "anthropic"\n'
    )
    proc = start_coach_serve(cfg, cwd=REPO)
    out = OutputLines(proc)

    def call(proxy_url: str) -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(
                proxy_url + "/v1/messages",
                timeout=60,
                json={
                    "model": "m",
                    "max_tokens": 20,
                    "stream": True,
                    "messages": [{"role": "user", "content": "hi"}],
                },
            )

    try:
        proxy_url = out.expect(r"coach serve: ready: proxy (\S+)").group(1)
        client = threading.Thread(target=call, args=(proxy_url,), daemon=True)
        client.start()
        assert upstream.wait_for(lambda rs: any(r.is_model_call for r in rs), 30), (
            "the call reached the upstream"
        )
        proc.send_signal(signal.SIGTERM)
        out.expect(r"coach serve: stopped", 30)
        assert proc.wait(15) == 0
        client.join(30)
    finally:
        upstream.stop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    text = "\n".join(out.seen)
    assert "Traceback" not in text and "Exception in ASGI application" not in text, text
