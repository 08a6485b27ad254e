"""``coach serve`` (a real subprocess) follows edited agent files: the next request of an agent gets the
policies of the new file (max tokens cap, forced output tool), as ``coach run``/``chat``'s in-process
proxy does (tests/launcher/test_live_policies.py). It used to keep the policies it started with until
restarted. Invalid edits keep the previous policies. The scripted upstream records what the proxy sent."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from testsupport.child_output import OutputLines, interrupt, start_coach_serve
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
REPO = Path(__file__).resolve().parents[2]
HEADERS = {"x-coach-agent": "coach", "x-coach-user": "u1", "x-coach-session": "s1"}
TOOL = {
    "name": "mcp__coachboard__write_coach",
    "description": "write the reply",
    "input_schema": {"type": "object", "properties": {"reply": {"type": "string"}}},
}


def _edit(path: Path, key: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(
        "".join(f"{key}: {value}\n" if ln.startswith(f"{key}:") else ln for ln in lines), encoding="utf-8"
    )


def _ask(proxy_url: str) -> None:
    r = httpx.post(
        proxy_url + "/v1/messages",
        headers=HEADERS,
        timeout=20,
        json={
            "model": "haiku",
            "max_tokens": 32000,
            "tools": [TOOL],
            "messages": [{"role": "user", "content": "hi"}],
        },
    )
    assert r.status_code == 200, r.text


def _last_sent(up: ScriptedUpstream) -> dict[str, Any]:
    return dict(up.model_calls()[-1].body)


def test_serve_applies_edited_agent_files_to_the_next_request(tmp_path: Path) -> None:
    up = ScriptedUpstream(default_text="hi")
    up.start()
    agents = tmp_path / "agents"
    shutil.copytree(REPO / "agents", agents)
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\ndir = "{agents}"\n'
        f'[upstream]\nurl = "{up.base_url}"\nkind = "anthropic"\n'
    )
    proc = start_coach_serve(cfg, cwd=REPO)
    out = OutputLines(proc)
    try:
        proxy_url = out.expect(r"coach serve: ready: proxy (\S+)").group(1)
        _ask(proxy_url)
        first = _last_sent(up)
        assert first["max_tokens"] == 400  # agents/coach.md
        assert first["tool_choice"]["name"] == TOOL["name"]  # force_output_tool: true

        _edit(agents / "coach.md", "max_output_tokens", "123")
        _edit(agents / "coach.md", "force_output_tool", "false")
        out.expect(r"coach serve: agents reloaded: version 2")
        _ask(proxy_url)
        second = _last_sent(up)
        assert second["max_tokens"] == 123
        assert second.get("tool_choice", {}).get("type") != "tool"  # no forced tool any more

        _edit(agents / "coach.md", "max_output_tokens", "not-a-number")
        out.expect(r"invalid; the proxy keeps the policies of version 2")
        _ask(proxy_url)
        assert _last_sent(up)["max_tokens"] == 123
        assert not any(re.search("Traceback", x) for x in out.seen)
    finally:
        up.stop()
        interrupt(proc)
