"""``POST /coach/turns`` (``create_app(turn_secret=...)``): a proxy in its own process learns the turns of
warm agent processes from the supervisor, authenticated with a token derived from the data directory's
secret, with ``TurnDirectory`` semantics (open / arm / disarm / close); the usage log and the upstream
headers carry the turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from proxy import CONTROL_TOKEN_HEADER, TURNS_PATH, create_app, turn_control_token

from .fakes import FakeUpstream, make_config, msg_body

pytestmark = pytest.mark.anyio
SECRET = "s3cret"
AUTH = {CONTROL_TOKEN_HEADER: turn_control_token(SECRET)}
WARM = {"x-coach-agent": "shadow", "x-coach-user": "u1", "x-coach-session": "s1"}  # no x-coach-turn


def client(app: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30)  # type: ignore[arg-type]


def change(op: str, turn: str, *agents: str, user: str = "u1", session: str = "s1") -> dict[str, Any]:
    return {"op": op, "user": user, "session": session, "turn": turn, "agents": list(agents)}


async def test_posted_turns_name_the_turn_of_requests_without_a_turn_header(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"
    up = FakeUpstream()
    app = create_app(
        make_config(usage_log=str(log)), transport=up.transport, health_checks=False, turn_secret=SECRET
    )

    async def post(*changes: dict[str, Any]) -> None:
        r = await c.post(TURNS_PATH, json={"changes": list(changes)}, headers=AUTH)
        assert r.status_code == 200 and r.json() == {"applied": len(changes)}, r.text

    async with client(app) as c:
        await c.post("/v1/messages", json=msg_body(), headers=WARM)  # nothing open yet
        await post(change("open", "t000001", "shadow", "coach"))
        await c.post("/v1/messages", json=msg_body(stream=True), headers=WARM)
        await c.post(
            "/v1/messages", json=msg_body(), headers={**WARM, "x-coach-turn": "t000009"}
        )  # header wins
        await c.post(
            "/v1/messages", json=msg_body(), headers={**WARM, "x-coach-session": "s2"}
        )  # other session
        await post(change("disarm", "t000001", "shadow"), change("arm", "t000001", "pineal"))
        await c.post("/v1/messages", json=msg_body(), headers=WARM)  # disarmed: a late call gets no turn
        await c.post("/v1/messages", json=msg_body(), headers={**WARM, "x-coach-agent": "pineal"})
        await post(
            change("close", "t000001"),
            change("open", "t000002", "shadow"),
            change("disarm", "t000001", "shadow"),
        )  # a change of a closed turn is ignored
        await c.post("/v1/messages", json=msg_body(), headers=WARM)
        await post(change("close", "t000002"))
        await c.post("/v1/messages", json=msg_body(), headers=WARM)
    turns = [json.loads(x)["turn"] for x in log.read_text().splitlines()]
    assert turns == ["", "t000001", "t000009", "", "", "t000001", "t000002", ""]
    assert [s.headers.get("x-coach-turn") for s in up.calls()] == [
        None,
        "t000001",
        "t000009",
        None,
        None,
        "t000001",
        "t000002",
        None,
    ]


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({}, "missing x-coach-control-token"),
        ({CONTROL_TOKEN_HEADER: turn_control_token("another data dir")}, "invalid x-coach-control-token"),
        ({CONTROL_TOKEN_HEADER: SECRET}, "invalid x-coach-control-token"),  # the raw secret is not the token
    ],
)
async def test_turn_changes_without_the_right_token_are_refused_and_change_nothing(
    headers: dict[str, str], fragment: str
) -> None:
    up = FakeUpstream()
    app = create_app(make_config(), transport=up.transport, health_checks=False, turn_secret=SECRET)
    async with client(app) as c:
        r = await c.post(TURNS_PATH, json={"changes": [change("open", "t000001", "shadow")]}, headers=headers)
        assert r.status_code == 401
        assert r.json()["error"]["type"] == "authentication_error"
        assert fragment in r.json()["error"]["message"]
    assert app.state.proxy.turns.turn_for("u1", "s1", "shadow") is None


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        {"changes": [change("reopen", "t000001", "shadow")]},
        {"changes": [change("open", "../t1", "shadow")]},
        {"changes": [change("open", "t000002", "shadow"), {"op": "close", "user": "u1"}]},  # all or none
        {"turns": []},
    ],
)
async def test_malformed_turn_changes_are_a_400_and_change_nothing(body: Any) -> None:
    up = FakeUpstream()
    app = create_app(make_config(), transport=up.transport, health_checks=False, turn_secret=SECRET)
    async with client(app) as c:
        kw: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
        r = await c.post(TURNS_PATH, headers=AUTH, **kw)
        assert r.status_code == 400, r.text
        assert "invalid turn changes" in r.json()["error"]["message"]
    assert app.state.proxy.turns.turn_for("u1", "s1", "shadow") is None


async def test_without_a_turn_secret_there_is_no_turn_route() -> None:
    app = create_app(make_config(), transport=FakeUpstream().transport, health_checks=False)
    async with client(app) as c:
        r = await c.post(TURNS_PATH, json={"changes": []}, headers=AUTH)
    assert r.status_code == 404
    assert app.state.proxy.turns is None
