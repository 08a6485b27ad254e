"""Read tools, collect_turn and write_synthesis over the in-memory mcp client, including foreign scope."""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.to_thread
import pytest
from anyio import wait_all_tasks_blocked
from mcp import Client

from blackboard import Blackboard, profile_key, turn_entry_key
from mcp_server import McpConfig
from tests.mcp.helpers import SESSION, USER, call, data_of, scoped_server, text_of
from tests.mcp.payloads import STABILITY_BLOCKED_SENT_AS_ALLOWED, payload

pytestmark = pytest.mark.anyio

SPECIALISTS = ("shadow", "persona", "plasticity", "stability", "coach")


def _write_all(board: Blackboard, turn: str, *, stability: dict[str, object] | None = None) -> None:
    for agent in SPECIALISTS:
        value = stability if (agent == "stability" and stability is not None) else payload(agent)
        board.write_output(USER, SESSION, turn, agent, value)  # type: ignore[arg-type]


async def test_read_entry_forms(board: Blackboard, turn: str) -> None:
    board.write_output(USER, SESSION, turn, "shadow", payload("shadow"))
    server = scoped_server(board, "persona", turn)
    key = turn_entry_key(USER, SESSION, turn, "shadow")
    for form in ("shadow", f"turns/{turn}/shadow", key):
        data = data_of(await call(server, "read_entry", {"key": form}))
        assert data["found"] is True and data["key"] == key and data["version"] == 1
        assert data["author"] == "shadow" and data["value"]["pattern_class"] == "insufficient_data"
    missing = await call(server, "read_entry", {"key": "persona"})
    assert not missing.is_error and data_of(missing)["found"] is False
    session = data_of(await call(server, "read_entry", {"key": "session"}))
    assert session["found"] is True and session["value"]["turn_count"] == 1


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("users/bob/sessions/s1/turns/t000001/shadow", "out_of_scope"),
        ("users/bob/profile", "out_of_scope"),
        ("users/alice/sessions/other/turns/t000001/shadow", "out_of_scope"),
        ("turns/../../../../bob/profile", "invalid_key"),
        ("../bob", "invalid_key"),
        ("shadow\x00", "invalid_key"),
    ],
)
async def test_read_entry_refuses_foreign_scope(board: Blackboard, turn: str, key: str, code: str) -> None:
    # Bob's data exists; it must stay unreachable from Alice's connection.
    bob_turn = board.begin_turn("bob", "s1")
    board.write_output("bob", "s1", bob_turn, "shadow", payload("shadow"))
    board.store.write(profile_key("bob"), {"secret": "bob's profile"}, expected_version=0, author="test")
    result = await call(scoped_server(board, "persona", turn), "read_entry", {"key": key})
    assert result.is_error
    assert data_of(result)["error"] == code
    assert "bob's profile" not in text_of(result) and "insufficient_data" not in text_of(result)


async def test_arguments_naming_a_user_or_session_are_refused(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, "persona", turn)
    for tool, args in [
        ("read_entry", {"key": "shadow", "user": "bob"}),
        ("list_entries", {"prefix": "", "session": "other"}),
        ("get_profile", {"user": "bob"}),
        ("get_session_history", {"session": "s2"}),
    ]:
        result = await call(server, tool, args)
        assert result.is_error, tool
        problem = data_of(result)["problems"][0]
        assert problem["problem"].startswith("is not a known field"), problem


async def test_list_entries(board: Blackboard, turn: str) -> None:
    _write_all(board, turn)
    board.begin_turn("bob", SESSION)
    server = scoped_server(board, "coach", turn)
    data = data_of(await call(server, "list_entries", {}))
    keys = [e["key"] for e in data["entries"]]
    assert all(k.startswith(f"users/{USER}/sessions/{SESSION}/") for k in keys)
    assert turn_entry_key(USER, SESSION, turn, "shadow") in keys and "value" not in data["entries"][0]
    one = data_of(
        await call(server, "list_entries", {"prefix": f"turns/{turn}/pers", "include_values": True})
    )
    assert [e["key"] for e in one["entries"]] == [turn_entry_key(USER, SESSION, turn, "persona")]
    assert one["entries"][0]["value"]["traits"]["openness"]["band"] == "high"
    limited = data_of(await call(server, "list_entries", {"limit": 2}))
    assert limited["count"] == len(keys) and len(limited["entries"]) == 2 and limited["truncated"] is True
    for prefix in ("users/", "users/bob/", "users/alice/sessions/", "turns/../.."):
        refused = await call(server, "list_entries", {"prefix": prefix})
        assert refused.is_error, prefix
    bad = await call(server, "list_entries", {"limit": 0})
    assert bad.is_error and "from 1 to 500" in data_of(bad)["problems"][0]["allowed"]


