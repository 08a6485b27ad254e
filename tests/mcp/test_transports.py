"""The same tools over a real stdio subprocess (``coach mcp`` / ``python -m mcp_server``) and over real
streamable HTTP (``coach mcp --http``) with the mcp client; collect_turn across processes."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from blackboard import Blackboard, turn_entry_key
from tests.mcp.helpers import data_of, text_of
from tests.mcp.payloads import payload
from tests.mcp.processes import (
    REPO_ROOT,
    ServerProcess,
    call_in_subprocess,
    child_env,
    history_in_subprocess,
    http_client,
    http_server,
    scope_headers,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

U, S = "alice", "s1"
SECRET = "test-secret"


def signed(user: str, session: str, turn: str | None = None, agent: str | None = None) -> dict[str, str]:
    return scope_headers(user, session, turn, agent, secret=SECRET)


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-http-data")


@pytest.fixture(scope="module")
def shared_http(shared_dir: Path) -> Iterator[ServerProcess]:
    """One ``python -m mcp_server --http`` (with a scope-token secret) for the HTTP tests of this module;
    each test uses its own session."""
    with http_server(shared_dir, env={"COACH_MCP_SECRET": SECRET}) as server:
        yield server


def _begin(data_dir: Path, user: str = U, session: str = S) -> str:
    board = Blackboard(data_dir)
    try:
        return board.begin_turn(user, session)
    finally:
        board.close()


async def test_coach_mcp_over_stdio(tmp_data_dir: Path) -> None:
    turn = _begin(tmp_data_dir)
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from launcher.cli import app; app()",
            "mcp",
            "--data-dir",
            str(tmp_data_dir),
            "--user",
            U,
            "--session",
            S,
            "--turn",
            turn,
            "--agent",
            "persona",
        ],
        cwd=str(REPO_ROOT),
        env=child_env(),
    )
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"write_persona", "read_entry", "list_entries", "get_profile", "get_session_history"}
        stored = await client.call_tool("write_persona", payload("persona"))
        assert not stored.is_error, text_of(stored)
        bad = await client.call_tool("write_persona", {**payload("persona"), "user": "bob"})
        assert bad.is_error and data_of(bad)["problems"][0]["field"] == "user"
        again = await client.call_tool("write_persona", payload("persona"))  # same value: success, stop now
        assert not again.is_error and data_of(again)["already_stored"] and data_of(again)["version"] == 1
        conflict = await client.call_tool("write_persona", {**payload("persona"), "summary": "different"})
        assert conflict.is_error and data_of(conflict)["current_version"] == 1
        refused = await client.call_tool("write_shadow", payload("shadow"))
        assert data_of(refused)["error"] == "tool_not_allowed"
        foreign = await client.call_tool(
            "read_entry", {"key": f"users/bob/sessions/{S}/turns/{turn}/persona"}
        )
        assert data_of(foreign)["error"] == "out_of_scope"
        back = data_of(await client.call_tool("read_entry", {"key": "persona"}))
        assert back["version"] == 1 and back["value"]["traits"]["openness"]["score"] == 70
        listing = data_of(await client.call_tool("list_entries", {"prefix": f"turns/{turn}/"}))
        assert {e["key"].rsplit("/", 1)[1] for e in listing["entries"]} == {"meta", "persona"}
        assert data_of(await client.call_tool("get_profile", {}))["found"] is False
        assert data_of(await client.call_tool("get_session_history", {}))["turns"] == []
    history = history_in_subprocess(
        tmp_data_dir / "blackboard.sqlite3", turn_entry_key(U, S, turn, "persona")
    )
    assert [(h["version"], h["author"]) for h in history] == [(1, "persona")]


async def test_python_m_mcp_server_scope_from_env(tmp_data_dir: Path) -> None:
    turn = _begin(tmp_data_dir)
    env = child_env(
        {
            "COACH_USER": U,
            "COACH_SESSION": S,
            "COACH_TURN": turn,
            "COACH_AGENT": "shadow",
            "COACH_DATA_DIR": str(tmp_data_dir),
        }
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server"], cwd=str(REPO_ROOT), env=env
    )
    async with Client(params) as client:
        result = await client.call_tool("write_shadow", payload("shadow"))
        assert not result.is_error, text_of(result)
        assert data_of(result)["key"] == turn_entry_key(U, S, turn, "shadow")


async def test_tools_over_http_with_scope_headers(shared_dir: Path, shared_http: ServerProcess) -> None:
    turn = _begin(shared_dir)
    bob_turn = _begin(shared_dir, "bob", S)
    server = shared_http
    async with http_client(server.url, signed(U, S, turn, "persona")) as persona:
        names = {t.name for t in (await persona.list_tools()).tools}
        assert "write_persona" in names and "write_shadow" not in names
        stored = await persona.call_tool("write_persona", payload("persona"))
        assert not stored.is_error, text_of(stored)
        bad = await persona.call_tool("write_persona", {"traits": "x"})
        assert bad.is_error and "traits" in [p["field"] for p in data_of(bad)["problems"]]
    async with http_client(server.url, signed(U, S, turn, "stability")) as stability:
        refused = await stability.call_tool("write_persona", payload("persona"))
        assert data_of(refused)["error"] == "tool_not_allowed"
        seen = data_of(await stability.call_tool("read_entry", {"key": "persona"}))
        assert seen["found"] is True and seen["author"] == "persona"
    async with http_client(server.url, signed("bob", S, bob_turn, "persona")) as bob:
        foreign = await bob.call_tool("read_entry", {"key": turn_entry_key(U, S, turn, "persona")})
        assert foreign.is_error and data_of(foreign)["error"] == "out_of_scope"
        listing = data_of(await bob.call_tool("list_entries", {"include_values": True}))
        assert all(e["key"].startswith("users/bob/") for e in listing["entries"])
    async with http_client(server.url, {}) as anonymous:
        missing = await anonymous.call_tool("get_profile", {})
        assert missing.is_error and data_of(missing)["error"] == "scope_missing"
    async with http_client(server.url, scope_headers(U, S, "../../x", "persona")) as malformed:
        bad_scope = await malformed.call_tool("get_profile", {})
        assert data_of(bad_scope)["error"] == "scope_missing"
    # Forged scope headers: no token, or another scope's token, are refused before any tool runs.
    bob_token = signed("bob", S, bob_turn, "persona")["x-coach-scope-token"]
    for forged in (
        scope_headers(U, S, turn, "persona"),
        {**scope_headers(U, S, turn, "persona"), "x-coach-scope-token": bob_token},
    ):
        async with http_client(server.url, forged) as attacker:
            refused = await attacker.call_tool("read_entry", {"key": "persona"})
            assert refused.is_error and data_of(refused)["error"] == "scope_forbidden"
            assert "openness" not in text_of(refused)


async def test_collect_turn_blocks_until_shadow_writes_from_another_process(
    shared_dir: Path, shared_http: ServerProcess
) -> None:
    turn = _begin(shared_dir, U, "collect")
    board = Blackboard(shared_dir)
    try:
        for agent in ("persona", "plasticity", "stability", "coach"):
            board.write_output(U, "collect", turn, agent, payload(agent))
    finally:
        board.close()
    server = shared_http
    collected: dict[str, object] = {}

    async def collect() -> None:
        async with http_client(server.url, signed(U, "collect", turn, "pineal")) as pineal:
            result = await pineal.call_tool("collect_turn", {"deadline_s": 45})
        collected["at"] = time.time()
        collected["data"] = data_of(result)

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect)
        # Shadow writes from a separate process while Pineal's collect_turn is waiting.
        written = await anyio.to_thread.run_sync(
            call_in_subprocess,
            server.url,
            signed(U, "collect", turn, "shadow"),
            "write_shadow",
            payload("shadow"),
        )
    assert written["is_error"] is False
    data = collected["data"]
    assert isinstance(data, dict)
    assert data["timed_out"] is False and data["missing"] == []
    assert "shadow" in data["arrived"] and data["versions"]["shadow"] == 1
    write_at = float(written["result"]["updated_at"])
    returned_at = float(collected["at"])  # type: ignore[arg-type]
    # The wait began before Shadow's write (it was blocked) and ended after it (released by it).
    assert returned_at - float(data["waited_s"]) < write_at <= returned_at


async def test_collect_turn_returns_at_deadline_without_shadow(
    shared_dir: Path, shared_http: ServerProcess
) -> None:
    turn = _begin(shared_dir, U, "deadline")
    started = time.monotonic()
    async with http_client(shared_http.url, signed(U, "deadline", turn, "pineal")) as pineal:
        data = data_of(await pineal.call_tool("collect_turn", {"deadline_s": 1.0}))
    elapsed = time.monotonic() - started
    assert data["timed_out"] is True and "shadow" in data["missing"] and data["versions"] == {}
    assert elapsed >= 1.0 and data["waited_s"] >= 1.0


async def test_every_tool_over_http(shared_dir: Path, shared_http: ServerProcess) -> None:
    session = "every"
    turn = _begin(shared_dir, U, session)
    for agent in ("shadow", "persona", "plasticity", "stability", "coach"):
        async with http_client(shared_http.url, signed(U, session, turn, agent)) as client:
            stored = await client.call_tool(f"write_{agent}", payload(agent))
            assert not stored.is_error, text_of(stored)
    async with http_client(shared_http.url, signed(U, session, turn, "pineal")) as pineal:
        tools = {t.name for t in (await pineal.list_tools()).tools}
        assert {
            "collect_turn",
            "write_synthesis",
            "read_entry",
            "list_entries",
            "get_profile",
            "get_session_history",
        } == tools
        brief = data_of(await pineal.call_tool("collect_turn", {"deadline_s": 10}))
        assert brief["missing"] == [] and len(brief["versions"]) == 5
        citations = [{"agent": a, "version": v} for a, v in brief["versions"].items()]
        synthesis = await pineal.call_tool(
            "write_synthesis", {"text": "One small step.", "citations": citations}
        )
        assert not synthesis.is_error, text_of(synthesis)
        assert (
            data_of(await pineal.call_tool("read_entry", {"key": "pineal"}))["value"]["text"]
            == "One small step."
        )
        assert data_of(await pineal.call_tool("list_entries", {}))["count"] == 7  # meta + 6 agents
        assert data_of(await pineal.call_tool("get_profile", {}))["found"] is False
    later = _begin(shared_dir, U, session)
    async with http_client(shared_http.url, signed(U, session, later, "shadow")) as shadow:
        history = data_of(await shadow.call_tool("get_session_history", {}))
        assert [t["turn"] for t in history["turns"]] == [turn]
        assert set(history["turns"][0]["entries"]) == {
            "meta",
            "shadow",
            "persona",
            "plasticity",
            "stability",
            "coach",
            "pineal",
        }
