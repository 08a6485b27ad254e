"""The Claude Code session mode (``coach_turn`` / ``coach_synthesis``) with ``[broker] url``: the turn is
published as a job and followed (real RabbitMQ and PostgreSQL, the stand-in worker of ``fake_worker``):
the first reply comes from the job row, the synthesis from its result, one job per turn; no agent runs
in the session server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from blackboard import Blackboard
from blackboard._pg_jobs import TurnJobs
from launcher.claude_code._broker_pipeline import BrokerPipeline
from launcher.claude_code.session import build_session_server, session_identity
from launcher.config import load_config
from launcher.scaleout.frontend import BrokerFrontend
from tests.scaleout.fake_worker import FakeWorker, reply_of, synthesis_of
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix

pytestmark = pytest.mark.timeout(120)


def _data(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


def test_coach_turn_publishes_a_job_and_returns_the_workers_reply_then_synthesis(tmp_path: Path) -> None:
    with fresh_schema("cs") as pg, fresh_prefix("sess") as (url, prefix):
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
            f'[broker]\nurl = "{url}"\nprefix = "{prefix}"\n'
        )
        config = load_config(cfg, env={})
        board = Blackboard(tmp_path / "data", database_url=pg.url, database_schema=pg.schema)
        try:
            pipeline = BrokerPipeline(board, BrokerFrontend(config, url))
            server, _ = build_session_server(
                board, session_identity({}, user="u1", session="s1"), pipeline, lifespan=pipeline.lifespan
            )

            progress: list[Any] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(message)

            async def session() -> tuple[dict[str, Any], dict[str, Any]]:
                async with Client(server) as client:
                    first = _data(
                        await client.call_tool(
                            "coach_turn",
                            {"message": "I keep skipping my runs."},
                            progress_callback=on_progress,
                        )
                    )
                    done = _data(await client.call_tool("coach_synthesis", {"turn": first["turn"]}))
                return first, done

            with FakeWorker(pg, url, prefix) as worker:
                first, done = anyio.run(session)
        finally:
            board.close()
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
        finally:
            jobs.close()
    assert [(r.state, r.attempts, r.turn_id) for r in rows] == [("done", 1, "t000001")]
    assert worker.turns == 1
    assert (
        first["ok"] is True
        and first["turn"] == "t000001"
        and first["coach_reply"] == reply_of(rows[0].job_id)
    )
    assert first["message"].startswith("Coach:\n" + reply_of(rows[0].job_id))
    assert done["turn"] == "t000001" and done["synthesis"] == synthesis_of(rows[0].job_id)
    assert done["synthesis_source"] == "model"
    assert progress == [], "the broker path streamed (a worker runs the Coach; its reply arrives whole)"


def test_session_mode_picks_the_broker_pipeline_when_broker_url_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import launcher.claude_code.session as sm

    built: dict[str, Any] = {}

    def fake_build(board: Any, identity: Any, pipeline: Any, *a: Any, **kw: Any) -> Any:
        built["pipeline"] = pipeline

        class _S:
            def run(self, transport: str) -> None:
                built["ran"] = transport

        return _S(), None

    monkeypatch.setattr(sm, "build_session_server", fake_build)
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n[broker]\nurl = "amqp://guest:guest@127.0.0.1:5672/"\n'
    )
    made: list[Any] = []

    def front(config: Any, url: str) -> Any:
        made.append(url)
        return object()

    monkeypatch.delenv("COACH_BROKER_URL", raising=False)
    sm.run_session(config=cfg, user="u1", session="s1", broker_frontend=front)
    assert isinstance(built["pipeline"], BrokerPipeline) and made == ["amqp://guest:guest@127.0.0.1:5672/"]
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n')
    sm.run_session(config=cfg, user="u1", session="s1", broker_frontend=front)
    assert type(built["pipeline"]).__name__ == "HostedPipeline", "no [broker] url: the agents run here"