async def test_get_profile(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, "shadow", turn)
    empty = data_of(await call(server, "get_profile"))
    assert empty["found"] is False and empty["profile"] is None
    board.store.write(profile_key(USER), {"user": USER, "note": "x"}, expected_version=0, author="blackboard")
    board.store.write(profile_key("bob"), {"user": "bob"}, expected_version=0, author="blackboard")
    found = data_of(await call(server, "get_profile"))
    assert found["found"] is True and found["profile"]["user"] == USER and found["version"] == 1


async def test_get_session_history_returns_earlier_turns(board: Blackboard, turn: str) -> None:
    board.write_output(USER, SESSION, turn, "coach", payload("coach"))
    second = board.begin_turn(USER, SESSION)
    third = board.begin_turn(USER, SESSION)
    board.write_output(USER, SESSION, second, "coach", {"reply": "second turn reply"})
    board.write_output(USER, "other", board.begin_turn(USER, "other"), "coach", {"reply": "other session"})
    server = scoped_server(board, "shadow", third)
    data = data_of(await call(server, "get_session_history", {}))
    assert [t["turn"] for t in data["turns"]] == [turn, second]
    assert data["turns"][1]["entries"]["coach"]["value"]["reply"] == "second turn reply"
    assert "other session" not in text_of(await call(server, "get_session_history", {}))
    last = data_of(await call(server, "get_session_history", {"last_n": 1}))
    assert [t["turn"] for t in last["turns"]] == [second]


async def test_collect_turn_returns_brief_versions_and_missing(board: Blackboard, turn: str) -> None:
    _write_all(board, turn, stability=STABILITY_BLOCKED_SENT_AS_ALLOWED)
    result = await call(scoped_server(board, "pineal", turn), "collect_turn", {"deadline_s": 5})
    assert not result.is_error, text_of(result)
    data = data_of(result)
    assert data["missing"] == [] and data["timed_out"] is False
    assert set(data["arrived"]) == set(SPECIALISTS)
    assert data["versions"] == dict.fromkeys(SPECIALISTS, 1)
    assert [b["id"] for b in data["brief"]["blocked_moves"]] == ["stop_medication"]


async def test_collect_turn_deadline_lists_missing_agents(board: Blackboard, turn: str) -> None:
    board.write_output(USER, SESSION, turn, "shadow", payload("shadow"))
    board.write_output(USER, SESSION, turn, "coach", payload("coach"))
    result = await call(scoped_server(board, "pineal", turn), "collect_turn", {"deadline_s": 0.3})
    data = data_of(result)
    assert data["timed_out"] is True
    assert sorted(data["missing"]) == ["persona", "plasticity", "stability"]
    assert data["versions"] == {"shadow": 1, "coach": 1}
    assert "missing: persona, plasticity, stability" in text_of(result)


async def test_collect_turn_is_pineal_only_and_bounded(board: Blackboard, turn: str) -> None:
    refused = await call(scoped_server(board, "coach", turn), "collect_turn", {})
    assert refused.is_error and data_of(refused)["error"] == "tool_not_allowed"
    too_long = await call(scoped_server(board, "pineal", turn), "collect_turn", {"deadline_s": 99999})
    assert too_long.is_error and "3600" in data_of(too_long)["problems"][0]["allowed"]
    # The server caps the model's deadline at collect_deadline_max_s.
    cfg = McpConfig(collect_deadline_max_s=0.2)
    capped = data_of(
        await call(scoped_server(board, "pineal", turn, config=cfg), "collect_turn", {"deadline_s": 3000})
    )
    assert capped["timed_out"] is True and "shadow" in capped["missing"]


async def test_write_synthesis_valid(board: Blackboard, turn: str) -> None:
    _write_all(board, turn)
    server = scoped_server(board, "pineal", turn)
    async with Client(server) as client:
        brief = data_of(await client.call_tool("collect_turn", {"deadline_s": 2}))
        citations = [{"agent": a, "version": v} for a, v in brief["versions"].items()]
        result = await client.call_tool(
            "write_synthesis", {"text": "A small step: a walk.", "citations": citations}
        )
    assert not result.is_error, text_of(result)
    entry = board.store.read(turn_entry_key(USER, SESSION, turn, "pineal"))
    assert entry is not None and entry.value["text"] == "A small step: a walk."


