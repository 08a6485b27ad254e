"""Scripts pick the right step; agents are identified; failure steps behave; requests are recorded."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from testsupport import (
    Delay,
    Error,
    Garbage,
    Hang,
    ModelRequest,
    ScriptedUpstream,
    ScriptError,
    Text,
    ToolCall,
    match_forced_tool,
    match_system_marker,
    match_tool,
)

TOOLS = [{"name": "mcp__coachboard__write_shadow", "input_schema": {"type": "object"}}]


def _tool_round(n: int) -> list[dict[str, Any]]:
    """A conversation after ``n`` tool calls (assistant tool_use + user tool_result each)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "turn text"}]
    for i in range(n):
        msgs.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}]}
        )
        msgs.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"},
                    {"type": "text", "text": "<system-reminder>r</system-reminder>"},
                ],
            }
        )
    return msgs


async def _ask(up: ScriptedUpstream, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    headers = extra.pop("headers", {"x-coach-agent": "shadow"})
    async with up.client() as c:
        r = await c.post(
            "/v1/messages",
            headers=headers,
            json={"model": "m", "max_tokens": 4000, "tools": TOOLS, "messages": messages, **extra},
        )
        assert r.status_code == 200, r.text
        return dict(r.json())


@pytest.mark.anyio
async def test_step_chosen_by_assistant_turns_then_default() -> None:
    up = ScriptedUpstream(
        {"shadow": [ToolCall("write_shadow", {"p": 1}), Text("written")]}, default_text="bye"
    )
    first = await _ask(up, _tool_round(0))
    assert first["content"][0]["name"] == "mcp__coachboard__write_shadow"
    assert first["content"][0]["input"] == {"p": 1} and first["stop_reason"] == "tool_use"
    second = await _ask(up, _tool_round(1))
    assert second["content"] == [{"type": "text", "text": "written"}] and second["stop_reason"] == "end_turn"
    third = await _ask(up, _tool_round(2))
    assert third["content"][0]["text"] == "bye"
    assert [r.step_index for r in up.model_calls("shadow")] == [0, 1, 2]


@pytest.mark.anyio
async def test_new_user_text_restarts_the_script_in_a_warm_conversation() -> None:
    up = ScriptedUpstream({"shadow": [Text("step0"), Text("step1")]})
    history = [
        *_tool_round(1),
        {"role": "assistant", "content": "earlier reply"},
        {"role": "user", "content": "next turn's message"},
    ]
    reply = await _ask(up, history)
    assert reply["content"][0]["text"] == "step0"


def test_openai_tool_role_does_not_start_a_turn() -> None:
    req = ModelRequest(
        "openai",
        {
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": "ok"},
            ]
        },
        {},
    )
    assert req.step_index == 1 and req.system_text == "sys"


@pytest.mark.anyio
async def test_agent_identified_by_header_then_matchers() -> None:
    up = ScriptedUpstream(
        {"shadow": [Text("from shadow")], "pineal": [Text("from pineal")], "coach": [Text("from coach")]},
        matchers=[
            match_forced_tool({"write_synthesis": "pineal"}),
            match_system_marker({"[agent:coach]": "coach"}),
            match_tool({"write_shadow": "shadow"}),
        ],
    )
    by_tool = await _ask(up, _tool_round(0), headers={})
    assert by_tool["content"][0]["text"] == "from shadow"
    forced = await _ask(
        up,
        _tool_round(0),
        headers={},
        tool_choice={"type": "tool", "name": "mcp__coachboard__write_synthesis"},
    )
    assert forced["content"][0]["text"] == "from pineal"
    marked = await _ask(
        up, _tool_round(0), headers={}, system=[{"type": "text", "text": "x [agent:coach] y"}]
    )
    assert marked["content"][0]["text"] == "from coach"
    header = await _ask(up, _tool_round(0), headers={"x-coach-agent": "Pineal"})
    assert header["content"][0]["text"] == "from pineal"
    assert [r.agent for r in up.model_calls()] == ["shadow", "pineal", "coach", "pineal"]


@pytest.mark.anyio
async def test_unknown_agent_gets_default_text() -> None:
    up = ScriptedUpstream({"shadow": [Text("x")]}, default_text="fallback")
    reply = await _ask(up, _tool_round(0), headers={"x-coach-agent": "nobody"})
    assert reply["content"][0]["text"] == "fallback" and reply["stop_reason"] == "end_turn"


@pytest.mark.anyio
async def test_callable_script_receives_the_request() -> None:
    seen: list[int] = []

    def script(req: ModelRequest) -> Text:
        seen.append(req.step_index)
        return Text(f"agent={req.agent} step={req.step_index}")

    up = ScriptedUpstream({"shadow": script})
    reply = await _ask(up, _tool_round(2))
    assert reply["content"][0]["text"] == "agent=shadow step=2" and seen == [2]


