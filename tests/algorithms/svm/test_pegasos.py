"""Pegasos against a reference linear SVM solver (LinearSVC with the hinge loss)."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from mlpar.algorithms.svm import pegasos

# After 50 epochs at lam = 0.01 Pegasos is within 2 % of the optimal primal objective; its
# rate is O(1 / (lam T)), so smaller lam needs more epochs for the same tolerance.
LAM, EPOCHS, REL_TOL = 1e-2, 50, 0.02


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def reference(cancer):
    X, y = cancer
    # Same problem: 1/2 ||(w, b)||^2 + C sum hinge with C = 1 / (lam n), bias regularised.
    ref = LinearSVC(C=1.0 / (LAM * len(y)), loss="hinge", intercept_scaling=1.0, tol=1e-8,
                    max_iter=100_000).fit(X, y)
    y_signed = np.where(y == 1, 1.0, -1.0)
    return pegasos.primal_objective(ref.coef_[0], ref.intercept_[0], X, y_signed, LAM)


@pytest.mark.parametrize("batch_size", [1, 8])
def test_reaches_reference_objective(cancer, reference, batch_size):
    X, y = cancer
    result = pegasos.fit_pegasos(X, y, lam=LAM, n_epochs=EPOCHS, batch_size=batch_size, seed=0)
    assert result.objective.shape == (EPOCHS + 1,)
    assert result.objective[0] == pytest.approx(1.0)  # w = 0: every hinge term is 1
    assert reference <= result.final_objective <= reference * (1 + REL_TOL)
    assert np.mean(result.predict(X) == y) > 0.95


def test_deterministic_given_seed(cancer):
    X, y = cancer
    a = pegasos.fit_pegasos(X, y, lam=LAM, n_epochs=3, seed=5)
    b = pegasos.fit_pegasos(X, y, lam=LAM, n_epochs=3, seed=5)
    c = pegasos.fit_pegasos(X, y, lam=LAM, n_epochs=3, seed=6)
    np.testing.assert_array_equal(a.w, b.w)
    assert not np.array_equal(a.w, c.w)
    assert a.n_steps == 3 * len(y)


def test_projection_keeps_weights_in_ball(cancer):
    X, y = cancer
    result = pegasos.fit_pegasos(X, y, lam=0.5, n_epochs=2, seed=0)
    assert np.hypot(np.linalg.norm(result.w), result.b) <= 1 / np.sqrt(0.5) + 1e-12


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lam": 0.0}, ValueError, "lam"),
        ({"n_epochs": 0}, ValueError, "n_epochs"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"seed": -1}, ValueError, "seed"),
        ({"project": "yes"}, TypeError, "project"),
        ({"y": np.zeros(6)}, ValueError, "exactly two classes"),
        ({"X": np.full((6, 2), np.nan)}, ValueError, "X: NaN at row 0, column 0"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"X": np.ones((6, 2)), "y": np.arange(6) % 2}
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(error, match=match):
        pegasos.fit_pegasos(X, y, **args)
