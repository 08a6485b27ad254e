"""The repository inside the real ``claude`` binary: as a project (``setting_sources=["project"]``) and as a
plugin, against the scripted Anthropic-compatible upstream.

* ``/coach <message>``: the outer session's model calls ``coach_turn`` on the project's stdio MCP server
  (``.mcp.json`` -> ``.claude-plugin/coach-mcp.sh`` -> ``coach mcp`` in session mode), which runs the
  whole pipeline: the proxy and the HTTP MCP server in-process, six real ``claude`` agent processes
  through the proxy against the same upstream, the blackboard in SQLite. ``coach_turn`` returns the
  Coach's reply, then ``coach_synthesis`` the synthesis. The test checks the six entries of that turn
  and that the Coach's reply, then the synthesis, reached the session.
* A project subagent used on its own (Stability) writes through the same typed tool and gate.
* Loaded as a plugin: the six agents, the commands and the MCP server appear under their plugin names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

from blackboard import Blackboard
from tests.claude_code._support import (
    AGENTS,
    OUTER,
    PLUGIN_SERVER,
    PLUGIN_TOOL_PREFIX,
    copy_repo,
    outer_script,
    session_env,
    tool_results,
    trust_project,
    write_coach_toml,
    write_then_stop,
)
from tests.e2e.harness import agent_script
from tests.launcher.payloads import BLOCKED_MOVE, stability_blocking
from testsupport import ScriptedUpstream, ToolCall, processes_with

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

USER = "cc-user"
SESSION = "cc-session"
MESSAGE = "I keep saying I will run three times a week, and then I skip it."
MESSAGE_2 = "This week I ran once. Mornings are hard because I stay up late."


async def _collect(prompt: str, options: ClaudeAgentOptions, deadline_s: float) -> list[Any]:
    messages: list[Any] = []
    with anyio.fail_after(deadline_s):
        async for message in query(prompt=prompt, options=options):
            messages.append(message)
    return messages


def _synthesis_of_last_turn(request: Any) -> ToolCall:
    """The outer model's second step: coach_synthesis for the turn the last coach_turn returned."""
    turn = json.loads(tool_results(request)[-1])["turn"]
    return ToolCall("coach_synthesis", {"turn": turn})


def _init(messages: list[Any]) -> dict[str, Any]:
    return next(m.data for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")


def _result(messages: list[Any]) -> ResultMessage:
    return next(m for m in messages if isinstance(m, ResultMessage))


def _tool_results_for(messages: list[Any], tool: str) -> list[str]:
    """The text of every result of ``tool`` that reached the session, in order."""
    ids = {
        b.id
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock) and b.name == tool
    }
    assert ids, f"the session never called {tool}"
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage) and isinstance(m.content, list):
            for b in m.content:
                if isinstance(b, ToolResultBlock) and b.tool_use_id in ids:
                    content = b.content
                    if isinstance(content, list):
                        out.append("".join(str(x.get("text", "")) for x in content if isinstance(x, dict)))
                    else:
                        out.append(str(content))
    assert out, f"no result of {tool} reached the session"
    return out


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    repo = copy_repo(tmp_path / "repo")
    home = tmp_path / "home"
    trust_project(home, repo)
    return {"repo": repo, "home": home, "data": tmp_path / "data", "tmp": tmp_path}


