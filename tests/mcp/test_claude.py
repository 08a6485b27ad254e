"""The real ``claude`` binary (bundled in claude-agent-sdk) calling ``write_persona`` through this server.

A scripted Anthropic-compatible endpoint (``testsupport.ScriptedUpstream``; streaming, unique message
ids) answers Claude Code's first model call with a ``tool_use`` of ``mcp__coachboard__write_persona``
and the next one with ``end_turn``. The stored entry is then read back from the SQLite file by another
process. Then two Claude Code processes write the same key at the same moment through one shared HTTP
server: one wins, the other's model receives the conflict result, nothing is lost.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from blackboard import AGENT_OUTPUT_SCHEMAS, Blackboard, turn_entry_key
from mcp_server import Scope, claude_mcp_config, claude_mcp_env, claude_mcp_stdio_config, input_schema
from tests.mcp.payloads import payload
from tests.mcp.processes import child_env, history_in_subprocess, http_server
from testsupport import Delay, ScriptedUpstream, Text, ToolCall
from testsupport.claude import plain_claude_env, run_claude_headless, run_claude_headless_async

pytestmark = pytest.mark.e2e

U, S = "alice", "s1"
TOOL = "mcp__coachboard__write_persona"
SYSTEM = "You are Persona. Store your assessment with the write_persona tool, then stop."


def _begin(data_dir: Path) -> str:
    board = Blackboard(data_dir)
    try:
        return board.begin_turn(U, S)
    finally:
        board.close()


def _tool_results(up: ScriptedUpstream, run: str | None = None) -> list[dict[str, Any]]:
    """The tool_result blocks Claude Code sent back to the model (optionally of one x-test-run)."""
    out: list[dict[str, Any]] = []
    for record in up.model_calls("persona"):
        if run is not None and record.headers.get("x-test-run") != run:
            continue
        messages = record.body.get("messages") or []
        if not messages or not isinstance(messages[-1].get("content"), list):
            continue
        for block in messages[-1]["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                text = (
                    content
                    if isinstance(content, str)
                    else " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
                )
                out.append({"text": text, "is_error": bool(block.get("is_error"))})
    return out


def test_claude_writes_persona_through_stdio_server(tmp_data_dir: Path, tmp_path: Path) -> None:
    turn = _begin(tmp_data_dir)
    mcp_config = claude_mcp_stdio_config(Scope.create(U, S, turn, "persona"), data_dir=str(tmp_data_dir))
    script = [ToolCall("write_persona", payload("persona")), Text("stored")]
    with ScriptedUpstream({"persona": script}) as up:
        result = run_claude_headless(
            "Assess the user.",
            base_url=up.base_url,
            mcp_config=mcp_config,
            system_prompt=SYSTEM,
            allowed_tools=[TOOL],
            headers={"x-coach-agent": "persona"},
            cwd=tmp_path,
            timeout_s=120,
        )
        advertised = [
            r for r in up.model_calls("persona") if TOOL in [t.get("name") for t in r.body.get("tools") or []]
        ]
    assert result.result == "stored"
    # The model saw the pydantic schema, without the computed fields, as the tool's input schema.
    tool_def = next(t for t in advertised[0].body["tools"] if t["name"] == TOOL)
    assert (
        tool_def["input_schema"]["properties"].keys()
        == input_schema(AGENT_OUTPUT_SCHEMAS["persona"])["properties"].keys()
    )
    results = _tool_results(up)
    assert len(results) == 1 and results[0]["is_error"] is False and "STORED." in results[0]["text"], results
    # Read back from the SQLite file by another process.
    key = turn_entry_key(U, S, turn, "persona")
    history = history_in_subprocess(tmp_data_dir / "blackboard.sqlite3", key)
    expected = AGENT_OUTPUT_SCHEMAS["persona"].model_validate(payload("persona")).model_dump(mode="json")
    assert [(h["version"], h["author"]) for h in history] == [(1, "persona")]
    assert history[0]["value"] == expected


def _racing_script() -> Any:
    """Each run's first real call gets its tool_use at one shared moment (a release time set by the
    first arrival), so both processes call write_persona together; later calls end the turn."""
    lock = threading.Lock()
    release: list[float] = []

    def script(request: Any) -> Any:
        if TOOL not in request.tool_names:
            return Text("ok")  # probes and side calls
        if request.step_index > 0:
            return Text("done")
        run = request.headers.get("x-test-run", "?")
        arguments = {**payload("persona"), "summary": f"written by run {run}"}
        with lock:
            if not release:
                release.append(time.monotonic() + 3.0)
            wait = max(0.0, release[0] - time.monotonic())
        return Delay(wait, then=ToolCall("write_persona", arguments))

    return script


@pytest.mark.anyio
async def test_two_claude_processes_race_for_the_same_key(tmp_data_dir: Path, tmp_path: Path) -> None:
    turn = _begin(tmp_data_dir)
    scope = Scope.create(U, S, turn, "persona")
    secret = "race-secret"
    with (
        http_server(tmp_data_dir, env={"COACH_MCP_SECRET": secret}) as server,
        ScriptedUpstream({"persona": _racing_script()}) as up,
    ):
        # The config the supervisor gives each agent: URL, scope headers, and the scope token by
        # reference (${COACH_MCP_SCOPE_TOKEN}: the token itself travels in the environment).
        mcp_config = claude_mcp_config(server.url, scope, secret=secret)
        outcomes: dict[str, Any] = {}

        async def run(name: str) -> None:
            headers = {"x-coach-agent": "persona", "x-test-run": name}
            env = {**plain_claude_env(up.base_url, headers=headers), **claude_mcp_env(scope, secret)}
            outcomes[name] = await run_claude_headless_async(
                "Assess the user.",
                base_url=up.base_url,
                mcp_config=mcp_config,
                system_prompt=SYSTEM,
                allowed_tools=[TOOL],
                headers=headers,
                env=env,
                cwd=tmp_path,
                timeout_s=120,
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "A")
            tg.start_soon(run, "B")
        results = {name: _tool_results(up, name) for name in ("A", "B")}
    assert all(o.result == "done" for o in outcomes.values())
    assert all(len(r) == 1 for r in results.values()), results
    winners = [n for n, r in results.items() if not r[0]["is_error"]]
    losers = [n for n, r in results.items() if r[0]["is_error"]]
    assert len(winners) == 1 and len(losers) == 1, results
    loser_text = results[losers[0]][0]["text"]
    assert "NOT STORED" in loser_text and "current_version: 1" in loser_text
    assert "STORED." in results[winners[0]][0]["text"]
    # Nothing lost: exactly one version, the winner's, read by another process.
    history = history_in_subprocess(
        tmp_data_dir / "blackboard.sqlite3", turn_entry_key(U, S, turn, "persona")
    )
    assert len(history) == 1 and history[0]["value"]["summary"] == f"written by run {winners[0]}"


def test_child_env_is_used() -> None:
    # Guard for the helpers above: child processes import this repository's packages.
    assert "PYTHONPATH" in child_env()
