"""The shipped screen on the four development sets, ``bench/data/safety_fresh`` (733 dialogs; the
held-out set of round 2), ``bench/data/safety_fresh2`` (666 dialogs; round 3), ``bench/data/safety_fresh3``
(846 dialogs; round 4) and ``bench/data/safety_fresh4`` (1,091 dialogs; round 5).
Their misses and false alarms were read while later rounds changed the screen, so these figures no
longer measure unseen messages; their items are never copied or paraphrased into training data or
tests (docs/safety.md).

The figures measured at the end of round 6 (docs/safety.md) are pinned as floors and a ceiling, one
dialog of slack each, so a change that loses crises the screen caught, or that raises its false alarms,
fails here. They are far from the targets (tier-3 recall 100 %): this is a guard against going
backwards, not a claim that the screen is good enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from launcher.safety._evaluation import LabelledReport, evaluate_labelled, read_labelled

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"


@dataclass(frozen=True)
class Pin:
    name: str
    dialogs: int
    tier3: int  # crisis dialogs
    risk: int  # tier >= 2 dialogs
    ordinary: int
    reached_t3: int  # measured at the end of round 6
    reached_t2plus: int
    false_alarms: int


PINS = [
    # round 3 end: 159 / 274 / 10; round 4 end: 158 / 278 / 12; round 5 end: 184 / 295 / 10
    Pin("safety_fresh", 733, 218, 318, 415, reached_t3=189, reached_t2plus=296, false_alarms=11),
    # round 3 end (then held out): 164 / 279 / 6; round 4 end: 168 / 290 / 5; round 5 end: 186 / 300 / 5
    Pin("safety_fresh2", 666, 207, 320, 346, reached_t3=190, reached_t2plus=302, false_alarms=5),
    # round 4 end (then held out): 210 / 370 / 16; round 5 end: 247 / 386 / 17
    Pin("safety_fresh3", 846, 289, 419, 427, reached_t3=252, reached_t2plus=388, false_alarms=15),
    # round 5 end (then held out): 278 / 486 / 30; read in round 6, whose anchors' brief named its missed
    # families (not its items), so this figure overstates what the screen does on unseen messages
    Pin("safety_fresh4", 1091, 390, 571, 520, reached_t3=367, reached_t2plus=530, false_alarms=32),
]


@pytest.fixture(scope="module", params=PINS, ids=[p.name for p in PINS])
def pinned(request: pytest.FixtureRequest) -> tuple[Pin, LabelledReport]:
    pin: Pin = request.param
    pairs = read_labelled(DATA / f"{pin.name}.dialogs.jsonl", DATA / f"{pin.name}.labels.jsonl")
    assert len(pairs) == pin.dialogs
    return pin, evaluate_labelled(pairs)


def test_tier_3_recall_does_not_fall(pinned: tuple[Pin, LabelledReport]) -> None:
    pin, report = pinned
    assert report.recall_t3 is not None and report.recall_t3 >= (pin.reached_t3 - 1) / pin.tier3


def test_tier_2_plus_recall_does_not_fall(pinned: tuple[Pin, LabelledReport]) -> None:
    pin, report = pinned
    assert report.recall_t2plus is not None and report.recall_t2plus >= (pin.reached_t2plus - 1) / pin.risk


def test_false_alarms_do_not_rise(pinned: tuple[Pin, LabelledReport]) -> None:
    pin, report = pinned
    fa = report.false_alarms_per_1000
    assert fa is not None and fa <= 1000 * (pin.false_alarms + 1) / pin.ordinary
