"""The running proxy's live state: per-agent policies replaced while it serves
(``ProxyState.set_agent_policies``), and the turn of requests without ``x-coach-turn`` resolved
server-side (``create_app(turn_for=...)``), in the usage log and the upstream headers."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from proxy import AgentPolicy, create_app

from .fakes import FakeUpstream, make_config, msg_body

pytestmark = pytest.mark.anyio
WARM = {"x-coach-agent": "shadow", "x-coach-user": "u1", "x-coach-session": "s1"}  # no x-coach-turn


def client(app: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30)  # type: ignore[arg-type]


async def test_replaced_policies_apply_to_the_next_request_and_bad_ones_change_nothing() -> None:
    up = FakeUpstream()
    app = create_app(
        make_config(agents={"shadow": AgentPolicy(max_tokens=300)}),
        transport=up.transport,
        health_checks=False,
    )
    state = app.state.proxy
    async with client(app) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=4000), headers=WARM)
        state.set_agent_policies({"Shadow": AgentPolicy(max_tokens=120), "coach": {"max_tokens": 50}})
        await c.post("/v1/messages", json=msg_body(max_tokens=4000), headers=WARM)
        await c.post(
            "/v1/messages", json=msg_body(max_tokens=4000), headers={**WARM, "x-coach-agent": "coach"}
        )
        with pytest.raises(ValidationError):
            state.set_agent_policies({"shadow": {"max_tokens": 0}})
        await c.post("/v1/messages", json=msg_body(max_tokens=4000), headers=WARM)
    assert [s.json["max_tokens"] for s in up.calls()] == [300, 120, 50, 120]


async def test_a_request_without_a_turn_header_gets_the_resolved_turn(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"
    open_turns = {("u1", "s1", "shadow"): "t000002"}
    asked: list[tuple[str, str, str]] = []

    def turn_for(user: str, session: str, agent: str) -> str | None:
        asked.append((user, session, agent))
        return open_turns.get((user, session, agent))

    up = FakeUpstream()
    app = create_app(
        make_config(usage_log=str(log)), transport=up.transport, health_checks=False, turn_for=turn_for
    )
    async with client(app) as c:
        await c.post("/v1/messages", json=msg_body(stream=True), headers=WARM)  # a warm process, turn open
        await c.post(
            "/v1/messages", json=msg_body(), headers={**WARM, "x-coach-turn": "t000009"}
        )  # header wins
        await c.post(
            "/v1/messages", json=msg_body(), headers={**WARM, "x-coach-agent": "persona"}
        )  # not armed
        await c.post("/v1/messages/count_tokens", json=msg_body(), headers=WARM)
    turns = [json.loads(x)["turn"] for x in log.read_text().splitlines()]
    assert turns == ["t000002", "t000009", ""]
    assert [s.headers.get("x-coach-turn") for s in up.calls()] == ["t000002", "t000009", None]
    assert ("u1", "s1", "persona") in asked and len(asked) == 3  # never asked when the header is there
