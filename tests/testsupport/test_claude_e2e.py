"""End to end: the real bundled ``claude`` binary against the scripted upstream's Anthropic endpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from testsupport import ScriptedUpstream, Text, ToolCall
from testsupport.claude import plain_claude_env, run_claude_headless

pytestmark = pytest.mark.e2e

PLAIN_KEYS = {"model", "messages", "system", "tools", "metadata", "max_tokens", "stream"}


def test_headless_run_receives_the_scripted_text(claude_home: Path, tmp_path: Path) -> None:
    with ScriptedUpstream({"coach": [Text("Scripted hello from the upstream.")]}) as up:
        env = plain_claude_env(
            up.base_url,
            headers={"x-coach-agent": "coach", "x-coach-turn": "1"},
            max_output_tokens=512,
            home=claude_home,
        )
        result = run_claude_headless(
            "Say hello.",
            base_url=up.base_url,
            env=env,
            cwd=tmp_path,
            system_prompt="You are the coach.",
            timeout_s=60,
        )
    assert result.result == "Scripted hello from the upstream."
    assert result.returncode == 0 and not result.is_error and result.num_turns == 1
    calls = up.model_calls()
    assert calls and all(c.agent == "coach" for c in calls)
    main = calls[-1]
    assert main.query == "beta=true" and main.body["stream"] is True
    assert set(main.body) <= PLAIN_KEYS, set(main.body) - PLAIN_KEYS
    assert main.body["max_tokens"] <= 512
    assert main.headers["x-coach-turn"] == "1"
    assert "You are the coach." in json.dumps(main.body["system"])
    print(
        f"claude wall {result.wall_s:.2f} s, CLI duration {result.duration_ms} ms, "
        f"startup overhead {result.startup_overhead_s:.2f} s"
    )


def test_headless_run_calls_a_stdio_mcp_tool(claude_home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    server = Path(__file__).with_name("note_mcp_server.py")
    mcp_config = {
        "mcpServers": {
            "notes": {"type": "stdio", "command": sys.executable, "args": [str(server), str(notes)]}
        }
    }
    script = [ToolCall("record_note", {"note": "client keeps deadlines"}), Text("Noted.")]
    with ScriptedUpstream({"shadow": script}) as up:
        env = plain_claude_env(up.base_url, headers={"x-coach-agent": "shadow"}, home=claude_home)
        result = run_claude_headless(
            "Record the note.",
            base_url=up.base_url,
            env=env,
            cwd=tmp_path,
            mcp_config=mcp_config,
            allowed_tools=["mcp__notes__record_note"],
            timeout_s=90,
        )
    assert result.result == "Noted." and result.num_turns == 2
    assert notes.read_text() == "client keeps deadlines\n"
    calls = [c for c in up.model_calls("shadow") if c.body.get("max_tokens", 0) > 1]
    first, second = calls[-2], calls[-1]
    assert "mcp__notes__record_note" in [t["name"] for t in first.body["tools"]]
    assert first.step_index == 0 and second.step_index == 1
    results = [
        b
        for m in second.body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results and "recorded 22 chars" in json.dumps(results[-1])
