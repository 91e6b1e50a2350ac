"""Tests for mlpar.algorithms.model_selection.exhaustive (leave-p-out) against scikit-learn."""

import numpy as np
import pytest
from sklearn.model_selection import LeavePOut, cross_val_score

from mlpar.algorithms.model_selection import cross_validation as ms
from mlpar.algorithms.model_selection.exhaustive import leave_p_out, n_leave_p_out_splits


@pytest.mark.parametrize("n, p", [(6, 1), (7, 2), (8, 3)])
def test_same_splits_in_the_same_order_as_sklearn(n, p):
    ours = leave_p_out(n, p)
    theirs = list(LeavePOut(p).split(np.zeros((n, 1))))
    assert len(ours) == len(theirs) == n_leave_p_out_splits(n, p)
    for (tr, te), (str_, ste) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(te, ste)
        np.testing.assert_array_equal(tr, str_)


def test_every_pair_is_held_out_exactly_once():
    pairs = leave_p_out(9, 2)
    tests = {tuple(te) for _, te in pairs}
    assert len(tests) == len(pairs) == 36
    for tr, te in pairs:
        assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == 9


def test_leave_two_out_scores_equal_sklearn_on_a_small_set():
    X, y = ms.load_dataset("diabetes")
    X, y = X[:12], y[:12]  # C(12, 2) = 66 splits, each fitted three times below
    model = ms.make_model("ridge")
    splits = leave_p_out(12, 2)
    ours = ms.cross_validate(model, X, y, splits, scoring="neg_mean_squared_error")
    theirs = cross_val_score(model, X, y, cv=LeavePOut(2), scoring="neg_mean_squared_error")
    np.testing.assert_allclose(ours.scores, theirs, rtol=1e-12)
    par = ms.cross_validate(model, X, y, splits, scoring="neg_mean_squared_error",
                            backend="loky", n_jobs=2)
    np.testing.assert_array_equal(par.scores, ours.scores)


def test_bad_arguments_raise_before_building_anything():
    with pytest.raises(ValueError, match="p"):
        leave_p_out(5, 5)
    with pytest.raises(ValueError, match="p"):
        leave_p_out(5, 0)
    with pytest.raises(ValueError, match="max_splits"):
        leave_p_out(10_000, 3)  # 1.7e11 splits: refused by counting
    with pytest.raises(TypeError, match="n_samples"):
        leave_p_out(5.0, 2)
