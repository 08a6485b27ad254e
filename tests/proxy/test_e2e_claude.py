"""End to end: `coach proxy --config FILE` as a real process, the real `claude` binary headless through
it, one stdio MCP tool, the scripted OpenAI-compatible upstream behind it."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx
import pytest

from testsupport import ScriptedUpstream, Text, ToolCall, free_port
from testsupport.claude import plain_claude_env, run_claude_headless

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]

MCP_SERVER = textwrap.dedent('''
    import os, pathlib
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("notes")

    @server.tool()
    def record(note: str) -> str:
        """Record a note."""
        pathlib.Path(os.environ["MARK_FILE"]).write_text(note)
        return "recorded " + note

    server.run()
''')


def _start_proxy(config: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-c", "from launcher.cli import app; app()", "proxy", "--config", str(config)]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    while True:
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"coach proxy did not start: {''.join(seen)}") from None
        seen.append(line)
        # our own banner: printed once the listening socket is bound (uvicorn serves on that socket, and
        # prints no "Uvicorn running on" line when handed a socket)
        if line.startswith("coach proxy: serving on"):
            return proc, "".join(seen)
        if line == "":
            raise AssertionError(f"coach proxy exited early: {''.join(seen)}")


def test_claude_tool_round_trip_through_coach_proxy(tmp_path: Path) -> None:
    mark = tmp_path / "mark.txt"
    server = tmp_path / "notes_server.py"
    server.write_text(MCP_SERVER)
    up = ScriptedUpstream({"e2e": [ToolCall("record", {"note": "hello-e2e"}), Text("All done.")]})
    with up:
        port = free_port()
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            textwrap.dedent(f'''
            [proxy]
            port = {port}
            api_key = "e2e-key"
            default_model = "qwen3"
            usage_log = "{tmp_path / "usage.jsonl"}"
            [[proxy.models]]
            name = "qwen3"
            replicas = ["{up.base_url}"]
        ''')
        )
        proc, banner = _start_proxy(cfg)
        try:
            assert "127.0.0.1" in banner
            base = f"http://127.0.0.1:{port}"
            env = plain_claude_env(
                base,
                headers={"x-coach-agent": "e2e", "x-coach-session": "e2e-s"},
                api_key="e2e-key",
                max_output_tokens=1024,
            )
            result = run_claude_headless(
                "Record the note hello-e2e, then say you are done.",
                base_url=base,
                timeout_s=90,
                env=env,
                mcp_config={
                    "mcpServers": {
                        "notes": {
                            "command": sys.executable,
                            "args": [str(server)],
                            "env": {"MARK_FILE": str(mark)},
                        }
                    }
                },
                allowed_tools=["mcp__notes__record"],
            )
            assert result.result == "All done."
            assert mark.read_text() == "hello-e2e"  # the MCP tool really ran
            calls = up.model_calls("e2e")
            assert len(calls) == 2
            tool_msgs = [m for m in calls[1].body["messages"] if m.get("role") == "tool"]
            assert tool_msgs and "recorded hello-e2e" in str(tool_msgs[0]["content"])
            metrics = httpx.get(base + "/metrics", timeout=5).text
            assert 'coach_proxy_requests_total{agent="e2e",model="qwen3",status="ok"} 2' in metrics
        finally:
            proc.terminate()
            proc.wait(timeout=10)
