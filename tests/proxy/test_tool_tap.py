"""create_app(on_tool_delta=...): a forced tool call's arguments are observed while they stream in, and
the client still gets the call whole, after validation."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from proxy import AgentPolicy, ToolArgsEvent, check_events, create_app, parse_sse

from .fakes import FakeUpstream, Sse, make_config, msg_body

pytestmark = pytest.mark.anyio
TOOL = "mcp__coachboard__write_coach"
SCHEMA = {
    "type": "object",
    "properties": {"risk": {"type": "object"}, "reply": {"type": "string"}},
    "required": ["risk", "reply"],
}
H = {"x-coach-agent": "coach", "x-coach-user": "u1", "x-coach-session": "s1", "x-coach-turn": "t000001"}
ARGS = json.dumps(
    {"risk": {"tier": 0, "family": "none", "quote": ""}, "reply": 'Caf\u00e9 time \u2014 "one" run?'}
)


def fragments(args: str, size: int) -> list[dict[str, Any]]:
    first = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": TOOL, "arguments": ""},
                        }
                    ]
                },
                "finish_reason": None,
            }
        ]
    }
    parts = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + size]}}]},
                    "finish_reason": None,
                }
            ]
        }
        for i in range(0, len(args), size)
    ]
    return [
        first,
        *parts,
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12}},
    ]


async def post(
    up: FakeUpstream,
    observed: list[ToolArgsEvent],
    body: dict[str, Any],
    headers: dict[str, str],
    **policy: Any,
) -> httpx.Response:
    cfg = make_config(agents={"coach": AgentPolicy(force_tool="write_coach", stop_after_tool=True, **policy)})
    app = create_app(cfg, transport=up.transport, health_checks=False, on_tool_delta=observed.append)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30
    ) as c:
        return await c.post("/v1/messages", json=body, headers=headers)


async def test_the_forced_calls_reply_is_observed_as_it_streams_and_delivered_whole() -> None:
    up = FakeUpstream(lambda b: Sse(fragments(ARGS, 3)))
    observed: list[ToolArgsEvent] = []
    r = await post(
        up,
        observed,
        msg_body(tools=[{"name": TOOL, "description": "", "input_schema": SCHEMA}], stream=True),
        H,
    )
    events = parse_sse(r.text)
    assert check_events(events) == []
    whole = [
        e["delta"]["partial_json"] for e in events if e.get("delta", {}).get("type") == "input_json_delta"
    ]
    assert [json.loads(w) for w in whole] == [json.loads(ARGS)]  # one delta: the validated call
    texts = [e.text_of("reply") for e in observed if e.text_of("reply") is not None]
    final = json.loads(ARGS)["reply"]
    assert len(texts) > 5 and all(final.startswith(t) for t in texts) and texts[-1] == final
    first = next(e for e in observed if e.text_of("reply") is not None)
    assert first.members["risk"] == {"tier": 0, "family": "none", "quote": ""} and first.order[0] == "risk"
    assert {(e.agent, e.user, e.session, e.turn, e.tool) for e in observed} == {
        ("coach", "u1", "s1", "t000001", TOOL)
    }
    assert observed[0].properties == ("risk", "reply") and observed[-1].complete
    assert len({e.request_id for e in observed}) == 1


async def test_requests_without_a_forced_tool_are_not_observed() -> None:
    up = FakeUpstream(lambda b: Sse(fragments(ARGS, 5)))
    observed: list[ToolArgsEvent] = []
    await post(
        up,
        observed,
        msg_body(tools=[{"name": TOOL, "description": "", "input_schema": SCHEMA}]),
        {**H, "x-coach-agent": "persona"},
    )
    assert observed == []


async def test_an_observer_that_raises_never_breaks_the_response() -> None:
    up = FakeUpstream(lambda b: Sse(fragments(ARGS, 4)))
    calls: list[int] = []

    def boom(ev: ToolArgsEvent) -> None:
        calls.append(1)
        raise RuntimeError("display broke")

    cfg = make_config(agents={"coach": AgentPolicy(force_tool="write_coach")})
    app = create_app(cfg, transport=up.transport, health_checks=False, on_tool_delta=boom)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30
    ) as c:
        r = await c.post(
            "/v1/messages",
            headers=H,
            json=msg_body(tools=[{"name": TOOL, "description": "", "input_schema": SCHEMA}], stream=True),
        )
    assert check_events(parse_sse(r.text)) == [] and calls == [1]  # the tap stopped after the failure


async def test_the_calls_first_fragment_is_observed_before_any_member_is_complete() -> None:
    # the supervisor learns from it that the agent's prompt is in (it sends Pineal's prefill then)
    args = json.dumps({"risk": {"tier": 0, "family": "none", "quote": ""}, "reply": "ok"})
    up = FakeUpstream(lambda b: Sse(fragments(args, 2)))
    observed: list[ToolArgsEvent] = []
    await post(up, observed, msg_body(tools=[{"name": TOOL, "description": "", "input_schema": SCHEMA}]), H)
    assert observed[0].members == {} and observed[0].partial_key is None and not observed[0].complete
    assert observed[-1].complete
