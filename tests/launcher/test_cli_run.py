"""``coach run`` / ``coach session close`` output, with the runtime replaced at its boundary by the real
supervisor over a fake runner (the e2e suite runs the real stack)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from blackboard import Blackboard
from launcher.cli import app
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import FakeRunner, fake_screen, specs


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\n')

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        board = Blackboard(config.data.dir)
        s = specs(persona={"deadline_s": 0.5})
        runner = FakeRunner(board, behaviours={"persona": lambda inv, n: "hang"})
        try:
            yield type("RT", (), {"supervisor": Supervisor(board, runner, lambda: s, screen=fake_screen)})()
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    return cfg


def test_run_prints_coach_then_synthesis_then_timeline(cli_env: Path) -> None:
    res = CliRunner().invoke(
        app, ["run", "I want to run more", "-u", "u1", "-s", "s1", "--config", str(cli_env)]
    )
    assert res.exit_code == 0, res.output
    out = res.output
    coach, synth, table = (
        out.index("Coach:"),
        out.index("Synthesis (degraded: missing persona)"),
        out.index("turn t000001"),
    )
    assert coach < synth < table
    assert "timeout" in out and "pineal" in out


def test_run_json_is_one_document(cli_env: Path) -> None:
    res = CliRunner().invoke(
        app, ["run", "hello", "--user", "u1", "--session", "s1", "--json", "--config", str(cli_env)]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {"turn_id", "coach_reply", "synthesis", "degraded", "crisis_tier"} <= set(doc)
    assert doc["degraded"] is True and doc["agents"]["persona"]["status"] == "timeout"
    for a in doc["agents"].values():
        assert {
            "status",
            "started_s",
            "first_token_s",
            "finished_s",
            "input_tokens",
            "output_tokens",
            "error",
        } <= set(a)


def test_bad_ids_and_config_exit_2(cli_env: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "hi", "-u", "../x", "-s", "s1", "--config", str(cli_env)])
    assert res.exit_code == 2 and "--user/--session" in res.output
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents]\nwarm_process_limit = -1\n")
    res = CliRunner().invoke(app, ["run", "hi", "-u", "u1", "-s", "s1", "--config", str(bad)])
    assert res.exit_code == 2 and "warm_process_limit" in res.output


def test_session_close_twice(cli_env: Path) -> None:
    r = CliRunner()
    assert (
        r.invoke(app, ["run", "hello", "-u", "u1", "-s", "s1", "--json", "--config", str(cli_env)]).exit_code
        == 0
    )
    first = r.invoke(app, ["session", "close", "-u", "u1", "-s", "s1", "--json", "--config", str(cli_env)])
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert doc["merged"] == ["shadow"] and doc["profile_version"] == 1 and not doc["already_closed"]
    second = r.invoke(app, ["session", "close", "-u", "u1", "-s", "s1", "--config", str(cli_env)])
    assert second.exit_code == 0 and "already closed" in second.output
