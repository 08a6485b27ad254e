"""`coach eval safety`: the core over an iterable of turns, and the command over real transcript files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launcher.cli import app
from launcher.cli.eval import EvalTurn, evaluate

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
ESCONV = DATA / "esconv" / "ESConv-test.jsonl"
needs_data = pytest.mark.skipif(not ESCONV.is_file(), reason=f"shared data file {ESCONV} is absent")

SECRET = "my neighbour Zebulon"


def test_evaluate_counts_tiers_and_keeps_state_per_session() -> None:
    turns = [
        EvalTurn("a", "a turn 1", "I want to kill myself"),
        EvalTurn("b", "b turn 1", "hello"),  # another session: no post-crisis window
        EvalTurn("a", "a turn 2", f"ok thanks, I will talk to {SECRET}"),  # same session: post-crisis floor
        EvalTurn("b", "b turn 2", "I feel hopeless"),
    ]
    report = evaluate(turns)
    assert report.turns == 4
    assert report.tiers == {0: 1, 1: 1, 2: 1, 3: 1}
    assert [(h.location, h.tier) for h in report.hits] == [("a turn 1", 3), ("a turn 2", 2)]
    assert report.hits[1].reasons == ["post_crisis.floor"]
    assert all(h.text is None for h in report.hits)
    assert SECRET not in json.dumps(report.to_json())
    with_text = evaluate(turns, keep_text=True)
    assert with_text.hits[1].text is not None and SECRET in with_text.hits[1].text


@needs_data
def test_cli_on_esconv_prints_counts_and_reasons_without_text() -> None:
    # two transcripts, the crisis among them: the whole file's screen is tests/safety/test_esconv.py's
    result = CliRunner().invoke(app, ["eval", "safety", str(ESCONV), "--id", "126", "--id", "127"])
    assert result.exit_code == 0, result.output
    assert "user turns screened" in result.output
    assert "tier 3  esconv:127 session 1 turn 7  t3.intent_self_harm" in result.output
    assert "bridge" not in result.output  # never the text unless asked


@needs_data
def test_cli_show_text_and_json() -> None:
    shown = CliRunner().invoke(app, ["eval", "safety", str(ESCONV), "--id", "127", "--show-text"])
    assert shown.exit_code == 0 and "bridge" in shown.output
    as_json = CliRunner().invoke(app, ["eval", "safety", str(ESCONV), "--id", "127", "--json"])
    doc = json.loads(as_json.output)
    # turn 7 (the real crisis) and, inside its post-crisis window, turn 16 (since round 6; turn 14 from
    # round 5 to round 6; tests/safety/test_esconv.py has the verdicts)
    assert doc["tiers"]["3"] == 2 and doc["hits"][0]["reasons"] == ["t3.intent_self_harm"]
    assert "text" not in doc["hits"][0]


def test_cli_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "safety", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2
    assert "does not exist" in result.output