@pytest.mark.anyio
async def test_error_steps_use_each_protocols_shape() -> None:
    up = ScriptedUpstream(
        {"shadow": [Error(529, message="overloaded")], "coach": [Error(418, body={"raw": True})]}
    )
    async with up.client() as c:
        r = await c.post(
            "/v1/messages",
            headers={"x-coach-agent": "shadow"},
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]},
        )
        assert r.status_code == 529 and r.json()["error"]["type"] == "overloaded_error"
        r = await c.post(
            "/v1/chat/completions",
            headers={"x-coach-agent": "shadow"},
            json={"model": "m", "messages": [{"role": "user", "content": "q"}]},
        )
        assert r.status_code == 529 and r.json()["message"] == "overloaded"
        r = await c.post(
            "/v1/messages",
            headers={"x-coach-agent": "coach"},
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]},
        )
        assert r.status_code == 418 and r.json() == {"raw": True}
        r = await c.post("/v1/messages", content=b"{not json")
        assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    assert [r.status for r in up.requests] == [529, 529, 418, 400]


@pytest.mark.anyio
async def test_garbage_is_not_json_nor_sse() -> None:
    up = ScriptedUpstream({"shadow": [Garbage()]})
    async with up.client() as c:
        r = await c.post(
            "/v1/messages",
            headers={"x-coach-agent": "shadow"},
            json={
                "model": "m",
                "max_tokens": 5,
                "stream": True,
                "messages": [{"role": "user", "content": "q"}],
            },
        )
    assert r.status_code == 200 and "event:" not in r.text and "data:" not in r.text
    with pytest.raises(ValueError):
        r.json()


@pytest.mark.anyio
async def test_delay_is_scaled_then_plays_its_step() -> None:
    up = ScriptedUpstream({"shadow": [Delay(2.0, Text("late"))]}, time_scale=0.05)
    start = anyio.current_time()
    reply = await _ask(up, _tool_round(0))
    assert reply["content"][0]["text"] == "late"
    assert 0.1 - 0.01 <= anyio.current_time() - start < 1.0
    (rec,) = up.model_calls()
    assert rec.step == Text("late") and rec.extra["delay_s"] == 2.0


@pytest.mark.anyio
async def test_hang_never_answers_until_stopped() -> None:
    up = ScriptedUpstream({"shadow": [Hang()]})
    async with up.client() as c:
        with anyio.move_on_after(0.3) as scope:
            await c.post(
                "/v1/messages",
                headers={"x-coach-agent": "shadow"},
                json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]},
            )
        assert scope.cancelled_caught
    (rec,) = up.model_calls()
    assert rec.error == "hang" and rec.status is None


def test_bad_step_type_is_a_script_error() -> None:
    from testsupport.script import pick_step

    with pytest.raises(ScriptError):
        pick_step(["not a step"], ModelRequest("anthropic", {"messages": []}, {}), Text("d"))  # type: ignore[list-item]


@pytest.mark.anyio
async def test_recording_keeps_body_headers_and_times() -> None:
    up = ScriptedUpstream({"shadow": [Text("x")]})
    await _ask(up, _tool_round(0), headers={"x-coach-agent": "shadow", "x-coach-turn": "7"})
    (rec,) = up.model_calls()
    assert rec.body["messages"][0]["content"] == "turn text" and rec.headers["x-coach-turn"] == "7"
    assert rec.first_byte_at is not None and rec.finished_at is not None
    assert rec.arrived_at <= rec.first_byte_at <= rec.finished_at
    assert rec.status == 200 and rec.output_tokens == 1 and rec.step == Text("x")
    up.reset()
    assert up.requests == []


def test_steps_round_trip_through_json() -> None:
    from testsupport.script import scripts_from_json, step_from_json, step_to_json

    steps = [
        Text("t"),
        ToolCall("write_shadow", {"a": [1]}, text="pre"),
        ToolCall("x", "{bad json"),
        Error(503, {"e": 1}),
        Hang(True),
        Delay(0.5, Text("late")),
        Delay(1.0),
        Garbage("zz"),
    ]
    for step in steps:
        assert step_from_json(step_to_json(step)) == step
    assert scripts_from_json({"coach": [{"type": "text", "text": "hi"}]}) == {"coach": [Text("hi")]}
    with pytest.raises(ScriptError, match="unknown step type"):
        step_from_json({"type": "sing"})
    with pytest.raises(ScriptError, match="missing or has a bad field"):
        step_from_json({"type": "tool_call"})


@pytest.mark.anyio
async def test_callable_returning_a_non_step_is_a_500_naming_the_agent() -> None:
    up = ScriptedUpstream({"shadow": lambda req: "oops"})
    async with up.client() as c:
        r = await c.post(
            "/v1/messages",
            headers={"x-coach-agent": "shadow"},
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]},
        )
    assert r.status_code == 500 and "shadow" in r.json()["error"]["message"]
