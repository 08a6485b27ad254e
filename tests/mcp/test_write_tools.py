"""The six write tools over the in-memory mcp client: exact schemas, storage, and every kind of bad input."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from blackboard import AGENT_OUTPUT_SCHEMAS, Blackboard, turn_entry_key
from mcp_server import WRITE_TOOL_NAMES, McpConfig, input_schema
from tests.mcp.helpers import SESSION, USER, call, data_of, problem_fields, scoped_server, text_of
from tests.mcp.payloads import STABILITY_BLOCKED_SENT_AS_ALLOWED, payload

pytestmark = pytest.mark.anyio

ALL_TOOLS = {
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


async def test_list_tools_advertises_the_pydantic_schemas(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, None, turn)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == ALL_TOOLS
    for agent, name in WRITE_TOOL_NAMES.items():
        tool = tools[name]
        assert tool.input_schema == input_schema(AGENT_OUTPUT_SCHEMAS[agent])
        assert tool.annotations is not None and tool.annotations.read_only_hint is False
        assert tool.annotations.destructive_hint is False
        assert "On error" in (tool.description or "")
    for name in ("read_entry", "list_entries", "get_profile", "get_session_history", "collect_turn"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint is True
        assert tools[name].input_schema.get("additionalProperties") is False


def _computed_fields(schema: object, path: str = "") -> list[str]:
    """Paths of the properties marked readOnly (computed by validation), at any depth."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in (schema.get("properties") or {}).items():
            if isinstance(value, dict) and value.get("readOnly"):
                found.append(f"{path}/{key}")
        for key, value in schema.items():
            found += _computed_fields(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for value in schema:
            found += _computed_fields(value, path)
    return found


def _properties(schema: object, path: str = "") -> list[str]:
    """Paths of every property, at any depth."""
    found: list[str] = []
    if isinstance(schema, dict):
        found += [f"{path}/{key}" for key in schema.get("properties") or {}]
        for key, value in schema.items():
            found += _properties(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for value in schema:
            found += _properties(value, path)
    return found


async def test_write_tools_input_schemas_hold_only_what_the_model_writes(
    board: Blackboard, turn: str
) -> None:
    async with Client(scoped_server(board, None, turn)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for agent, name in WRITE_TOOL_NAMES.items():
        schema = tools[name].input_schema
        assert _computed_fields(schema) == [], name
        assert not any(p.endswith("/coerced") for p in _properties(schema)), name
        full = AGENT_OUTPUT_SCHEMAS[agent].model_json_schema()
        assert set(schema["properties"]) == {
            k for k, v in full["properties"].items() if not v.get("readOnly")
        }
    assert _computed_fields(AGENT_OUTPUT_SCHEMAS["stability"].model_json_schema())  # the models keep them


async def test_stored_entries_still_carry_the_computed_fields(board: Blackboard, turn: str) -> None:
    result = await call(scoped_server(board, "persona", turn), "write_persona", payload("persona"))
    assert not result.is_error, text_of(result)
    stored = board.store.read(turn_entry_key(USER, SESSION, turn, "persona"))
    assert stored is not None
    assert "coerced" in stored.value
    assert all("band" in score for score in stored.value["traits"].values())


@pytest.mark.parametrize(
    ("agent", "visible_writes"),
    [
        ("persona", {"write_persona"}),
        ("pineal", {"write_synthesis", "collect_turn"}),
        ("coach", {"write_coach"}),
    ],
)
async def test_list_tools_shows_only_own_write_tool(
    board: Blackboard, turn: str, agent: str, visible_writes: set[str]
) -> None:
    async with Client(scoped_server(board, agent, turn)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    reads = {"read_entry", "list_entries", "get_profile", "get_session_history"}
    assert names == reads | visible_writes
    cfg = McpConfig(hide_other_agents_tools=False)
    async with Client(scoped_server(board, agent, turn, config=cfg)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS


@pytest.mark.parametrize("agent", ["shadow", "persona", "plasticity", "stability", "coach"])
async def test_write_tool_stores_entry(board: Blackboard, turn: str, agent: str) -> None:
    result = await call(scoped_server(board, agent, turn), WRITE_TOOL_NAMES[agent], payload(agent))
    assert not result.is_error, text_of(result)
    data = data_of(result)
    key = turn_entry_key(USER, SESSION, turn, agent)
    assert data["stored"] is True and data["version"] == 1 and data["key"] == key
    entry = board.store.read(key)
    assert entry is not None and entry.author == agent and entry.version == 1
    expected = AGENT_OUTPUT_SCHEMAS[agent].model_validate(payload(agent)).model_dump(mode="json")
    assert entry.value == expected


async def test_writing_as_another_agent_is_refused(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, "persona", turn)
    for agent in ("shadow", "stability", "pineal"):
        result = await call(server, WRITE_TOOL_NAMES[agent], payload("shadow"))
        assert result.is_error
        assert data_of(result)["error"] == "tool_not_allowed"
        assert "persona" in text_of(result)
    assert board.read_turn(USER, SESSION, turn).keys() == {"meta"}


async def test_write_without_agent_or_turn_is_refused(board: Blackboard, turn: str) -> None:
    no_agent = await call(scoped_server(board, None, turn), "write_persona", payload("persona"))
    assert no_agent.is_error and data_of(no_agent)["error"] == "tool_not_allowed"
    no_turn = await call(scoped_server(board, "persona", None), "write_persona", payload("persona"))
    assert no_turn.is_error and data_of(no_turn)["error"] == "scope_missing"
    assert board.read_turn(USER, SESSION, turn).keys() == {"meta"}


def _persona_with(**changes: object) -> dict[str, object]:
    p = payload("persona")
    for dotted, value in changes.items():
        node = p
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[part]  # type: ignore[assignment,index]
        node[last] = value  # type: ignore[index]
    return p


@pytest.mark.parametrize(
    ("arguments", "field", "allowed_fragment"),
    [
        (_persona_with(traits__openness__score=150), "traits.openness.score", "from 0 to 100"),
        (_persona_with(traits__openness__score=-1), "traits.openness.score", "from 0 to 100"),
        (_persona_with(traits__openness__score="high"), "traits.openness.score", "number"),
        (_persona_with(traits__openness__confidence=1.5), "traits.openness.confidence", "from 0 to 1"),
        (_persona_with(goals="run more"), "goals", "a list"),
        (_persona_with(traits=[1, 2]), "traits", "an object with fields openness"),
        (_persona_with(summary="x" * 5000), "summary", "at most 1200 characters"),
        (_persona_with(user="bob"), "user", "only the fields traits"),
        (_persona_with(traits__openness__secret=1), "traits.openness.secret", "score"),
        (_persona_with(readiness_stage="ready"), "readiness_stage", "contemplation"),
    ],
)
async def test_bad_persona_input_lists_each_problem(
    board: Blackboard, turn: str, arguments: dict[str, object], field: str, allowed_fragment: str
) -> None:
    result = await call(scoped_server(board, "persona", turn), "write_persona", arguments)
    assert result.is_error
    data = data_of(result)
    assert data["error"] == "invalid_arguments"
    problem = next(p for p in data["problems"] if p["field"] == field)
    assert allowed_fragment in problem["allowed"], problem
    text = text_of(result)
    assert "NOT DONE" in text and f"`{field}`" in text and "What to do" in text
    assert board.store.read(turn_entry_key(USER, SESSION, turn, "persona")) is None


async def test_missing_fields_and_several_problems_at_once(board: Blackboard, turn: str) -> None:
    arguments = _persona_with(traits__neuroticism__score=101, follow_through={"due": -1, "completed": 0})
    del arguments["traits"]["openness"]  # type: ignore[attr-defined]
    result = await call(scoped_server(board, "persona", turn), "write_persona", arguments)
    fields = problem_fields(result)
    assert "traits.openness" in fields and "traits.neuroticism.score" in fields
    assert any(f.startswith("follow_through") for f in fields)
    missing = next(p for p in data_of(result)["problems"] if p["field"] == "traits.openness")
    assert "missing" in missing["problem"] and "score" in missing["allowed"]


async def test_empty_and_non_object_arguments(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, "coach", turn)
    empty = await call(server, "write_coach", {})
    assert empty.is_error and problem_fields(empty) == ["reply"]
    wrong = await call(server, "write_coach", {"reply": 42})
    assert wrong.is_error and "got 42" in data_of(wrong)["problems"][0]["problem"]
    too_long = await call(server, "write_coach", {"reply": "a" * 4001})
    assert too_long.is_error and "1 to 4000 characters" in data_of(too_long)["problems"][0]["allowed"]
    assert "4001 characters" in data_of(too_long)["problems"][0]["problem"]


async def test_oversize_arguments_are_refused_before_validation(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, "coach", turn, config=McpConfig(max_argument_bytes=2048))
    result = await call(server, "write_coach", {"reply": "a" * 3000})
    assert result.is_error and data_of(result)["error"] == "too_large"
    assert "2048" in text_of(result)


async def test_nested_object_sent_as_json_string_is_accepted(board: Blackboard, turn: str) -> None:
    arguments = payload("persona")
    arguments["traits"] = json.dumps(arguments["traits"])
    result = await call(scoped_server(board, "persona", turn), "write_persona", arguments)
    assert not result.is_error, text_of(result)


async def test_stability_gate_blocks_a_move_sent_as_allowed(board: Blackboard, turn: str) -> None:
    result = await call(
        scoped_server(board, "stability", turn), "write_stability", STABILITY_BLOCKED_SENT_AS_ALLOWED
    )
    assert not result.is_error, text_of(result)
    data = data_of(result)
    assert [b["id"] for b in data["blocked_by_gate"]] == ["stop_medication"]
    assert "severity>=9" in data["blocked_by_gate"][0]["block_reasons"]
    stored = board.store.read(turn_entry_key(USER, SESSION, turn, "stability"))
    assert stored is not None
    moves = {m["id"]: m for m in stored.value["moves"]}
    assert moves["stop_medication"]["blocked"] is True
    assert moves["walk_after_lunch"]["blocked"] is False
    brief = board.brief(USER, SESSION, turn)
    assert [b.id for b in brief.blocked_moves] == ["stop_medication"]


@pytest.mark.parametrize(
    ("field", "value"), [("severity", 11), ("severity", 0), ("reversibility", 10.5), ("occurrence", "3x")]
)
async def test_stability_out_of_range_ratings(
    board: Blackboard, turn: str, field: str, value: object
) -> None:
    arguments = payload("stability")
    arguments["moves"][0][field] = value
    result = await call(scoped_server(board, "stability", turn), "write_stability", arguments)
    assert result.is_error
    problem = next(p for p in data_of(result)["problems"] if p["field"] == f"moves.0.{field}")
    assert "from 1 to 10" in problem["allowed"]


async def test_semantic_rule_is_coerced_to_the_safe_value_and_said(board: Blackboard, turn: str) -> None:
    arguments = payload("shadow")
    arguments["pattern_class"] = "consistent_executor"  # needs >= 3 due commitments over >= 2 sessions
    result = await call(scoped_server(board, "shadow", turn), "write_shadow", arguments)
    assert not result.is_error  # stored, downgraded to the safe class, and the note says so
    data = data_of(result)
    assert data["coerced"][0].startswith("class_downgraded:consistent_executor:")
    assert "coerced" in text_of(result)
    stored = board.store.read(turn_entry_key(USER, SESSION, turn, "shadow"))
    assert stored is not None and stored.value["pattern_class"] == "insufficient_data"


async def test_version_conflict_returns_current_version_and_keeps_entry(board: Blackboard, turn: str) -> None:
    server = scoped_server(board, "coach", turn)
    first = await call(server, "write_coach", {"reply": "first reply"})
    assert not first.is_error
    same = await call(server, "write_coach", {"reply": "first reply"})  # a repeat: success, stop now
    assert not same.is_error
    assert data_of(same)["already_stored"] and data_of(same)["version"] == 1
    assert "already stored as version 1; stop now" in data_of(same)["message"].lower()
    second = await call(server, "write_coach", {"reply": "second reply"})
    assert second.is_error
    data = data_of(second)
    assert data["error"] == "version_conflict" and data["current_version"] == 1
    assert data["key"] == turn_entry_key(USER, SESSION, turn, "coach")
    assert "read_entry" in text_of(second)
    history = board.store.history(data["key"])
    assert [e.value["reply"] for e in history] == ["first reply"]


async def test_write_to_a_turn_never_begun(board: Blackboard, turn: str) -> None:
    result = await call(scoped_server(board, "coach", "t999999"), "write_coach", {"reply": "hello"})
    assert result.is_error and data_of(result)["error"] == "turn_not_open"
