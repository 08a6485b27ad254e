"""An agent's risk assessment raises the turn's safety tier (never lowers it): the supervisor with the real
blackboard and the fake runner at the runner boundary; ``coach run --json`` and ``coach board show``."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from blackboard import Blackboard, turn_entry_key
from launcher.cli import app
from launcher.pipeline._screen import SafetyScreen
from launcher.pipeline.supervisor import Supervisor
from launcher.safety import crisis_response
from tests.launcher.fakes import FakeRunner, fake_screen, specs
from tests.launcher.payloads import payload_for

MESSAGE = "I sorted out the last few things today, it's all arranged for Friday."
QUOTE = "it's all arranged for Friday"
REPLY = "It sounds like Friday matters to you. What are you hoping for?"
SPECIALIST_NAMES = ("shadow", "persona", "plasticity", "stability")


def coach_says(tier: int, family: str, quote: str) -> dict[str, Any]:
    return {"risk": {"tier": tier, "family": family, "quote": quote}, "reply": REPLY}


def stability_says(tier: int, family: str, quote: str) -> dict[str, Any]:
    return {**payload_for("stability"), "risk": {"tier": tier, "family": family, "quote": quote}}


def make(board: Blackboard, runner: FakeRunner, screen: Any = fake_screen) -> Supervisor:
    s = specs()
    return Supervisor(board, runner, lambda: s, screen=screen)


def entry(board: Blackboard, turn: str, kind: str, user: str = "u1", session: str = "s1") -> dict[str, Any]:
    e = board.store.read(turn_entry_key(user, session, turn, kind))
    assert e is not None, kind
    return dict(e.value)


pytestmark = pytest.mark.anyio


async def test_coach_raise_to_3_delivers_the_crisis_response_instead_of_the_reply_and_stops_coaching(
    board: Blackboard,
) -> None:
    hang = {n: (lambda inv, k: "hang") for n in SPECIALIST_NAMES}  # still working when the Coach writes
    runner = FakeRunner(
        board, behaviours={"coach": lambda inv, n: coach_says(3, "preparatory", QUOTE), **hang}
    )
    shown: list[str] = []
    t0 = time.monotonic()
    res = await make(board, runner).run_turn("u1", "s1", MESSAGE, on_coach_reply=shown.append)
    assert time.monotonic() - t0 < 3.0, "the specialists were stopped, not waited for (deadline 5 s)"
    assert shown == [crisis_response("en-US")] and res.coach_reply == shown[0]
    assert REPLY not in res.coach_reply and REPLY not in res.synthesis
    assert (
        res.synthesis == "" and res.synthesis_source == "crisis" and res.crisis_tier == 3 and not res.degraded
    )
    assert not any(c.agent == "pineal" for c in runner.calls), "no coaching synthesis"
    assert res.agents["coach"].status == "ok"
    assert all(res.agents[n].status == "skipped" for n in (*SPECIALIST_NAMES, "pineal"))
    assert (
        res.safety_raises == ["model.coach.raised_t3", "model.family.preparatory"]
        and res.safety_refused == []
    )
    record = entry(board, res.turn_id, "record")
    assert record["crisis_tier"] == 3 and record["synthesis_source"] == "crisis"
    assert record["safety_raises"] == ["model.coach.raised_t3", "model.family.preparatory"]
    message = entry(board, res.turn_id, "message")
    assert message["crisis_tier"] == 3 and message["safety_state"]["crisis_turns_left"] == 3
    assert "model.coach.raised_t3" in message["safety_reasons"]
    assert entry(board, res.turn_id, "meta")["crisis_tier"] == 3
    delivery = entry(board, res.turn_id, "delivery")
    assert delivery["coach_reply"] == shown[0] and delivery["synthesis"] == ""
    assert QUOTE not in json.dumps(record)


async def test_the_next_turn_after_a_coach_raise_to_3_is_in_the_post_crisis_window(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"coach": lambda inv, n: coach_says(3, "preparatory", QUOTE)})
    sup = make(board, runner, SafetyScreen())  # the real deterministic screen and its stored state
    first = await sup.run_turn("u1", "s1", MESSAGE)
    assert first.safety_raises == ["model.coach.raised_t3", "model.family.preparatory"], (
        "the screen alone missed it"
    )
    assert first.crisis_tier == 3
    calls = len(runner.calls)
    nxt = await sup.run_turn("u1", "s1", "ok. what about my running plan?")
    assert nxt.crisis_tier >= 2, "screened at tier-2 sensitivity after the raise"
    assert not any(c.agent == "coach" for c in runner.calls[calls:])  # coaching paused: no Coach reply
    assert nxt.agents["coach"].status == "skipped"


async def test_refused_coach_raise_gives_the_normal_reply(board: Blackboard) -> None:
    runner = FakeRunner(
        board, behaviours={"coach": lambda inv, n: coach_says(3, "plan", "I will do it on Friday")}
    )
    shown: list[str] = []
    res = await make(board, runner).run_turn("u1", "s1", MESSAGE, on_coach_reply=shown.append)
    assert shown == [REPLY] and res.coach_reply == REPLY
    assert res.crisis_tier == 0 and res.synthesis_source == "model" and not res.degraded
    assert res.safety_raises == [] and res.safety_refused == ["model.coach.refused_quote_not_in_message"]
    assert entry(board, res.turn_id, "record")["safety_refused"] == [
        "model.coach.refused_quote_not_in_message"
    ]
    message = entry(board, res.turn_id, "message")
    assert message["crisis_tier"] == 0 and "model.raised" not in message["safety_reasons"]


async def test_coach_raise_to_2_delivers_the_support_response_and_pauses_the_synthesis(
    board: Blackboard,
) -> None:
    runner = FakeRunner(board, behaviours={"coach": lambda inv, n: coach_says(2, "abuse", QUOTE)})
    shown: list[str] = []
    res = await make(board, runner).run_turn("u1", "s1", MESSAGE, on_coach_reply=shown.append)
    assert len(shown) == 1 and shown[0].startswith("I want to pause our coaching") and REPLY not in shown[0]
    assert "are you safe right now?" in shown[0]  # abuse: the direct question is about safety
    assert res.crisis_tier == 2 and res.safety_raises == ["model.coach.raised_t2", "model.family.abuse"]
    (pineal,) = [c for c in runner.calls if c.agent == "pineal"]
    assert '"mode":"pause"' in pineal.followup  # the brief was built at the raised tier
    assert entry(board, res.turn_id, "meta")["crisis_tier"] == 2


async def test_stability_raise_to_2_replaces_the_synthesis_with_the_support_response(
    board: Blackboard,
) -> None:
    runner = FakeRunner(
        board, behaviours={"stability": lambda inv, n: stability_says(2, "passive_ideation", QUOTE)}
    )
    shown: list[str] = []
    res = await make(board, runner).run_turn("u1", "s1", MESSAGE, on_coach_reply=shown.append)
    assert shown == [payload_for("coach")["reply"]]  # the reply came before the join
    assert (
        res.synthesis.startswith("I want to pause our coaching")
        and "thoughts of ending your life" in res.synthesis
    )
    assert runner.pineal_text not in res.synthesis and "Partial synthesis" not in res.synthesis
    assert (
        res.synthesis_source == "support" and res.crisis_tier == 2 and not res.degraded and res.missing == []
    )
    assert not any(c.agent == "pineal" for c in runner.calls) and res.agents["pineal"].status == "skipped"
    assert res.safety_raises == ["model.stability.raised_t2", "model.family.passive_ideation"]
    record = entry(board, res.turn_id, "record")
    assert record["synthesis_source"] == "support" and record["crisis_tier"] == 2
    assert entry(board, res.turn_id, "delivery")["synthesis"] == res.synthesis


async def test_stability_raise_to_3_replaces_the_synthesis_with_the_crisis_response(
    board: Blackboard,
) -> None:
    runner = FakeRunner(
        board, behaviours={"stability": lambda inv, n: stability_says(3, "preparatory", QUOTE)}
    )
    res = await make(board, runner).run_turn("u1", "s1", MESSAGE)
    assert (
        res.synthesis == crisis_response("en-US")
        and res.synthesis_source == "crisis"
        and res.crisis_tier == 3
    )
    assert entry(board, res.turn_id, "message")["safety_state"]["crisis_turns_left"] == 3


async def test_refused_stability_raise_changes_nothing_for_the_user(board: Blackboard) -> None:
    runner = FakeRunner(
        board, behaviours={"stability": lambda inv, n: stability_says(3, "passive_ideation", "ready")}
    )
    res = await make(board, runner).run_turn("u1", "s1", MESSAGE)
    assert (
        res.synthesis_source == "model"
        and res.synthesis.startswith(runner.pineal_text)
        and res.crisis_tier == 0
    )
    assert res.safety_refused == ["model.stability.refused_quote_too_short"]


async def test_no_risk_claimed_records_nothing(board: Blackboard) -> None:
    res = await make(board, FakeRunner(board)).run_turn("u1", "s1", MESSAGE)
    assert res.safety_raises == [] and res.safety_refused == [] and res.crisis_tier == 0
    doc = res.to_json()
    assert doc["safety_raises"] == [] and doc["safety_refused"] == []
    assert entry(board, res.turn_id, "message")["crisis_tier"] == 0
    assert board.store.read(turn_entry_key("u1", "s1", res.turn_id, "message")).version == 1  # type: ignore[union-attr]


async def test_a_model_never_lowers_the_screens_tier(board: Blackboard) -> None:
    def tier2(text: str, state: Any) -> Any:
        from launcher.pipeline.supervisor import ScreenOutcome

        return ScreenOutcome(2, "SUPPORT")

    runner = FakeRunner(board, behaviours={"stability": lambda inv, n: stability_says(1, "distress", QUOTE)})
    res = await make(board, runner, tier2).run_turn("u1", "s1", MESSAGE)
    assert res.crisis_tier == 2 and res.coach_reply == "SUPPORT"
    assert res.safety_refused == ["model.stability.refused_not_higher"]


def test_chat_labels_a_raised_first_reply_by_the_raised_tier() -> None:
    from launcher.cli.chat import _RecordingScreen
    from launcher.safety import judge_raise

    screen = _RecordingScreen(SafetyScreen())
    outcome = screen(MESSAGE, None)
    assert screen.last_tier <= 1
    raised = screen.raised(
        outcome, judge_raise(MESSAGE, {"tier": 3, "family": "plan", "quote": QUOTE}, 0, agent="coach")
    )
    assert screen.last_tier == 3 and raised.response == crisis_response("en-US")


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\n')

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        board = Blackboard(config.data.dir)
        s = specs()
        runner = FakeRunner(board, behaviours={"coach": lambda inv, n: coach_says(3, "plan", QUOTE)})
        try:
            yield type("RT", (), {"supervisor": Supervisor(board, runner, lambda: s, screen=fake_screen)})()
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    return cfg


def test_run_json_and_board_show_list_the_raise_rule_ids(cli_env: Path) -> None:
    env = {"COLUMNS": "200"}
    run = CliRunner().invoke(
        app, ["run", MESSAGE, "-u", "u1", "-s", "s1", "--json", "--config", str(cli_env)], env=env
    )
    assert run.exit_code == 0, run.output
    doc = json.loads(run.stdout)
    assert (
        doc["safety_raises"] == ["model.coach.raised_t3", "model.family.plan"] and doc["safety_refused"] == []
    )
    assert doc["crisis_tier"] == 3 and doc["coach_reply"] == crisis_response("en-US")
    show = CliRunner().invoke(app, ["board", "show", "-u", "u1", "--config", str(cli_env)], env=env)
    assert show.exit_code == 0, show.output
    out = " ".join(show.output.split())  # notes wrap at 100 columns
    assert "safety tier raised to 3" in out and "(model.coach.raised_t3, model.family.plan)" in out
    assert "has no entry from" not in out  # the raise explains why the specialists wrote nothing
    shown = json.loads(
        CliRunner()
        .invoke(app, ["board", "show", "-u", "u1", "--json", "--config", str(cli_env)], env=env)
        .stdout
    )
    (turn,) = shown["sessions"][0]["turns"]
    assert (
        turn["safety_raises"] == ["model.coach.raised_t3", "model.family.plan"] and turn["crisis_tier"] == 3
    )
    assert QUOTE not in out and QUOTE not in json.dumps(shown)
