"""NaN or infinity in the training data is reported as bad data, naming the argument and the
first bad position, before SMO, Pegasos, the cascade or the grid search start anything
(issue 25 item 4): never later as a solver or step-size failure."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

from mlpar.algorithms.svm import cascade, pegasos, smo, smo_fast, tuning


def _data(bad, *, row=17, column=1):
    X, y = make_moons(60, noise=0.2, random_state=0)
    X[row, column] = bad
    return X, y


TRAINERS = {
    "fit_smo": lambda X, y: smo.fit_smo(X, y, C=1.0, gamma=1.0),
    "fit_smo, all kernel rows": lambda X, y: smo.fit_smo(X, y, kernel_rows="all"),
    "fit_smo_fast": lambda X, y: smo_fast.fit_smo_fast(X, y, C=1.0, gamma=1.0),
    "fit_pegasos": lambda X, y: pegasos.fit_pegasos(X, y, lam=0.1, n_epochs=2, seed=0),
    "cascade_svm": lambda X, y: cascade.cascade_svm(X, y, n_shards=2, seed=0, n_jobs=2),
    "search_c_gamma": lambda X, y: tuning.search_c_gamma(X, y, Cs=[1.0], gammas=[1.0],
                                                         n_folds=2, seed=0, n_jobs=2),
}


@pytest.fixture
def nothing_may_start(monkeypatch):
    # Any solver loop, worker pool or epoch that starts fails the test.
    def refuse(*args, **kwargs):
        raise AssertionError("started before the data was checked")

    monkeypatch.setattr(smo, "_smo_loop", refuse)
    monkeypatch.setattr(smo_fast, "_solve", refuse)
    monkeypatch.setattr(pegasos, "_pegasos_epoch", refuse)
    monkeypatch.setattr(cascade, "Parallel", refuse)
    monkeypatch.setattr(tuning, "Parallel", refuse)
    monkeypatch.setattr(cascade.cleanup, "remove_stale_shm", refuse)


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "infinity"),
                                       (-np.inf, "infinity")])
def test_bad_values_in_X_are_named_before_anything_starts(trainer, bad, word,
                                                          nothing_may_start):
    X, y = _data(bad)
    with pytest.raises(ValueError, match=f"^X: {word} at row 17, column 1"):
        TRAINERS[trainer](X, y)


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_nan_labels_are_named(trainer, nothing_may_start):
    X, y = make_moons(40, noise=0.2, random_state=0)
    y = y.astype(float)
    y[5] = np.nan
    with pytest.raises(ValueError, match="^y: NaN at position 5"):
        TRAINERS[trainer](X, y)


@pytest.mark.parametrize("trainer", ["fit_smo", "fit_smo_fast", "fit_pegasos"])
def test_clean_data_still_trains(trainer):  # (the cascade and grid search: their own tests)
    X, y = make_moons(40, noise=0.2, random_state=0)
    assert TRAINERS[trainer](X, y) is not None