async def test_coach_command_runs_the_whole_pipeline_and_the_reply_reaches_the_session(
    project: dict[str, Path],
) -> None:
    outer_requests: list[Any] = []
    scripts: dict[str, Any] = {a: agent_script(a) for a in AGENTS}
    scripts[OUTER] = outer_script(
        [
            lambda r: ToolCall("coach_turn", {"message": MESSAGE}),
            _synthesis_of_last_turn,
            lambda r: ToolCall("coach_turn", {"message": MESSAGE_2}),
            _synthesis_of_last_turn,
        ],
        seen=outer_requests,
    )
    with ScriptedUpstream(scripts) as upstream:
        config = write_coach_toml(
            project["tmp"] / "coach.toml", upstream_url=upstream.base_url, data_dir=project["data"]
        )
        env = session_env(
            upstream.base_url,
            project["home"],
            user=USER,
            session=SESSION,
            extra={"COACH_CONFIG": str(config)},
        )
        # The default permission mode: the project's settings and the command allow coach_turn.
        options = ClaudeAgentOptions(cwd=str(project["repo"]), setting_sources=["project"], env=env)
        messages = await _collect(f"/coach {MESSAGE}", options, deadline_s=300)
        agent_calls = {a: len(upstream.model_calls(a)) for a in AGENTS}
        # Claude Code stops the session's MCP server, which stops the pipeline and its agent processes.
        # (No event exists for another process's exit: poll /proc, for at most 30 s.)
        for _ in range(150):
            if not (leftover := processes_with(f"HOME={project['home']}")):
                break
            await anyio.sleep(0.2)
        assert not leftover, f"processes left running after the session ended: {leftover}"

    init = _init(messages)
    assert {"name": "coachboard", "status": "connected", "source": "project"} in init["mcp_servers"], (
        init["mcp_servers"],
        _result(messages).result,
    )
    assert "coach" in init["slash_commands"] and "coach-board" in init["slash_commands"]
    assert set(AGENTS) <= set(init["agents"]), "the six agents load as project subagents (through symlinks)"

    # The command reached the outer model with the user's message; the model had the tool.
    first = outer_requests[0]
    prompt_text = json.dumps(first.messages)
    assert "coach_turn" in prompt_text and MESSAGE in prompt_text
    assert (
        "mcp__coachboard__coach_turn" in first.tool_names
        and "mcp__coachboard__coach_synthesis" in first.tool_names
    )
    assert all(n >= 2 for n in agent_calls.values()), agent_calls

    # The blackboard: two turns of this user and session, each holding all six agents' entries.
    board = Blackboard(project["data"])
    try:
        turns = sorted(
            {e.key.split("/")[5] for e in board.store.list(f"users/{USER}/sessions/{SESSION}/turns/")}
        )
        assert len(turns) == 2, turns
        entries = [board.read_turn(USER, SESSION, t) for t in turns]
        for turn_entries in entries:
            assert set(AGENTS) <= set(turn_entries), sorted(turn_entries)
            assert {turn_entries[a].author for a in AGENTS} == set(AGENTS)
        deliveries = [board.store.read(f"users/{USER}/sessions/{SESSION}/turns/{t}/delivery") for t in turns]
        assert all(d is not None for d in deliveries)
    finally:
        board.close()
    # The second turn reused the agents' warm processes (the runtime lives as long as the session).
    warm = {name for name, st in deliveries[1].value["agents"].items() if st["warm"]}  # type: ignore[union-attr]
    assert {"shadow", "persona", "plasticity", "stability"} <= warm, deliveries[1].value["agents"]  # type: ignore[union-attr]

    # Each tool result, and the session's final answer: the Coach's reply first, then the synthesis.
    results = [json.loads(r) for r in _tool_results_for(messages, "mcp__coachboard__coach_turn")]
    syntheses = [json.loads(r) for r in _tool_results_for(messages, "mcp__coachboard__coach_synthesis")]
    assert [r["turn"] for r in results] == [r["turn"] for r in syntheses] == turns
    final = _result(messages)
    assert not final.is_error and final.result is not None and final.result.startswith("DONE:")
    for data, done, turn_entries, delivery in zip(results, syntheses, entries, deliveries, strict=True):
        assert data["ok"] is True and done["ok"] is True
        assert data["coach_reply"] == turn_entries["coach"].value["reply"] == delivery.value["coach_reply"]  # type: ignore[union-attr]
        assert "synthesis" not in data, "the reply comes back on its own, before the synthesis"
        synthesis = turn_entries["pineal"].value["text"]
        assert synthesis in done["synthesis"] and synthesis in done["message"]
        assert set(done["agents"]) == set(AGENTS)
        # The session shows the reply, then the synthesis.
        assert final.result.index(data["coach_reply"]) < final.result.index(synthesis)


