"""``coach serve`` as a real subprocess: both servers answer, upstream health is shown and follows the
upstream going away, and SIGINT stops everything cleanly (exit 0). Bad options exit 2 in process."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from launcher.cli import app
from testsupport.child_output import OutputLines, start_coach_serve
from testsupport.upstream import ScriptedUpstream

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_serve_answers_shows_upstream_health_and_stops_on_sigint(tmp_path: Path) -> None:
    upstream = ScriptedUpstream(default_text="hello from upstream")
    up_url = upstream.start()
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n\n[upstream]\nurl = "{up_url}"\nkind = "anthropic"\n\n'
        "[proxy]\nhealth_interval_s = 0.2\n"
    )
    proc = start_coach_serve(cfg, cwd=REPO)
    out = OutputLines(proc)
    try:
        m = out.expect(r"coach serve: ready: proxy (\S+)  mcp (\S+)")
        proxy_url, mcp_url = m.group(1), m.group(2)
        out.expect(rf"\[ok\] upstream default {re.escape(up_url)}: healthy")

        r = httpx.post(
            proxy_url + "/v1/messages",
            timeout=10,
            json={"model": "anything", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert r.status_code == 200, r.text
        assert r.json()["content"][0]["text"] == "hello from upstream"

        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        r = httpx.post(
            mcp_url, json=init, timeout=10, headers={"accept": "application/json, text/event-stream"}
        )
        assert r.status_code == 200 and "coachboard" in r.text, r.text

        upstream.stop()
        out.expect(rf"\[!!\] upstream default {re.escape(up_url)}: unreachable")

        proc.send_signal(signal.SIGINT)
        out.expect(r"SIGINT received, stopping", 10)
        out.expect(r"coach serve: stopped", 15)
        assert proc.wait(15) == 0
        with pytest.raises(httpx.ConnectError):
            httpx.get(proxy_url + "/health", timeout=2)
    finally:
        upstream.stop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_serve_bad_port_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["serve", "--proxy-port", "70000"], env={"COACH_DATA_DIR": str(tmp_path)})
    assert res.exit_code == 2
    assert "--proxy-port must be 0-65535" in res.output


def test_serve_invalid_agent_files_exit_2(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "coach.md").write_text("---\nname: coach\n---\nhi\n")
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\ndir = "{agents}"\n')
    res = CliRunner().invoke(app, ["serve", "--config", str(cfg)])
    assert res.exit_code == 2
    assert "coach.md" in res.output and "coach agents check" in res.output
