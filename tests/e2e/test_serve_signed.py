"""``coach serve`` signs MCP scopes by default: without ``COACH_MCP_SECRET`` it creates
``<data dir>/mcp_secret`` (0600) and refuses unsigned requests (it trusted any ``x-coach-user`` header),
while ``coach run --proxy-url --mcp-url`` in the same data dir reads that file and its agents write
through the server. Real processes: coach serve, coach run, claude, against the scripted upstream."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.harness import REPO, agent_script
from tests.launcher.fakes import OUTPUT_TOOLS
from testsupport.child_output import OutputLines, interrupt, start_coach_serve
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def _coach(*args: str) -> list[str]:
    return [sys.executable, "-c", "from launcher.cli import app; app()", *args]


def test_serve_refuses_unsigned_mcp_requests_and_coach_run_signs_with_the_data_dir_secret(
    tmp_path: Path,
) -> None:
    up = ScriptedUpstream({a: agent_script(a) for a in OUTPUT_TOOLS})
    up.start()
    data = tmp_path / "data"
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\n[upstream]\nurl = "{up.base_url}"\nkind = "anthropic"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("COACH_")}
    proc = start_coach_serve(cfg, cwd=REPO, env=env)
    out = OutputLines(proc)
    try:
        m = out.expect(r"coach serve: ready: proxy (\S+)  mcp (\S+)  .*\(MCP scope tokens required\)")
        proxy_url, mcp_url = m.group(1), m.group(2)
        secret_file = data / "mcp_secret"
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600

        # Any local process claiming to be bob: refused without a valid scope token.
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_profile", "arguments": {}},
        }
        r = httpx.post(
            mcp_url,
            json=call,
            timeout=10,
            headers={
                "accept": "application/json, text/event-stream",
                "x-coach-user": "bob",
                "x-coach-session": "s1",
            },
        )
        assert "x-coach-scope-token" in r.text, r.text

        p = subprocess.run(
            _coach(
                "run",
                "I want to run more",
                "-u",
                "bob",
                "-s",
                "s1",
                "--json",
                "--config",
                str(cfg),
                "--proxy-url",
                proxy_url,
                "--mcp-url",
                mcp_url,
            ),
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=200,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        doc = json.loads(p.stdout)
        for name in OUTPUT_TOOLS:
            assert doc["agents"][name]["status"] == "ok", (name, doc["agents"][name])
        assert doc["synthesis_source"] == "model"
    finally:
        up.stop()
        interrupt(proc)