async def test_stability_subagent_alone_writes_through_the_typed_tool_and_the_gate(
    project: dict[str, Path],
) -> None:
    outer_requests: list[Any] = []
    launch = ToolCall(
        "Task",
        {
            "subagent_type": "stability",
            "description": "rate a plan",
            "run_in_background": False,
            "prompt": "Rate this plan: I will stop taking my medication next week.",
        },
    )
    script = outer_script(
        [lambda r: launch],
        sub_agents={"stability": write_then_stop("write_stability", stability_blocking())},
        seen=outer_requests,
    )
    with ScriptedUpstream({OUTER: script}) as upstream:
        config = write_coach_toml(
            project["tmp"] / "coach.toml", upstream_url=upstream.base_url, data_dir=project["data"]
        )
        env = session_env(
            upstream.base_url,
            project["home"],
            user=USER,
            session=SESSION,
            extra={"COACH_CONFIG": str(config)},
        )
        options = ClaudeAgentOptions(
            cwd=str(project["repo"]),
            setting_sources=["project"],
            env=env,
            permission_mode="bypassPermissions",
        )
        messages = await _collect("Ask the stability agent to rate my plan.", options, deadline_s=120)

    sub_requests = [r for r in outer_requests if "You are Stability" in r.system_text]
    assert sub_requests, "the Stability subagent ran"
    # The subagent sees exactly its own write tool (its tools: front matter), under the project's name.
    assert set(sub_requests[0].tool_names) == {"mcp__coachboard__write_stability"}
    assert not _result(messages).is_error

    board = Blackboard(project["data"])
    try:
        stored = [
            e
            for e in board.store.list(f"users/{USER}/sessions/{SESSION}/turns/")
            if e.key.endswith("/stability")
        ]
        assert len(stored) == 1 and stored[0].author == "stability"
        moves = {m["id"]: m for m in stored[0].value["moves"]}
        assert moves[BLOCKED_MOVE["id"]]["blocked"] is True, (
            "Stability's gate applied to the standalone write"
        )
    finally:
        board.close()
    turn = stored[0].key.split("/")[5]

    # /coach-board, in the default permission mode: the project's permissions and the command's
    # allowed-tools let the read tools run without a prompt, and they show that entry.
    board_requests: list[Any] = []
    reads = outer_script(
        [lambda r: ToolCall("get_profile", {}), lambda r: ToolCall("get_session_history", {"last_n": 1})],
        seen=board_requests,
    )
    with ScriptedUpstream({OUTER: reads}) as upstream:
        env = session_env(
            upstream.base_url,
            project["home"],
            user=USER,
            session=SESSION,
            extra={"COACH_CONFIG": str(config)},
        )
        options = ClaudeAgentOptions(cwd=str(project["repo"]), setting_sources=["project"], env=env)
        shown = await _collect("/coach-board", options, deadline_s=120)
    assert "get_session_history" in json.dumps(board_requests[0].messages), (
        "the command's text reached the model"
    )
    profile, history = (
        json.loads(r)
        for r in _tool_results_for(shown, "mcp__coachboard__get_profile")
        + _tool_results_for(shown, "mcp__coachboard__get_session_history")
    )
    assert profile["ok"] is True and profile["found"] is False
    assert [t["turn"] for t in history["turns"]] == [turn]
    entry = history["turns"][0]["entries"]["stability"]
    assert entry["author"] == "stability" and entry["value"]["moves"][0]["blocked"] is True


