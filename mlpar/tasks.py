"""Functions that run *on a worker*: small, pure, and importable so they pickle everywhere.

Every engine (simulated, local processes, Dask) ships a task as "function + arguments" to a
worker. A function defined in a notebook cell cannot be unpickled in a spawned process or on
a Dask worker, so the work that distributed algorithms hand out lives here.
"""

from __future__ import annotations

import numpy as np


def partial_gradient(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """The map step of least squares on one shard: (Xᵢᵀ(Xᵢw − yᵢ), ‖Xᵢw − yᵢ‖²).

    Shapes: X (nᵢ, d), y (nᵢ,), w (d,) → gradient sum (d,) and a float. The sums (not means)
    are returned so that the reduce step is a plain sum over workers whatever the shard sizes:
    ∇f(w) = (1/n) Σᵢ Xᵢᵀ(Xᵢw − yᵢ) for f(w) = (1/2n)‖Xw − y‖².
    """
    residual = X @ w - y
    return X.T @ residual, float(residual @ residual)


def minibatch_gradient(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Mean least-squares gradient over ``rows`` of a shard: (1/b) X_Bᵀ(X_B w − y_B), shape (d,)."""
    Xb, yb = X[rows], y[rows]
    return Xb.T @ (Xb @ w - yb) / len(rows)


def echo(payload, *resident):
    """Return ``payload`` unchanged: a round trip that measures only the messages.

    ``resident``: references to data already on the worker, which the task depends on as a
    real task depends on its shard (on Dask, a dependency adds scheduling work to every task).
    """
    return payload


def noop() -> None:
    """Do nothing: used to start worker processes before anything is timed."""
    return None
