"""The shipped screen on the nine development sets, ``bench/data/safety_fresh`` (733 dialogs; the
held-out set of round 2), ``safety_fresh2`` (666; round 3), ``safety_fresh3`` (846; round 4),
``safety_fresh4`` (1,091; round 5), ``safety_fresh5`` (1,303; round 6), ``safety_fresh6`` (1,516;
round 7), ``safety_fresh7`` (1,866; round 8), ``safety_fresh8`` (2,130; round 9) and ``safety_fresh9`` (2,425; round 10). Their misses and false alarms
were read while later rounds changed the screen, and since round 7 the final messages of the first five
are training data of the semantic layer (``launcher/safety/data/labelled.jsonl``; those of ``safety_fresh6``
… ``safety_fresh9`` are not), so these are training-set figures (for the first five):
they say what the screen keeps, not what it does on unseen messages (``test_heldout.py`` says that).

The figures measured at the end of round 11 (docs/safety.md) are pinned as floors and a ceiling, one
dialog of slack each, so a change that loses crises the screen caught, or that raises its false alarms,
fails here. This is a guard against going backwards, not a claim that the screen is good enough.
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
    reached_t3: int  # measured at the end of the latest round
    reached_t2plus: int
    false_alarms: int


PINS = [
    # measured at the end of round 11 (its pause bar: fresh4 558 -> 562 tier >= 2 and 6 -> 8 false alarms,
    # fresh5 739 -> 743, fresh6 814 -> 830 and 13 -> 20, fresh7 1019 -> 1054 and 20 -> 28, fresh8 1246 -> 1279
    # and 44 -> 48; round 10 end: 214/311/2, 205/318/3, 282/415/5, 383/558/6, 518/739/5, 509/814/13,
    # 710/1019/20, 856/1246/44; round 9 end: the same but fresh6 507/813/13, fresh7 709/1019/20; round 8
    # end: 212/311/2, 199/318/3, 275/415/5, 375/558/6, 491/739/5, 482/813/13; the first five: round 7 end
    # 211/311/2, 199/318/3, 274/414/5, 373/558/6, 489/739/5, when their final messages became training
    # data; round 6 end, as development sets: 189 / 296 / 11, 190 / 302 / 5, 252 / 388 / 15, 367 / 530 /
    # 32; fresh5 was then held out: 389 / 639 / 36)
    Pin("safety_fresh", 733, 218, 318, 415, reached_t3=214, reached_t2plus=311, false_alarms=2),
    Pin("safety_fresh2", 666, 207, 320, 346, reached_t3=205, reached_t2plus=318, false_alarms=3),
    Pin("safety_fresh3", 846, 289, 419, 427, reached_t3=282, reached_t2plus=415, false_alarms=5),
    Pin("safety_fresh4", 1091, 390, 571, 520, reached_t3=383, reached_t2plus=562, false_alarms=8),
    Pin("safety_fresh5", 1303, 536, 752, 551, reached_t3=518, reached_t2plus=743, false_alarms=5),
    # the held-out set of round 7, read as the development set of round 8 (not training data; round 7's
    # screen on it: 435 / 783 / 13)
    Pin("safety_fresh6", 1516, 560, 882, 634, reached_t3=509, reached_t2plus=830, false_alarms=20),
    # the held-out set of round 8, read as the development set of round 9 (not training data; round 8's
    # screen on it: 635 / 1011 / 20)
    Pin("safety_fresh7", 1866, 814, 1172, 694, reached_t3=710, reached_t2plus=1054, false_alarms=28),
    # the held-out set of round 9, read as the development set of round 10 (not training data; round 9's
    # screen on it: 826 / 1215 / 44)
    Pin("safety_fresh8", 2130, 970, 1377, 753, reached_t3=856, reached_t2plus=1279, false_alarms=48),
    # the held-out set of round 10, a development set since round 11 (not training data; round 10's screen
    # on it: 1049 / 1485 / 76, round 9's 1040 / 1480 / 75)
    Pin("safety_fresh9", 2425, 1192, 1629, 796, reached_t3=1049, reached_t2plus=1525, false_alarms=85),
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
