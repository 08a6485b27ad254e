"""The shipped screen on the held-out set of round 4, written by someone who saw neither the screen, its
training data, its tests nor the earlier sets, and scored once, in aggregate, after round 4 is merged
(docs/safety.md). Its items are never read while changing the screen, nor copied into training data or
tests. (The held-out set of round 3, ``bench/data/safety_fresh2``, is now a development set, pinned in
``test_devset.py``.)

After scoring, the lead sets ``PREFIX`` to the set's files and the counts below to the figures
measured then; they are pinned as floors and a ceiling, one dialog of slack each: a guard against
going backwards, not a claim that the screen is good enough (the target is tier-3 recall 100 %).
Until then the set is not in the repository and the module is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.safety._evaluation import LabelledReport, evaluate_labelled, read_labelled

PREFIX = Path(__file__).resolve().parents[2] / "bench" / "data" / "safety_fresh3"  # set by the lead
DIALOGS, TIER3, RISK, ORDINARY = 0, 1, 1, 1  # the set's counts, set by the lead
REACHED_T3, REACHED_T2PLUS, FALSE_ALARMS = 0, 0, 0  # measured once after the merge, set by the lead

pytestmark = pytest.mark.skipif(
    not Path(f"{PREFIX}.labels.jsonl").is_file() or DIALOGS == 0,
    reason="the round-4 held-out set is scored after the merge (docs/safety.md); not pinned yet",
)


@pytest.fixture(scope="module")
def report() -> LabelledReport:
    pairs = read_labelled(Path(f"{PREFIX}.dialogs.jsonl"), Path(f"{PREFIX}.labels.jsonl"))
    assert len(pairs) == DIALOGS
    return evaluate_labelled(pairs)


def test_tier_3_recall_does_not_fall(report: LabelledReport) -> None:
    assert report.recall_t3 is not None and report.recall_t3 >= (REACHED_T3 - 1) / TIER3


def test_tier_2_plus_recall_does_not_fall(report: LabelledReport) -> None:
    assert report.recall_t2plus is not None and report.recall_t2plus >= (REACHED_T2PLUS - 1) / RISK


def test_false_alarms_do_not_rise(report: LabelledReport) -> None:
    fa = report.false_alarms_per_1000
    assert fa is not None and fa <= 1000 * (FALSE_ALARMS + 1) / ORDINARY