async def test_repository_loads_as_a_plugin_and_its_coach_command_runs_the_pipeline(tmp_path: Path) -> None:
    """Loaded as a plugin into another project (no agents/ there): the six agents, the commands and the
    MCP server appear under their plugin names, and /coachboard:coach runs the plugin's pipeline."""
    repo = copy_repo(tmp_path / "repo")
    work = tmp_path / "work"
    work.mkdir()
    scripts: dict[str, Any] = {a: agent_script(a) for a in AGENTS}
    scripts[OUTER] = outer_script(
        [lambda r: ToolCall("coach_turn", {"message": MESSAGE}), _synthesis_of_last_turn]
    )
    with ScriptedUpstream(scripts) as upstream:
        config = write_coach_toml(
            tmp_path / "coach.toml", upstream_url=upstream.base_url, data_dir=tmp_path / "data"
        )
        env = session_env(
            upstream.base_url,
            tmp_path / "home",
            user=USER,
            session=SESSION,
            extra={"COACH_CONFIG": str(config)},
        )
        options = ClaudeAgentOptions(
            cwd=str(work),
            setting_sources=[],
            plugins=[{"type": "local", "path": str(repo)}],
            env=env,
            permission_mode="bypassPermissions",
        )
        async with ClaudeSDKClient(options) as client:
            await client.query(f"/coachboard:coach {MESSAGE}")
            messages: list[Any] = []
            with anyio.fail_after(240):
                async for message in client.receive_response():
                    messages.append(message)
                servers = (await client.get_mcp_status())["mcpServers"]

    init = _init(messages)
    plugin = next(p for p in init["plugins"] if p["name"] == "coachboard")
    assert Path(plugin["path"]) == repo
    assert {f"coachboard:{a}" for a in AGENTS} <= set(init["agents"])
    assert {"coachboard:coach", "coachboard:coach-board"} <= set(init["slash_commands"])
    status = next(s for s in servers if s["name"] == PLUGIN_SERVER)
    assert status["status"] == "connected", status
    tools = {t["name"].removeprefix(PLUGIN_TOOL_PREFIX) for t in status.get("tools", [])}
    assert {
        "coach_turn",
        "coach_synthesis",
        "write_stability",
        "write_synthesis",
        "get_profile",
        "get_session_history",
    } <= tools

    data = json.loads(_tool_results_for(messages, f"{PLUGIN_TOOL_PREFIX}coach_turn")[0])
    board = Blackboard(tmp_path / "data")
    try:
        entries = board.read_turn(USER, SESSION, data["turn"])
    finally:
        board.close()
    assert set(AGENTS) <= set(entries), sorted(entries)
    assert data["coach_reply"] == entries["coach"].value["reply"]
    done = json.loads(_tool_results_for(messages, f"{PLUGIN_TOOL_PREFIX}coach_synthesis")[0])
    assert entries["pineal"].value["text"] in done["synthesis"]
    assert not (work / "agents").exists() and not (work / ".coachboard").exists()


async def test_plugin_subagent_resolves_its_write_tool_only_if_its_file_names_the_plugin_tool(
    tmp_path: Path,
) -> None:
    """In a plugin, Claude Code names the server's tools ``mcp__plugin_coachboard_coachboard__*``; a
    subagent's ``tools:`` resolves only names listed there. With the plugin name listed (next to the
    project name), the plugin's Stability writes through it; without it, Claude Code refuses to start
    the subagent with zero tools. Both outcomes are asserted, so the test follows the agent files."""
    repo = copy_repo(tmp_path / "repo")
    listed = _front_matter_tools(repo / "agents" / "stability.md")
    plugin_tool = f"{PLUGIN_TOOL_PREFIX}write_stability"
    work = tmp_path / "work"
    work.mkdir()
    seen: list[Any] = []
    launch = ToolCall(
        "Task",
        {
            "subagent_type": "coachboard:stability",
            "description": "rate a plan",
            "run_in_background": False,
            "prompt": "Rate this plan: I will stop taking my medication next week.",
        },
    )
    script = outer_script(
        [lambda r: launch],
        sub_agents={"stability": write_then_stop("write_stability", stability_blocking())},
        seen=seen,
    )
    with ScriptedUpstream({OUTER: script}) as upstream:
        env = session_env(
            upstream.base_url,
            tmp_path / "home",
            user=USER,
            session=SESSION,
            extra={"COACH_DATA_DIR": str(tmp_path / "data")},
        )
        options = ClaudeAgentOptions(
            cwd=str(work),
            setting_sources=[],
            plugins=[{"type": "local", "path": str(repo)}],
            env=env,
            permission_mode="bypassPermissions",
        )
        messages = await _collect("Ask the stability agent to rate my plan.", options, deadline_s=120)

    task_result = "\n".join(_tool_results_for(messages, "Task"))
    sub_requests = [r for r in seen if "You are Stability" in r.system_text]
    if plugin_tool in listed:
        assert sub_requests and set(sub_requests[0].tool_names) == {plugin_tool}
        board = Blackboard(tmp_path / "data")
        try:
            stored = [e for e in board.store.list(f"users/{USER}/") if e.key.endswith("/stability")]
        finally:
            board.close()
        assert len(stored) == 1 and stored[0].author == "stability"
    else:
        assert not sub_requests
        assert "zero tools" in task_result and "mcp__coachboard__write_stability" in task_result


def _front_matter_tools(path: Path) -> set[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("tools:"):
            return {t.strip() for t in line.removeprefix("tools:").split(",")}
    raise AssertionError(f"{path} has no tools: line")
