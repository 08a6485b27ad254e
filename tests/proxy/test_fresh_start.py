"""``create_app(fresh_start=...)``: the first request of an agent process reset for another session must
carry one message only; one carrying earlier turns is refused (409 ``conversation_not_reset``) before it
reaches the model server (``launcher.runner._reset.FreshStarts``)."""

from __future__ import annotations

import httpx
import pytest

from launcher.runner._reset import FreshStarts
from proxy import create_app

from .fakes import FakeUpstream, make_config, msg_body

pytestmark = pytest.mark.anyio

POOL = {"x-coach-agent": "coach", "x-coach-user": "_pool", "x-coach-session": "p" + "1" * 24}


def _client(up: FakeUpstream, fresh: FreshStarts) -> httpx.AsyncClient:
    app = create_app(make_config(), transport=up.transport, health_checks=False, fresh_start=fresh.take)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30)


def _with_history() -> dict[str, object]:
    body = msg_body("what was my secret?")
    body["messages"] = [
        {"role": "user", "content": "my secret is X"},
        {"role": "assistant", "content": "noted: X"},
        {"role": "user", "content": "what was my secret?"},
    ]
    return body


async def test_a_reset_processs_first_request_with_earlier_turns_is_refused_before_the_model_server() -> None:
    up, fresh = FakeUpstream(), FreshStarts()
    fresh.mark(POOL["x-coach-session"])
    async with _client(up, fresh) as c:
        r = await c.post("/v1/messages", json=_with_history(), headers=POOL)
    assert r.status_code == 409 and r.json()["error"]["type"] == "permission_error"
    assert "earlier turns" in r.json()["error"]["message"]
    assert up.calls() == [], "the refused request reached the model server"


async def test_a_reset_processs_first_request_with_one_message_passes_and_later_ones_are_not_checked() -> (
    None
):
    up, fresh = FakeUpstream(), FreshStarts()
    fresh.mark(POOL["x-coach-session"])
    async with _client(up, fresh) as c:
        first = await c.post("/v1/messages", json=msg_body("hello"), headers=POOL)
        later = await c.post("/v1/messages", json=_with_history(), headers=POOL)  # its own tool loop
        other = await c.post(
            "/v1/messages", json=_with_history(), headers={**POOL, "x-coach-user": "alice"}
        )  # never a pool identity: never checked
    assert (first.status_code, later.status_code, other.status_code) == (200, 200, 200)
    assert len(up.calls()) == 3
