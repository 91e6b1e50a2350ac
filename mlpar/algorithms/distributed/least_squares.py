"""Least squares, the one model every distributed lesson trains: its loss and its gradients.

    f(w) = (1/2n)‖Xw − y‖²,        ∇f(w) = (1/n) Xᵀ(Xw − y)

Shapes: X (n, d), y (n,), w (d,). Because the gradient is a sum over rows, it splits over any
partition of the rows into shards X₁ … X_m: Xᵀ(Xw − y) = Σᵢ Xᵢᵀ(Xᵢw − yᵢ). ``partial_gradient``
is that term for one shard (the map step of MapReduce); ``minibatch_gradient`` is the mean over
a few rows (what a parameter-server worker pushes). Workers run these functions, so they live
in an importable module and pickle to any process or Dask worker.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import validation


def _check_problem(X, y, w) -> None:
    """Shapes of a least-squares problem: X (n, d), y (n,), w (d,).

    Cheap (no pass over the data): it runs once per task on the workers. NaN or infinity in the
    data is looked for only when a result comes out non-finite.
    """
    for name, value, ndim in (("X", X, 2), ("y", y, 1), ("w", w, 1)):
        validation.array(name, value, ndim=ndim, min_size=1 if name == "X" else 0)
        if value.dtype.kind not in "biuf":
            raise TypeError(f"{name}: expected a numeric array, got dtype {value.dtype}")
    validation.same_length("X", X, "y", y)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w: expected {X.shape[1]} weights to match X's columns, got {w.shape[0]}")


def _finite_data(X, y) -> None:
    # Called only when a result is not finite: one pass to say whether the data are to blame
    # (a diverging w is the trainer's business: it names the step size).
    for name, part in (("X", X), ("y", y)):
        validation.finite_data(name, part)


def loss(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """f(w) = (1/2n)‖Xw − y‖²."""
    _check_problem(X, y, w)
    r = X @ w - y
    value = float(r @ r) / (2 * len(y))
    if not np.isfinite(value):
        _finite_data(X, y)
    return value


def gradient(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """∇f(w) = (1/n) Xᵀ(Xw − y), shape (d,)."""
    _check_problem(X, y, w)
    g = X.T @ (X @ w - y) / len(y)
    if not np.all(np.isfinite(g)):
        _finite_data(X, y)
    return g


def partial_gradient(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """The map step on one shard: (Xᵢᵀ(Xᵢw − yᵢ), ‖Xᵢw − yᵢ‖²).

    Sums, not means, so that the reduce step is a plain sum over workers whatever the shard
    sizes; the server divides by the total n once.
    """
    _check_problem(X, y, w)
    residual = X @ w - y
    sse = float(residual @ residual)
    if not np.isfinite(sse):
        _finite_data(X, y)
    return X.T @ residual, sse


def minibatch_gradient(X: np.ndarray, y: np.ndarray, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mean gradient over ``rows`` of a shard: (1/b) X_Bᵀ(X_B w − y_B), shape (d,)."""
    _check_problem(X, y, w)
    rows = validation.array("rows", rows, ndim=1, min_size=1)
    if rows.dtype.kind not in "iu" or rows.min() < 0 or rows.max() >= len(y):
        raise ValueError(f"rows: expected integer row numbers in [0, {len(y)}), got "
                         f"{validation.describe(rows)}")
    Xb, yb = X[rows], y[rows]
    g = Xb.T @ (Xb @ w - yb) / len(rows)
    if not np.all(np.isfinite(g)):
        _finite_data(Xb, yb)
    return g


def batch_gradient(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``minibatch_gradient`` over all rows given: a parameter-server step's work, for timing."""
    _check_problem(X, y, w)
    return minibatch_gradient(X, y, w, np.arange(len(y)))
