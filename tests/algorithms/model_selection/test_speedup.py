"""Tests for mlpar.algorithms.model_selection.speedup (sizes and shapes; timing is not judged)."""

import pytest

from mlpar.algorithms.model_selection import cross_validation as cv
from mlpar.algorithms.model_selection import speedup


def test_granularity_bounds_five_fold_below_1_7_on_two_workers():
    assert speedup.best_possible_speedup(5, 2) == pytest.approx(5 / 3)
    assert speedup.best_possible_speedup(10, 2) == 2.0
    assert speedup.best_possible_speedup(3, 8) == 3.0


def test_fits_cut_repeated_kfold_to_the_count():
    pairs = speedup.fits(8, 50, seed=0)
    assert len(pairs) == 8
    assert all(len(tr) + len(te) == 50 for tr, te in pairs)


def test_strong_and_scaled_curves_have_one_point_per_worker_count():
    X, y = cv.load_dataset("breast_cancer")
    model = cv.make_model("logistic")
    strong, scaled = speedup.strong_and_scaled(model, X, y, [1, 2], fixed_fits=2,
                                               fits_per_worker=1, repeat=1)
    assert strong.workers == scaled.workers == (1, 2)
    assert strong.speedups[0] == 1.0 and scaled.speedups[0] == 1.0
    assert scaled.serial_times is not None and strong.serial_times is None


def test_heavy_model_is_the_documented_pipeline():
    model = speedup.heavy_model()
    assert model.get_params()["clf__C"] == speedup.HEAVY_PARAMS["clf__C"]
    assert "poly" in model.named_steps
