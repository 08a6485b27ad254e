"""Session mode of ``coach mcp`` (the server Claude Code starts from ``.mcp.json``), in memory: scope from
the server's identity (never from arguments), the manual turn of standalone subagent writes, the read
tools on the latest turn, and ``coach_turn`` / ``coach_synthesis`` over a test double of the pipeline
(the early reply, safety tiers and idle close: ``test_session_turns``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

from blackboard import Blackboard
from launcher.claude_code._pipeline_tool import TurnSummary, display_text
from launcher.claude_code.session import (
    DEFAULT_SESSION,
    SessionTurns,
    build_session_server,
    drop_parent_session_env,
    session_identity,
    session_mode_requested,
)
from mcp_server.errors import ScopeError
from tests.launcher.payloads import BLOCKED_MOVE, payload_for, stability_blocking

pytestmark = pytest.mark.anyio

USER = "u1"
SESSION = "s1"


class FakePipeline:
    """Test double at the pipeline boundary: allocates a turn like the supervisor and records calls."""

    def __init__(self, board: Blackboard, *, fail: Exception | None = None) -> None:
        self.board = board
        self.calls: list[tuple[str, str, str]] = []
        self.fail = fail

    async def __call__(
        self, user: str, session: str, message: str, *, on_reply: Any = None, on_stream: Any = None
    ) -> TurnSummary:
        self.calls.append((user, session, message))
        if self.fail is not None:
            raise self.fail
        turn = self.board.begin_turn(user, session)
        return TurnSummary(
            turn=turn,
            coach_reply="What matters most to you about running?",
            synthesis="Try one ten-minute run on Tuesday.",
            synthesis_source="model",
            degraded=False,
            crisis_tier=0,
        )


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Blackboard]:
    b = Blackboard(tmp_path / "data")
    try:
        yield b
    finally:
        b.close()


def _server(board: Blackboard, pipeline: Any = None) -> tuple[MCPServer, SessionTurns]:
    identity = session_identity({}, user=USER, session=SESSION)
    return build_session_server(board, identity, pipeline or FakePipeline(board))


async def _call(server: MCPServer, tool: str, args: dict[str, Any] | None = None) -> CallToolResult:
    async with Client(server) as client:
        return await client.call_tool(tool, args or {})


def _data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


async def test_lists_the_blackboard_tools_coach_turn_and_coach_synthesis(board: Blackboard) -> None:
    server, _ = _server(board)
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == {
        "coach_turn",
        "coach_synthesis",
        "write_shadow",
        "write_persona",
        "write_plasticity",
        "write_stability",
        "write_coach",
        "write_synthesis",
        "read_entry",
        "list_entries",
        "get_profile",
        "get_session_history",
        "collect_turn",
    }


async def test_standalone_writes_share_a_manual_turn_until_an_agent_writes_twice(board: Blackboard) -> None:
    server, turns = _server(board)
    assert turns.manual_turn is None
    first = _data(await _call(server, "write_stability", stability_blocking()))
    assert first["stored"] is True and first["agent"] == "stability"
    # The gate applies exactly as in the pipeline.
    assert [m["id"] for m in first["blocked_by_gate"]] == [BLOCKED_MOVE["id"]]
    joined = _data(await _call(server, "write_persona", payload_for("persona")))
    assert joined["turn"] == first["turn"] == turns.manual_turn
    again = _data(await _call(server, "write_stability", {"moves": [], "summary": "nothing risky"}))
    assert again["turn"] != first["turn"]
    entries = board.read_turn(USER, SESSION, first["turn"])
    assert entries["stability"].author == "stability" and entries["persona"].author == "persona"
    assert entries["stability"].value["moves"][0]["blocked"] is True


async def test_invalid_write_is_refused_with_the_problems_and_stores_nothing(board: Blackboard) -> None:
    server, _ = _server(board)
    result = await _call(server, "write_stability", {"moves": [{"id": "x", "severity": 42}], "summary": "s"})
    assert result.is_error
    assert _data(result)["error"] == "invalid_arguments"
    assert [e for e in board.store.list(f"users/{USER}/") if e.key.endswith("/stability")] == []


async def test_read_tools_see_the_latest_turn_of_this_session_only(board: Blackboard) -> None:
    server, _ = _server(board)
    written = _data(await _call(server, "write_stability", stability_blocking()))
    read = _data(await _call(server, "read_entry", {"key": "stability"}))
    assert read["found"] is True and read["key"].endswith(f"/turns/{written['turn']}/stability")
    history = _data(await _call(server, "get_session_history", {"last_n": 1}))
    assert [t["turn"] for t in history["turns"]] == [written["turn"]]
    assert "stability" in history["turns"][0]["entries"]
    other = await _call(server, "read_entry", {"key": "users/someone-else/profile"})
    assert other.is_error and _data(other)["error"] == "out_of_scope"


async def test_coach_turn_runs_the_pipeline_for_the_servers_user_and_session(board: Blackboard) -> None:
    pipeline = FakePipeline(board)
    server, turns = _server(board, pipeline)
    manual = _data(await _call(server, "write_shadow", payload_for("shadow")))["turn"]
    async with Client(server) as client:
        data = _data(await client.call_tool("coach_turn", {"message": "I keep skipping my runs."}))
        synthesis = _data(await client.call_tool("coach_synthesis", {"turn": data["turn"]}))
    assert pipeline.calls == [(USER, SESSION, "I keep skipping my runs.")]
    assert data["coach_reply"] == "What matters most to you about running?"
    assert "synthesis" not in data and data["message"].startswith("Coach:\n" + data["coach_reply"])
    assert (
        synthesis["synthesis"] == "Try one ten-minute run on Tuesday." and synthesis["turn"] == data["turn"]
    )
    assert data["turn"] != manual
    # After a pipeline turn, a standalone write starts a new manual turn (not the old one).
    assert turns.manual_turn is None
    later = _data(await _call(server, "write_shadow", payload_for("shadow")))["turn"]
    assert later not in (manual, data["turn"])


async def test_coach_turn_takes_no_user_or_session_from_the_model(board: Blackboard) -> None:
    pipeline = FakePipeline(board)
    server, _ = _server(board, pipeline)
    result = await _call(server, "coach_turn", {"message": "hi", "user": "mallory", "session": "x"})
    assert result.is_error and _data(result)["error"] == "invalid_arguments"
    assert pipeline.calls == []
    empty = await _call(server, "coach_turn", {"message": ""})
    assert empty.is_error and pipeline.calls == []


async def test_pipeline_failure_is_a_plain_tool_error(board: Blackboard) -> None:
    server, _ = _server(board, FakePipeline(board, fail=ConnectionError("upstream refused")))
    result = await _call(server, "coach_turn", {"message": "hello"})
    assert result.is_error
    data = _data(result)
    assert data["error"] == "pipeline_failed"
    assert "ConnectionError" in data["message"] and "coach.toml" in data["what_to_do"]


def test_identity_comes_from_options_then_environment_then_defaults() -> None:
    assert session_identity({}, user="a", session="b").session == "b"
    env = {"COACH_USER": "env-user", "COACH_SESSION": "env-session"}
    assert (session_identity(env).user, session_identity(env).session) == ("env-user", "env-session")
    default = session_identity({})
    assert default.session == DEFAULT_SESSION and default.user
    with pytest.raises(ScopeError):
        session_identity({"COACH_USER": "../etc"})


def test_session_mode_is_opt_in() -> None:
    assert session_mode_requested({"COACH_MCP_SESSION": "1"})
    assert session_mode_requested({"COACH_MCP_SESSION": "true"})
    assert not session_mode_requested({})
    assert not session_mode_requested({"COACH_MCP_SESSION": "0"})


def test_display_text_puts_the_reply_first_and_names_missing_agents() -> None:
    text = display_text(
        TurnSummary(
            turn="t000002",
            coach_reply="R",
            synthesis="S",
            synthesis_source="fallback",
            degraded=True,
            crisis_tier=0,
            missing=["shadow"],
        )
    )
    assert text.index("R") < text.index("S")
    assert "missing: shadow" in text and "t000002" in text


def test_parent_session_variables_do_not_reach_the_agents() -> None:
    env = {
        "ANTHROPIC_AUTH_TOKEN": "secret",
        "ANTHROPIC_BASE_URL": "https://elsewhere",
        "CLAUDECODE": "1",
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "CLAUDE_CONFIG_DIR": "/home/u/.claude",
        "HOME": "/home/u",
        "COACH_USER": "u1",
        "PATH": "/bin",
    }
    dropped = drop_parent_session_env(env)
    assert dropped == sorted(
        [
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "CLAUDECODE",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CONFIG_DIR",
        ]
    )
    assert env == {"HOME": "/home/u", "COACH_USER": "u1", "PATH": "/bin"}


def test_plugin_server_reads_the_repositorys_agents_when_the_project_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher.claude_code.session import _with_agents_dir
    from launcher.config import CoachConfig

    repo, project = tmp_path / "repo", tmp_path / "project"
    (repo / "agents").mkdir(parents=True)
    project.mkdir()
    monkeypatch.chdir(project)
    config = CoachConfig()
    assert Path(_with_agents_dir(config, str(repo)).agents.dir) == repo / "agents"
    (project / "agents").mkdir()  # the project's own folder wins when it exists
    assert Path(_with_agents_dir(config, str(repo)).agents.dir) == Path("agents")
    assert _with_agents_dir(config, None) is config


async def test_hosted_pipeline_start_failure_is_a_tool_error_and_the_server_stays_up(tmp_path: Path) -> None:
    from launcher.claude_code._pipeline_tool import HostedPipeline
    from launcher.config import CoachConfig

    config = CoachConfig.model_validate(
        {"data": {"dir": str(tmp_path / "data")}, "agents": {"dir": str(tmp_path / "none")}}
    )
    board = Blackboard(tmp_path / "data")
    try:
        pipeline = HostedPipeline(config)
        server, _ = build_session_server(
            board, session_identity({}, user=USER, session=SESSION), pipeline, lifespan=pipeline.lifespan
        )
        async with Client(server) as client:
            assert pipeline._tg is not None, "the server's lifespan hosts the pipeline"
            for _ in range(2):  # a failed start leaves no half-started runtime behind
                result = await client.call_tool("coach_turn", {"message": "hello"})
                assert result.is_error
                data = _data(result)
                assert data["error"] == "pipeline_failed" and "AgentSpecError" in data["message"]
            ok = await client.call_tool("write_persona", payload_for("persona"))
            assert not ok.is_error
    finally:
        board.close()
