"""AgentPolicy.forced_tool_only: a forced call carries the forced tool alone (fewer prompt tokens)."""

from __future__ import annotations

import pytest

from proxy import AgentPolicy

from .fakes import FakeUpstream, Sse, make_config, msg_body, proxy_client, tool_chunks

pytestmark = pytest.mark.anyio
WRITE = {"name": "mcp__coachboard__write_coach", "description": "", "input_schema": {"type": "object"}}
READ = {"name": "mcp__coachboard__read_entry", "description": "read", "input_schema": {"type": "object"}}
H = {"x-coach-agent": "coach", "x-coach-user": "u1", "x-coach-session": "s1", "x-coach-turn": "t1"}


@pytest.mark.parametrize("only", [True, False])
async def test_a_forced_call_carries_only_the_forced_tool_when_asked(only: bool) -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks(WRITE["name"], '{"reply": "hi"}')))
    cfg = make_config(
        agents={"coach": AgentPolicy(force_tool="write_coach", stop_after_tool=True, forced_tool_only=only)}
    )
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(tools=[READ, WRITE]), headers=H)
    assert r.json()["stop_reason"] == "tool_use"
    (call,) = up.calls()
    names = [t["function"]["name"] for t in call.json["tools"]]
    assert names == ([WRITE["name"]] if only else [READ["name"], WRITE["name"]])


def test_generated_policies_send_the_forced_tool_alone() -> None:
    from launcher.agents import load_agents
    from launcher.agents.policies import policies_from_agents

    policies = policies_from_agents(load_agents("agents"))
    assert all(
        p.forced_tool_only == (p.force_tool is not None and name != "pineal") for name, p in policies.items()
    )