async def test_write_synthesis_rejected_then_fallback(
    board: Blackboard, turn: str, caplog: pytest.LogCaptureFixture
) -> None:
    _write_all(board, turn, stability=STABILITY_BLOCKED_SENT_AS_ALLOWED)
    server = scoped_server(board, "pineal", turn)
    bad = {
        "text": "You could stop taking the prescribed medication for a week.",
        "citations": [
            {"agent": "persona", "version": 7},
            {"key": turn_entry_key(USER, SESSION, turn, "meta"), "version": 1},
        ],
    }
    with caplog.at_level("INFO", logger="mcp_server.tools"):
        first = await call(server, "write_synthesis", bad)
    assert first.is_error
    (logged,) = [r.getMessage() for r in caplog.records if "write_synthesis rejected" in r.getMessage()]
    assert "attempt 1" in logged and "citation" in logged and "medication" not in logged  # codes, never text
    data = data_of(first)
    assert data["error"] == "synthesis_rejected"
    fields = [p["field"] for p in data["problems"]]
    assert "text" in fields and "citations.0" in fields and "citations.1" in fields
    assert "stop_medication" in text_of(first)
    assert board.store.read(turn_entry_key(USER, SESSION, turn, "pineal")) is None
    second = await call(server, "write_synthesis", bad)
    # a success result (the client's stop-after-tool then ends the turn), saying the fallback is stored
    assert not second.is_error
    data = data_of(second)
    assert data["code"] == "synthesis_replaced_by_fallback" and data["fallback"] and data["version"] == 1
    assert "stop now" in data["message"] and data["rejected_problems"]
    stored = board.store.read(turn_entry_key(USER, SESSION, turn, "pineal"))
    assert stored is not None and "medication" not in stored.value["text"].lower()
    assert {c["agent"] for c in stored.value["citations"]} == set(SPECIALISTS)
    third = await call(server, "write_synthesis", bad)  # again: still a success, nothing rewritten
    assert not third.is_error and data_of(third)["version"] == 1
    assert len(board.store.history(stored.key)) == 1


async def test_fallback_can_be_disabled(board: Blackboard, turn: str) -> None:
    _write_all(board, turn)
    server = scoped_server(board, "pineal", turn, config=McpConfig(synthesis_attempts=0))
    for _ in range(3):
        result = await call(server, "write_synthesis", {"text": "No citations here."})
        assert data_of(result)["error"] == "synthesis_rejected"
    assert board.store.read(turn_entry_key(USER, SESSION, turn, "pineal")) is None


async def test_waiting_collects_do_not_starve_writes(board: Blackboard, turn: str) -> None:
    # Shrink anyio's default thread pool to one thread: if collect_turn waits held default threads,
    # the writes they wait for could not run and every collect would time out.
    anyio.to_thread.current_default_thread_limiter().total_tokens = 1
    pineal = scoped_server(board, "pineal", turn)
    results: list[dict[str, Any]] = []

    async def collect() -> None:
        results.append(data_of(await call(pineal, "collect_turn", {"deadline_s": 30})))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(collect)
        await wait_all_tasks_blocked()
        for agent in SPECIALISTS:
            stored = await call(scoped_server(board, agent, turn), f"write_{agent}", payload(agent))
            assert not stored.is_error
    assert len(results) == 3 and all(r["timed_out"] is False for r in results)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    ("agent", "tool", "args", "field", "allowed"),
    [
        ("coach", "read_entry", {}, "key", "text of 1 to 400 characters"),
        ("coach", "read_entry", {"key": ""}, "key", "text of 1 to 400 characters"),
        ("coach", "read_entry", {"key": 5}, "key", "text"),
        ("coach", "read_entry", {"key": "x" * 401}, "key", "text of 1 to 400 characters"),
        ("coach", "list_entries", {"limit": "many"}, "limit", "a whole number from 1 to 500"),
        ("coach", "list_entries", {"include_values": "maybe"}, "include_values", "true or false"),
        ("coach", "get_profile", {"anything": 1}, "anything", ""),
        ("coach", "get_session_history", {"last_n": 0}, "last_n", "a whole number from 1 to 1000"),
        ("pineal", "collect_turn", {"deadline_s": -1}, "deadline_s", "3600"),
        ("pineal", "collect_turn", {"deadline_s": "soon"}, "deadline_s", "a number"),
    ],
)
async def test_read_tools_bad_input(
    board: Blackboard, turn: str, agent: str, tool: str, args: dict[str, object], field: str, allowed: str
) -> None:
    result = await call(scoped_server(board, agent, turn), tool, args)
    assert result.is_error
    problem = next(p for p in data_of(result)["problems"] if p["field"] == field)
    assert allowed in problem["allowed"], problem
