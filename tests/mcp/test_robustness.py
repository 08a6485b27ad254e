"""No input crashes the server; no user text is logged at info level; unexpected failures stay generic."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from blackboard import Blackboard
from mcp_server import HeaderScope, McpConfig, build_server
from tests.mcp.helpers import call, data_of, scoped_server, text_of
from tests.mcp.payloads import payload

TOOLS = [
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
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
arguments = st.dictionaries(
    st.sampled_from(["key", "prefix", "reply", "text", "traits", "moves", "deadline_s", "limit", "user", "x"])
    | st.text(max_size=10),
    json_values,
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(TOOLS), args=arguments)
def test_random_arguments_never_crash(board: Blackboard, turn: str, tool: str, args: dict[str, Any]) -> None:
    agent = {"write_synthesis": "pineal", "collect_turn": "pineal"}.get(tool, tool.removeprefix("write_"))
    agent = agent if agent in ("shadow", "persona", "plasticity", "stability", "coach", "pineal") else "coach"
    # collect_turn must not wait long: cap every deadline at 50 ms.
    fast = McpConfig(collect_deadline_s=0.05, collect_deadline_max_s=0.05)

    async def run() -> None:
        async with Client(scoped_server(board, agent, turn, config=fast)) as client:
            result = await client.call_tool(tool, args)
            assert result.content, "every result carries text for the model"
            if result.is_error:
                assert data_of(result)["ok"] is False
            # The server still answers afterwards.
            assert (await client.call_tool("get_profile", {})).is_error is False

    anyio.run(run)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "args",
    [
        {"reply": "\x00\ud800 unpaired surrogate"},
        {"reply": 10**400},
        {"reply": [[[[[[[[[[]]]]]]]]]]},
        {"reply": {"nested": "x" * 100_000}},
        {"reply": "ok", "": None},
        {"reply": float("inf")},
    ],
)
async def test_nasty_values(board: Blackboard, turn: str, args: dict[str, Any]) -> None:
    result = await call(scoped_server(board, "coach", turn), "write_coach", args)
    assert result.is_error
    assert data_of(result)["error"] in ("invalid_arguments", "too_large")


@pytest.mark.anyio
async def test_deeply_nested_arguments(board: Blackboard, turn: str) -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    result = await call(scoped_server(board, "coach", turn), "write_coach", {"reply": deep})
    assert result.is_error


@pytest.mark.anyio
async def test_unknown_tool(board: Blackboard, turn: str) -> None:
    result = await call(scoped_server(board, "coach", turn), "delete_everything", {})
    assert result.is_error and "Unknown tool" in text_of(result)


@pytest.mark.anyio
async def test_http_scope_without_headers_is_refused(board: Blackboard, turn: str) -> None:
    # In memory there is no HTTP request, so a header-scoped server has no scope: every tool refuses.
    server = build_server(board, HeaderScope())
    for tool in ("read_entry", "write_coach", "get_profile"):
        result = await call(server, tool, {"key": "coach", "reply": "x"})
        assert result.is_error and data_of(result)["error"] == "scope_missing", tool


@pytest.mark.anyio
async def test_no_user_text_in_logs(board: Blackboard, turn: str, caplog: pytest.LogCaptureFixture) -> None:
    secret = "MY-PRIVATE-WORDS-42"
    caplog.set_level(logging.DEBUG)
    server = scoped_server(board, "coach", turn)
    await call(server, "write_coach", {"reply": 123, "note": secret})  # invalid
    await call(server, "write_coach", {"reply": f"{secret} " * 3})  # stored
    await call(server, "write_coach", {"reply": secret})  # conflict
    await call(server, "read_entry", {"key": f"users/{secret}/profile"})  # refused
    await call(server, "no_such_tool", {"reply": secret})
    info_and_above = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert info_and_above, "tool outcomes are logged"
    assert not [m for m in info_and_above if secret in m]
    assert any("tool=write_coach agent=coach outcome=version_conflict" in m for m in info_and_above)


class _Exploding(Blackboard):
    def write_output(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail with user text: MY-PRIVATE-WORDS-42")


@pytest.mark.anyio
async def test_unexpected_failure_is_generic_and_not_leaked(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    board = _Exploding(tmp_path)
    try:
        turn = board.begin_turn("alice", "s1")
        caplog.set_level(logging.INFO)
        result = await call(scoped_server(board, "coach", turn), "write_coach", payload("coach"))
    finally:
        board.close()
    assert result.is_error and data_of(result)["error"] == "internal_error"
    assert "MY-PRIVATE-WORDS-42" not in text_of(result)
    assert not [r for r in caplog.records if "MY-PRIVATE-WORDS-42" in r.getMessage()]
    assert any("RuntimeError" in r.getMessage() for r in caplog.records)


def test_building_the_server_leaves_host_logging_alone(
    board: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = logging.getLogger()
    # A host process that has not configured logging yet (pytest's own handlers set aside).
    monkeypatch.setattr(root, "handlers", [])
    level = root.level
    build_server(board, HeaderScope())
    assert root.handlers == [] and root.level == level
