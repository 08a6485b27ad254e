"""``coach replay`` / ``coach board show``: transcript sessions become closed blackboard sessions, one
``coach run --json`` document per turn, the progress output never carries user text, options that do
not fit a file's format are refused with what to use instead. The supervisor is a test double at its
boundary (``run_turn``); the blackboard is the real SQLite one. The real pipeline on the real model is
tests/embedded/test_full_turn.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from rich.console import Console
from typer.testing import CliRunner

from blackboard import Blackboard, profile_key, session_key
from launcher.cli import app
from launcher.cli.replay import load_transcript, run_replay
from launcher.pipeline._replay import default_user, plan_sessions
from launcher.pipeline._turn_status import AgentStatus, TurnResult
from launcher.transcripts import TranscriptError, read_annomi
from tests.launcher.payloads import payload_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "annomi_24.csv"
DATA = ROOT.parent / "shared" / "data"
needs_shared_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data folder {DATA} is absent")
AGENTS = ("coach", "shadow", "persona", "plasticity", "stability")


class FakeSupervisor:
    """``run_turn`` begins a real blackboard turn and writes the agents' entries as the MCP tools would."""

    def __init__(self, board: Blackboard) -> None:
        self.board = board
        self.calls: list[tuple[str, str, str]] = []

    async def run_turn(
        self, user: str, session: str, text: str, *, on_coach_reply: Any = None, on_status: Any = None
    ) -> TurnResult:
        self.calls.append((user, session, text))
        turn = self.board.begin_turn(user, session)
        statuses = {}
        for agent in AGENTS:
            st = AgentStatus(agent, status="running", started_s=0.0)
            if on_status:
                on_status(st)
            self.board.write_output(user, session, turn, agent, payload_for(agent))
            st.status, st.finished_s = "ok", 0.5
            if on_status:
                on_status(st)
            statuses[agent] = st
        if on_coach_reply:
            on_coach_reply("reply")
        return TurnResult(
            turn_id=turn,
            coach_reply="reply",
            synthesis="synthesis",
            synthesis_source="model",
            degraded=False,
            crisis_tier=0,
            agents=statuses,
            coach_reply_s=0.1,
            synthesis_s=1.0,
        )


@pytest.fixture
def board(tmp_path: Path) -> Any:
    b = Blackboard(tmp_path / "data")
    yield b
    b.close()


def test_sessions_are_closed_blackboard_sessions_and_each_turn_is_one_json_line(board: Blackboard) -> None:
    transcript = read_annomi(EXAMPLE)
    sup = FakeSupervisor(board)
    sink, notes = io.StringIO(), io.StringIO()
    console = Console(file=notes, width=200)
    turns = anyio.run(
        lambda: run_replay(
            SimpleNamespace(supervisor=sup, runner=None),
            transcript,
            user="annomi-24",
            prefix="r1",
            console=console,
            sink=sink,
            turns_per_session=2,
        )
    )

    expected = [u.text for s in transcript.sessions for u in s[:2]]
    assert [c[2] for c in sup.calls] == expected
    assert [c[1] for c in sup.calls] == ["r1-s1", "r1-s1", "r1-s2", "r1-s2"]
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert lines == [t.result.to_json() for t in turns]  # exactly the coach run --json document
    assert [(t.session, t.turn, t.result.turn_id) for t in turns] == [
        (1, 1, "t000001"),
        (1, 2, "t000002"),
        (2, 1, "t000001"),
        (2, 2, "t000002"),
    ]
    for s in ("r1-s1", "r1-s2"):
        record = board.store.read(session_key("annomi-24", s))
        assert record is not None and record.value.get("closed_at")
    profile = board.store.read(profile_key("annomi-24"))
    assert profile is not None and profile.version == 2  # one merge per closed session
    out = notes.getvalue()
    assert "session r1-s2 closed" in out and "merged persona, shadow" in out
    assert all(text[:30] not in out for text in expected)  # no user text in the notes


def test_plan_sessions_cuts_each_session_and_refuses_zero() -> None:
    t = read_annomi(EXAMPLE)
    assert [len(s) for s in plan_sessions(t)] == [len(s) for s in t.sessions]
    assert [len(s) for s in plan_sessions(t, 1)] == [1] * len(t.sessions)
    assert default_user(t) == "annomi-24"
    with pytest.raises(ValueError, match=">= 1"):
        plan_sessions(t, 0)


@needs_shared_data
def test_each_format_is_addressed_by_its_own_option() -> None:
    esconv = DATA / "esconv" / "ESConv-test.jsonl"
    t = load_transcript(esconv, dialog=3)
    assert t.source == "esconv" and len(t.sessions) == 1
    uic = sorted((DATA / "uic_health_coaching").glob("patient*.csv"))[0]
    u = load_transcript(uic)
    assert u.source == "uic" and len(u.sessions) >= 1
    with pytest.raises(TranscriptError, match="--dialog") as e1:
        load_transcript(esconv, transcript_id="3")
    assert e1.value.code == "bad_format"
    with pytest.raises(TranscriptError, match="--dialog N") as e2:
        load_transcript(esconv)
    assert e2.value.code == "unknown_id"
    with pytest.raises(TranscriptError, match="--transcript-id"):
        load_transcript(EXAMPLE, dialog=1)
    with pytest.raises(TranscriptError, match="at most one"):
        load_transcript(EXAMPLE, dialog=1, patient="11")


@needs_shared_data
def test_replay_cli_refuses_bad_input_with_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    esconv = DATA / "esconv" / "ESConv-test.jsonl"
    r = runner.invoke(app, ["replay", str(esconv)])
    assert r.exit_code == 2 and "--dialog" in r.output
    r = runner.invoke(app, ["replay", str(tmp_path / "missing.csv")])
    assert r.exit_code == 2
    r = runner.invoke(app, ["replay", str(EXAMPLE), "--user", "bad user!"])
    assert r.exit_code == 2 and "--user" in r.output


def test_board_show_lists_entries_and_profile(board: Blackboard, tmp_path: Path) -> None:
    sup = FakeSupervisor(board)
    anyio.run(
        lambda: run_replay(
            SimpleNamespace(supervisor=sup, runner=None),
            read_annomi(EXAMPLE),
            user="u1",
            prefix="p",
            console=Console(file=io.StringIO()),
            sink=None,
            turns_per_session=1,
        )
    )
    env = {"COACH_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()
    r = runner.invoke(app, ["board", "show", "--user", "u1", "--json"], env=env)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [s["session"] for s in doc["sessions"]] == ["p-s1", "p-s2"] and all(
        s["closed"] for s in doc["sessions"]
    )
    kinds = [e["kind"] for e in doc["sessions"][0]["turns"][0]["entries"]]
    assert kinds[:5] == list(AGENTS) and "meta" in kinds
    first = doc["sessions"][0]["turns"][0]["entries"][0]
    assert first["author"] == "coach" and first["version"] == 1 and first["seq"] > 0
    assert doc["profile"]["version"] == 2
    r = runner.invoke(app, ["board", "show", "--user", "u1", "--session", "p-s2"], env=env)
    assert r.exit_code == 0 and "p-s2" in r.output and "p-s1" not in r.output
    assert "no entry from: pineal" in r.output and "profile v2" in r.output
    r = runner.invoke(app, ["board", "show", "--user", "nobody"], env=env)
    assert r.exit_code == 2 and "nothing stored" in r.output
    r = runner.invoke(app, ["board", "show", "--user", "u1"], env={"COACH_DATA_DIR": str(tmp_path / "none")})
    assert r.exit_code == 2 and "no blackboard" in r.output
