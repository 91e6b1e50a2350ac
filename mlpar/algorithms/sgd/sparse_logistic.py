"""Sparse logistic regression, the model every SGD variant of lesson 04 trains.

``L(w) = (1/m) Σ_i log(1 + exp(-y_i x_i·w))``. One SGD update on sample ``i`` touches only
the coordinates ``e = nonzeros(x_i)``:

    margin = Σ_{j∈e} x_ij w_j                (read w_e)
    g      = -y_i σ(-y_i · margin)           (σ = logistic function)
    w_j   ← w_j - γ g x_ij   for j ∈ e       (write w_e)

The compiled pieces here (the update, the loss) are shared by the real threads of
``mlpar.algorithms.sgd.hogwild``, the race counters of ``mlpar.algorithms.sgd.conflicts`` and
the virtual-clock replay of ``mlpar.algorithms.sgd.conflict_model``, so all three train
exactly the same model.
"""

from __future__ import annotations

import numba
import numpy as np

from mlpar.algorithms.sgd.sparse_data import SparseProblem
from mlpar.core import validation


@numba.njit(nogil=True, inline="always")
def minus_sigmoid_gradient(z):
    # d/dz log(1 + exp(-z)) = -σ(-z), written so that exp never overflows.
    if z >= 0.0:
        e = np.exp(-z)
        return -e / (1.0 + e)
    return -1.0 / (1.0 + np.exp(z))


@numba.njit(nogil=True, inline="always")
def sgd_update(indptr, indices, data, y, w, i, step):
    """One SGD update on sample ``i``: read ``w_e`` for the margin, then write ``w_e``."""
    start, stop = indptr[i], indptr[i + 1]
    margin = 0.0
    for p in range(start, stop):
        margin += data[p] * w[indices[p]]
    scale = step * y[i] * minus_sigmoid_gradient(y[i] * margin)
    for p in range(start, stop):
        w[indices[p]] -= scale * data[p]


@numba.njit(nogil=True, cache=True)
def mean_logistic_loss(indptr, indices, data, y, w):
    """``(1/m) Σ log(1 + exp(-y_i x_i·w))`` over the CSR rows, without overflow."""
    total = 0.0
    for i in range(indptr.size - 1):
        margin = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            margin += data[p] * w[indices[p]]
        z = y[i] * margin
        total += np.log1p(np.exp(-z)) if z > 0.0 else -z + np.log1p(np.exp(z))
    return total / (indptr.size - 1)


def check_problem(problem) -> SparseProblem:
    """``problem`` itself if it is a ``SparseProblem``; a TypeError naming it otherwise."""
    if not isinstance(problem, SparseProblem):
        raise TypeError(
            "problem: expected a SparseProblem (mlpar.algorithms.sgd.sparse_data."
            f"make_sparse_problem), got {type(problem).__name__}"
        )
    return problem


def check_training_data(problem) -> SparseProblem:
    """``check_problem``, then no NaN or infinity in its values or labels.

    Every trainer calls it before it starts a thread, so bad data is reported as bad data
    (``problem.X: NaN at row 17, column 3``), not later as a step size that diverged.
    """
    problem = check_problem(problem)
    validation.finite_data("problem.X", problem.to_scipy())
    validation.finite_data("problem.y", problem.y)
    return problem


def logistic_loss(problem: SparseProblem, w: np.ndarray) -> float:
    """Mean logistic loss ``(1/m) Σ log(1 + exp(-y_i x_i·w))`` of weights ``w``."""
    problem = check_problem(problem)
    w = validation.array("w", w, ndim=1, dtype=np.float64, finite=True)
    if w.size != problem.n_features:
        raise ValueError(f"w: expected {problem.n_features} weights, got {w.size}")
    return float(mean_logistic_loss(problem.indptr, problem.indices, problem.data, problem.y, w))
