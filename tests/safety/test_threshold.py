"""The semantic layer's thresholds sit in the middle of a gap of the calibration scores
(``launcher.safety._train._threshold``), so a score a rounding error away from a calibration score
(another CPU's BLAS kernel: AVX2 against AVX-512 differ by about 1e-7) cannot flip its decision."""

from __future__ import annotations

import numpy as np
import pytest

from launcher.safety._train import TrainError, _threshold


def _calibration() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.beta(2, 8, size=n) for n in (1181, 1862, 646)]


def test_the_threshold_passes_at_most_the_allowed_share_of_each_corpus() -> None:
    scores = _calibration()
    th, low, high = _threshold(scores, 0.01, 0.5)
    assert low < th < high
    for s in scores:
        assert (s >= th).sum() <= np.floor(0.01 * len(s))


def test_the_threshold_is_the_middle_of_the_gap_between_the_last_blocked_and_next_allowed_score() -> None:
    scores = _calibration()
    th, low, high = _threshold(scores, 0.01, 0.5)
    pooled = np.concatenate(scores)
    assert low in pooled and high in pooled
    assert not ((pooled > low) & (pooled < high)).any()  # nothing inside the gap
    assert th == (low + high) / 2


def test_a_score_a_rounding_error_from_a_calibration_score_keeps_its_decision() -> None:
    scores = _calibration()
    for rate, floor in ((0.01, 0.5), (0.0008, 0.0)):
        th, _, _ = _threshold(scores, rate, floor)
        pooled = np.concatenate(scores)
        for eps in (1e-9, 1e-7, 1e-6):
            for nudged in (pooled * (1 + eps), pooled * (1 - eps), pooled + eps, pooled - eps):
                assert ((nudged >= th) == (pooled >= th)).all()


def test_the_highest_score_blocked_gets_a_margin_even_with_nothing_above_it() -> None:
    scores = [np.array([0.1, 0.2, 0.9]), np.array([0.3, 0.4])]
    th, low, high = _threshold(scores, 0.0, 0.0)  # nothing may pass
    assert (low, high) == (0.9, 1.0) and th == 0.95


def test_a_floor_above_every_bar_is_the_threshold() -> None:
    scores = [np.array([0.1, 0.2, 0.3])]
    assert _threshold(scores, 0.5, 0.6) == (0.6, 0.3, 1.0)


def test_with_nothing_above_the_last_blocked_score_the_gap_ends_at_the_heads_ceiling() -> None:
    # A calibrated risk is at most sigmoid(platt_a + platt_c) (about 0.995), not 1.0: a threshold in
    # the middle of (low, 1.0) could sit above every score the head can give.
    scores = [np.array([0.1, 0.2, 0.990])]
    th, low, high = _threshold(scores, 0.0, 0.0, ceiling=0.994)
    assert (low, high) == (0.990, 0.994) and th == pytest.approx(0.992)
    assert th < 0.994  # the best score the head can give still passes


def test_a_last_blocked_score_at_the_ceiling_is_refused() -> None:
    with pytest.raises(TrainError, match="nothing could pass"):
        _threshold([np.array([0.1, 0.994])], 0.0, 0.0, ceiling=0.994)
