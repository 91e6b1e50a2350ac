"""Parallel model selection: identical scores on every engine, equal to scikit-learn's."""

import time

import numpy as np
import psutil
import pytest
from sklearn.model_selection import GridSearchCV, cross_val_score

from mlpar.algorithms.model_selection import cross_validation as ms
from mlpar.algorithms.model_selection import search
from mlpar.cluster.dask_cluster import dask_client


@pytest.fixture(scope="module")
def cancer():
    return ms.load_dataset("breast_cancer")


@pytest.fixture(scope="module")
def diabetes():
    X, y = ms.load_dataset("diabetes")
    return X[:20], y[:20]  # a slice keeps leave-one-out quick (20 fits per engine)


# Every case is computed once sequentially (the reference) and once per engine. The Dask
# engine gets one test of its own below, so that one real LocalCluster serves all its checks
# and the test can see that the cluster's processes are gone afterwards.
PARALLEL = ["loky", "threading"]
GRID = {"clf__C": [0.01, 1.0, 100.0], "clf__fit_intercept": [True, False]}
MSE = {"scoring": "neg_mean_squared_error"}


@pytest.fixture(scope="module")
def cases(cancer, diabetes):
    X, y = cancer
    Xd, yd = diabetes
    model, ridge = ms.make_model("logistic"), ms.make_model("ridge")
    kf, tk = ms.kfold(len(y), 5, seed=0), ms.repeated_kfold(len(y), 3, 2, seed=1)
    loo = ms.leave_one_out(len(yd))
    folds = ms.kfold(len(y), 3, seed=2)
    return {
        "kfold": (lambda **kw: ms.cross_validate(model, X, y, kf, **kw).scores),
        "t x kfold": (lambda **kw: ms.cross_validate(model, X, y, tk, **kw).scores),
        "leave-one-out": (lambda **kw: ms.cross_validate(ridge, Xd, yd, loo, **MSE, **kw).scores),
        "grid": (lambda **kw: search.grid_search(model, GRID, X, y, folds, **kw).scores),
    }


@pytest.fixture(scope="module")
def serial(cases):
    return {name: run() for name, run in cases.items()}


# --- identical scores on every engine ----------------------------------------------------


def test_cv_equals_sklearn_cross_val_score(cancer):
    X, y = cancer
    folds = ms.kfold(len(y), 5, seed=0)
    model = ms.make_model("logistic")
    ours = ms.cross_validate(model, X, y, folds)
    theirs = cross_val_score(model, X, y, cv=folds)
    assert np.array_equal(ours.scores, theirs)


@pytest.mark.parametrize("backend", PARALLEL)
def test_parallel_scores_equal_serial_scores_exactly(cases, serial, backend):
    for name, run in cases.items():
        assert np.array_equal(run(backend=backend, n_jobs=2), serial[name]), name


def test_leave_one_out_equals_sklearn(diabetes, serial):
    X, y = diabetes
    theirs = cross_val_score(ms.make_model("ridge"), X, y, cv=ms.leave_one_out(len(y)), **MSE)
    assert np.array_equal(serial["leave-one-out"], theirs)


def test_seeded_random_state_is_per_task_and_engine_independent(cancer):
    from sklearn.linear_model import SGDClassifier

    X, y = cancer
    model = SGDClassifier(max_iter=50, tol=None)
    folds = ms.kfold(len(y), 4, seed=0)
    a = ms.cross_validate(model, X, y, folds, seed=7)
    b = ms.cross_validate(model, X, y, folds, seed=7, backend="threading", n_jobs=2)
    c = ms.cross_validate(model, X, y, folds, seed=8)
    assert np.array_equal(a.scores, b.scores)
    assert not np.array_equal(a.scores, c.scores)


def test_grid_search_matches_gridsearchcv(cancer):
    X, y = cancer
    folds = ms.kfold(len(y), 3, seed=2)
    model = ms.make_model("logistic")
    ours = search.grid_search(model, GRID, X, y, folds, backend="loky", n_jobs=2)
    ref = GridSearchCV(model, GRID, cv=folds, refit=False).fit(X, y)
    assert ours.best_params == ref.best_params_
    assert [dict(c) for c in ours.candidates] == list(ref.cv_results_["params"])
    np.testing.assert_allclose(ours.mean_scores, ref.cv_results_["mean_test_score"], rtol=1e-12)


def test_random_search_is_seeded_and_engine_independent(cancer):
    from scipy.stats import loguniform

    X, y = cancer
    space = {"clf__C": loguniform(1e-3, 1e2), "clf__fit_intercept": [True, False]}
    model = ms.make_model("logistic")
    a = search.random_search(model, space, X, y, 3, n_candidates=4, seed=5)
    b = search.random_search(model, space, X, y, 3, n_candidates=4, seed=5, backend="loky", n_jobs=2)
    assert a.candidates == b.candidates and np.array_equal(a.scores, b.scores)
    assert a.scores.shape == (4, 3)
    assert search.sample_parameters(space, 4, seed=6) != list(a.candidates)
    assert all(1e-3 <= c["clf__C"] <= 1e2 for c in a.candidates)


