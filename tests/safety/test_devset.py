"""The shipped screen on the development set of round 3, ``bench/data/safety_fresh`` (733 dialogs; the
held-out set of round 2, whose misses and false alarms were read while round 3 changed the screen, so
these figures no longer measure unseen messages; its items are never copied into training data).

The figures measured at the end of round 3 (docs/safety.md) are pinned as floors and a ceiling, one
dialog of slack each, so a change that loses crises the screen caught, or that raises its false alarms,
fails here. They are far from the targets (tier-3 recall 100 %): this is a guard against going
backwards, not a claim that the screen is good enough.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.safety._evaluation import LabelledReport, evaluate_labelled, read_labelled

PREFIX = Path(__file__).resolve().parents[2] / "bench" / "data" / "safety_fresh"
RECALL_T3 = 0.729  # 159 of 218 (round 2: 150)
RECALL_T2PLUS = 0.862  # 274 of 318 (round 2: 251)
FALSE_ALARMS_PER_1000 = 24.1  # 10 of 415 (round 2: 15)


@pytest.fixture(scope="module")
def report() -> LabelledReport:
    pairs = read_labelled(Path(f"{PREFIX}.dialogs.jsonl"), Path(f"{PREFIX}.labels.jsonl"))
    assert len(pairs) == 733
    return evaluate_labelled(pairs)


def test_tier_3_recall_does_not_fall(report: LabelledReport) -> None:
    assert report.recall_t3 is not None and report.recall_t3 >= RECALL_T3 - 1 / 218


def test_tier_2_plus_recall_does_not_fall(report: LabelledReport) -> None:
    assert report.recall_t2plus is not None and report.recall_t2plus >= RECALL_T2PLUS - 1 / 318


def test_false_alarms_do_not_rise(report: LabelledReport) -> None:
    fa = report.false_alarms_per_1000
    assert fa is not None and fa <= FALSE_ALARMS_PER_1000 + 1000 / 415
