"""The lesson-03 checks pass good solutions and reject wrong or unfinished ones."""

import numpy as np
import pytest
from joblib import Parallel, delayed

from mlpar import model_selection as ms
from mlpar.exercises import model_selection as ex


def good_kfold(n, k, seed):
    return ms.kfold(n, k, seed=seed)


def unseeded_kfold(n, k, seed):
    return ms.kfold(n, k, seed=int(np.random.default_rng().integers(1000)))


def overlapping_kfold(n, k, seed):
    folds = ms.kfold(n, k, seed=seed)
    return [(np.arange(n), te) for _, te in folds]


def lopsided_kfold(n, k, seed):
    cuts = [list(range(n - k + 1))] + [[i] for i in range(n - k + 1, n)]
    rows = np.arange(n)
    return [(np.setdiff1d(rows, c), np.array(c)) for c in cuts]


def good_cv(model, X, y, folds, n_jobs):
    return Parallel(n_jobs=n_jobs)(
        delayed(ms.fit_and_score)(model, {}, X, y, tr, te) for tr, te in folds
    )


def reversed_cv(model, X, y, folds, n_jobs):
    return good_cv(model, X, y, folds, n_jobs)[::-1]


def train_score_cv(model, X, y, folds, n_jobs):
    return [ms.fit_and_score(model, {}, X, y, tr, tr) for tr, _ in folds]


def unfinished(*args):
    raise NotImplementedError


def test_kfold_check():
    ex.check_kfold(good_kfold)
    for bad, match in [
        (unseeded_kfold, "seed"),
        (overlapping_kfold, "every row not in its test rows"),
        (lopsided_kfold, "differ by at most 1"),
        (unfinished, "not done yet"),
    ]:
        with pytest.raises(AssertionError, match=match):
            ex.check_kfold(bad)


def test_parallel_cv_check(capsys):
    ex.check_parallel_cv(good_cv)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="wrong order"):
        ex.check_parallel_cv(reversed_cv)
    with pytest.raises(AssertionError, match="differ from the serial"):
        ex.check_parallel_cv(train_score_cv)


def test_serial_fraction_check():
    ex.check_serial_fraction(lambda p, S: (1 / S - 1 / p) / (1 - 1 / p))
    with pytest.raises(AssertionError, match="Exercise 3"):
        ex.check_serial_fraction(lambda p, S: 1 / S)
    with pytest.raises(AssertionError, match="not done yet"):
        ex.check_serial_fraction(unfinished)
