"""``launcher.pipeline._proxy_turns.ProxyTurnMirror``: the supervisor's turn directory mirrored to a proxy in
another process, against the real proxy app (``create_app(turn_secret=...)``, in memory over httpx's
ASGI transport). Changes arrive in order; ``TurnDirectory.synced()`` returns once they did; a proxy
without the route, or one that refuses the token, costs a warning and never an error in the turn."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from launcher.pipeline._proxy_turns import ProxyTurnMirror, mirror_for
from launcher.pipeline._turn_scope import TurnDirectory
from proxy import create_app
from tests.proxy.fakes import FakeUpstream, make_config

pytestmark = pytest.mark.anyio
SECRET = "s3cret"


@asynccontextmanager
async def mirrored(
    app: object, secret: str = SECRET, transport: httpx.AsyncBaseTransport | None = None
) -> AsyncIterator[tuple[TurnDirectory, ProxyTurnMirror]]:
    directory = TurnDirectory()
    mirror = ProxyTurnMirror(
        "http://proxy", secret, timeout_s=5, transport=transport or httpx.ASGITransport(app=app)
    )  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        await tg.start(mirror.run)
        directory.add_listener(mirror)
        try:
            yield directory, mirror
        finally:
            mirror.stop()


async def test_changes_reach_the_proxy_in_order_before_synced_returns() -> None:
    app = create_app(
        make_config(), transport=FakeUpstream().transport, health_checks=False, turn_secret=SECRET
    )
    table = app.state.proxy.turns
    async with mirrored(app) as (directory, _):
        directory.open("u1", "s1", "t000001", ["coach", "shadow"])
        await directory.synced()
        assert table.turn_for("u1", "s1", "shadow") == "t000001"
        directory.disarm("u1", "s1", "t000001", "shadow")
        directory.arm("u1", "s1", "t000001", "pineal")
        await directory.synced()
        assert table.turn_for("u1", "s1", "shadow") is None
        assert table.turn_for("u1", "s1", "pineal") == "t000001"
        directory.close("u1", "s1", "t000001")
        directory.open("u1", "s1", "t000002", ["shadow"])
        directory.arm(
            "u1", "s1", "t000001", "coach"
        )  # the old turn: the directory ignores it, nothing is sent
        await directory.synced()
        assert table.turn_for("u1", "s1", "shadow") == "t000002"
        assert table.turn_for("u1", "s1", "coach") is None
        directory.close("u1", "s1", "t000002")
    # stop() posts what was still queued
    assert table.turn_for("u1", "s1", "shadow") is None


@pytest.mark.parametrize(
    ("turn_secret", "why"), [(None, "has no turn endpoint"), ("other", "refused the turn token")]
)
async def test_a_proxy_that_cannot_take_turns_costs_one_warning(
    turn_secret: str | None, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(
        make_config(), transport=FakeUpstream().transport, health_checks=False, turn_secret=turn_secret
    )
    with caplog.at_level(logging.WARNING, logger="launcher.pipeline._proxy_turns"):
        async with mirrored(app) as (directory, mirror):
            for n in (1, 2):
                directory.open("u1", "s1", f"t00000{n}", ["shadow"])
                await directory.synced()
                directory.close("u1", "s1", f"t00000{n}")
            assert mirror.disabled is not None and why in mirror.disabled
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and why in warnings[0] and "metered without a turn" in warnings[0]


async def test_an_unreachable_proxy_never_holds_up_or_fails_the_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with caplog.at_level(logging.WARNING, logger="launcher.pipeline._proxy_turns"):
        async with mirrored(None, transport=httpx.MockTransport(refuse)) as (directory, mirror):
            with anyio.fail_after(4):  # well under the mirror's 5 s timeout: a failed post counts as done
                directory.open("u1", "s1", "t000001", ["shadow"])
                await directory.synced()
            assert mirror.disabled is None  # a passing outage: later turns are posted again
    assert any("cannot post turns" in r.getMessage() for r in caplog.records)


def test_mirror_for_signs_with_the_data_dir_secret_or_warns_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("COACH_MCP_SECRET", raising=False)
    with caplog.at_level(logging.WARNING, logger="launcher.pipeline._proxy_turns"):
        assert mirror_for("http://proxy", tmp_path) is None
    assert "no secret to sign turn updates" in caplog.text
    (tmp_path / "mcp_secret").write_text("abc\n")
    mirror = mirror_for("http://proxy:8082/", tmp_path)
    assert mirror is not None and mirror.url == "http://proxy:8082/coach/turns"