def test_progress_bar_does_not_change_results(cancer, capsys):
    X, y = cancer
    model = ms.make_model("logistic")
    a = ms.cross_validate(model, X, y, 3, backend="threading", n_jobs=2, progress=True)
    b = ms.cross_validate(model, X, y, 3)
    assert np.array_equal(a.scores, b.scores)
    assert "3/3" in capsys.readouterr().err


# --- clean-up ------------------------------------------------------------------------------


def _live_children():
    return {p.pid for p in psutil.Process().children(recursive=True) if p.is_running()}


def test_dask_scores_equal_serial_and_cluster_leaves_no_process_behind(cases, serial):
    before = _live_children()
    with dask_client(n_workers=2) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        started = _live_children() - before
        assert started, "the LocalCluster should run its workers as child processes"
        for name, run in cases.items():
            assert np.array_equal(run(backend="dask", n_jobs=-1), serial[name]), name
    deadline = time.monotonic() + 10
    while (_live_children() & started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_live_children() & started)


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda X, y: ms.kfold(10, 11), "k: expected at most n_samples=10"),
        (lambda X, y: ms.kfold(10, 1), "k"),
        (lambda X, y: ms.cross_validate(ms.make_model(), X, y, len(y) + 1), "splits: expected an integer <="),
        (lambda X, y: ms.cross_validate(ms.make_model(), X, y[:-1]), "y: expected 569 rows"),
        (lambda X, y: ms.cross_validate(ms.make_model(), X, y, 3, n_jobs=-2), "n_jobs"),
        (lambda X, y: ms.cross_validate(ms.make_model(), X, y, 3, n_jobs=0), "n_jobs"),
        (lambda X, y: ms.cross_validate(ms.make_model(), X, y, 3, backend="mpi"), "backend"),
        (lambda X, y: ms.cross_validate(ms.make_model(), X, y, []), "splits"),
        (
            lambda X, y: ms.cross_validate(
                ms.make_model(), X, y, [(np.arange(3), np.array([600]))]
            ),
            "indices",
        ),
        (lambda X, y: search.grid_search(ms.make_model(), {}, X, y), "grid: expected at least one"),
        (lambda X, y: search.grid_search(ms.make_model(), {"clf__C": []}, X, y), "empty list"),
        (lambda X, y: search.random_search(ms.make_model(), {}, X, y), "distributions"),
        (
            lambda X, y: search.random_search(ms.make_model(), {"clf__C": [1]}, X, y, n_candidates=0),
            "n_candidates",
        ),
        (lambda X, y: search.search(ms.make_model(), [], X, y), "candidates"),
        (lambda X, y: ms.leave_one_out(1), "n_samples"),
        (lambda X, y: ms.load_dataset("iris"), "name"),
        (lambda X, y: ms.make_model("svm"), "name"),
    ],
)
def test_bad_input_raises_clear_value_error(cancer, call, match):
    X, y = cancer
    with pytest.raises(ValueError, match=match):
        call(X, y)


def test_dask_backend_without_a_client_says_how_to_start_one(cancer, monkeypatch):
    import distributed

    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "get_client", no_client)
    X, y = cancer
    with pytest.raises(ValueError, match="dask_client"):
        ms.cross_validate(ms.make_model(), X, y, 3, backend="dask")


def test_bad_types_raise_type_error(cancer):
    X, y = cancer
    with pytest.raises(TypeError, match="n_jobs"):
        ms.cross_validate(ms.make_model(), X, y, 3, n_jobs=1.5)
    with pytest.raises(TypeError, match="X"):
        ms.cross_validate(ms.make_model(), X.tolist(), y)
    with pytest.raises(TypeError, match="grid"):
        search.grid_search(ms.make_model(), [("clf__C", [1])], X, y)
    with pytest.raises(TypeError, match="splits"):
        ms.cross_validate(ms.make_model(), X, y, 2.5)


def test_loky_without_process_semaphores_is_refused_not_quietly_threaded(monkeypatch):
    # /dev/shm missing or read-only: joblib sets mp to None and would run "loky" on threads
    import joblib._multiprocessing_helpers as helpers

    from mlpar.algorithms.model_selection import cross_validation as cv

    X, y = cv.load_dataset("breast_cancer")
    folds = cv.kfold(len(y), 3, seed=0)
    monkeypatch.setattr(helpers, "mp", None)
    with pytest.raises(RuntimeError, match=r"backend: 'loky' needs worker processes.*/dev/shm"):
        cv.cross_validate(cv.make_model("logistic"), X, y, folds, backend="loky", n_jobs=2)
    threads = cv.cross_validate(cv.make_model("logistic"), X, y, folds, backend="threading", n_jobs=2)
    assert len(threads.scores) == 3  # the engines that need no processes still run
