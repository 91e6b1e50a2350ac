"""Grid search over (C, gamma): same scores on every joblib backend and as with SVC."""

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.svm import SVC

from mlpar.algorithms.svm import tuning as svm_grid
from mlpar.cluster.dask_cluster import dask_client
from mlpar.core import splits

GRID = {"Cs": [0.5, 5.0], "gammas": [0.3, 3.0]}


@pytest.fixture(scope="module")
def data():
    return make_moons(240, noise=0.25, random_state=0)


@pytest.fixture(scope="module")
def sequential(data):
    return svm_grid.search_c_gamma(*data, **GRID, n_folds=3, seed=0, n_jobs=1)


def test_folds_partition_the_data(data):
    _, y = data
    folds = splits.stratified_kfold(y, 3, seed=0)
    tests = np.sort(np.concatenate([test for _, test in folds]))
    np.testing.assert_array_equal(tests, np.arange(len(y)))
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0 and train.size + test.size == len(y)


def test_scores_match_svc_on_the_same_folds(data, sequential):
    X, y = data
    folds = splits.stratified_kfold(y, 3, seed=0)
    expected = np.array([
        [np.mean([SVC(C=C, gamma=g).fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in folds])
         for g in GRID["gammas"]]
        for C in GRID["Cs"]
    ])
    np.testing.assert_allclose(sequential.scores, expected, atol=1.5 / len(y))
    assert sequential.best_score == sequential.scores.max()


def test_loky_and_dask_backends_agree(data, sequential):
    X, y = data
    loky = svm_grid.search_c_gamma(X, y, **GRID, n_folds=3, seed=0, n_jobs=2)
    np.testing.assert_array_equal(loky.scores, sequential.scores)
    with dask_client(n_workers=2) as _, joblib.parallel_config(backend="dask"):
        on_dask = svm_grid.search_c_gamma(X, y, **GRID, n_folds=3, seed=0)
    np.testing.assert_array_equal(on_dask.scores, sequential.scores)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"Cs": [1.0, 0.0]}, ValueError, "Cs"),
        ({"gammas": [-1.0]}, ValueError, "gammas"),
        ({"Cs": []}, ValueError, "empty grid"),
        ({"n_folds": 1}, ValueError, "n_folds"),
        ({"kernel": "tanh"}, ValueError, "kernel"),
    ],
)
def test_bad_input(data, kwargs, error, match):
    args = dict(GRID)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        svm_grid.search_c_gamma(*data, **args)
