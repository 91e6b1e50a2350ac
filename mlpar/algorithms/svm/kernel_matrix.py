"""Kernel matrices for support vector machines: linear, polynomial and RBF.

A kernel ``k(x, z)`` is an inner product in a lifted feature space, ``k(x, z) = <phi(x), phi(z)>``,
computed without ever building ``phi``:

* linear      ``k(x, z) = x . z``
* polynomial  ``k(x, z) = (gamma x . z + coef0) ** degree``
* RBF         ``k(x, z) = exp(-gamma ||x - z||^2)``

These are the definitions scikit-learn (and libsvm) use, so ``kernel_matrix`` can be checked
against ``sklearn.metrics.pairwise``.

The matrix ``K[i, j] = k(X[i], Y[j])`` of shape ``(n, m)`` costs ``O(n m d)`` flops for ``n·m``
outputs; every entry is independent, so it is compute-bound and splits over threads with no
communication. ``python -m mlpar.bench svm`` measures its thread speedup.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from mlpar.core import limits, validation

# mlpar.core.threads picks a thread-safe numba layer; it must be imported before the first parallel
# call, which this import guarantees for every user of the module.
from mlpar.core import threads as _threads  # noqa: F401

KERNELS = ("linear", "poly", "rbf")
_CODES = {"linear": 0, "poly": 1, "rbf": 2}


@numba.njit(cache=True, nogil=True, inline="always")
def kernel_entry(X, i, Y, j, code, gamma, degree, coef0):
    """``k(X[i], Y[j])`` for the kernel ``code`` (0 linear, 1 poly, 2 RBF): one entry of K."""
    s = 0.0
    if code == 2:
        for k in range(X.shape[1]):
            diff = X[i, k] - Y[j, k]
            s += diff * diff
        return math.exp(-gamma * s)
    for k in range(X.shape[1]):
        s += X[i, k] * Y[j, k]
    return (gamma * s + coef0) ** degree if code == 1 else s


@numba.njit(cache=True, nogil=True)
def _gram_row(X, Y, i, code, gamma, degree, coef0, out):
    # One output row, K[i, :]: the unit of work. It reads X[i] once and streams through Y.
    for j in range(Y.shape[0]):
        out[i, j] = kernel_entry(X, i, Y, j, code, gamma, degree, coef0)


@numba.njit(cache=True, nogil=True)
def _kernel_diagonal(X, code, gamma, degree, coef0, out):
    # k(x_t, x_t) for every t, shape (n,): all SMO needs besides the rows it selects.
    for t in range(X.shape[0]):
        if code == 2:
            out[t] = 1.0
        else:
            s = 0.0
            for k in range(X.shape[1]):
                s += X[t, k] * X[t, k]
            out[t] = (gamma * s + coef0) ** degree if code == 1 else s
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _gram_parallel(X, Y, code, gamma, degree, coef0, out):
    # Rows are independent, so the row loop is the one split across threads; no two threads
    # write the same row, so there is nothing to lock or reduce.
    for i in prange(X.shape[0]):
        _gram_row(X, Y, i, code, gamma, degree, coef0, out)
    return out


@numba.njit(cache=True, nogil=True)
def _gram_serial(X, Y, code, gamma, degree, coef0, out):
    # The same rows on the calling thread, for callers that are themselves one of several
    # parallel workers (joblib, Dask): a second layer of threads would only oversubscribe the
    # cores, and a process that never starts numba's thread pool starts faster.
    for i in range(X.shape[0]):
        _gram_row(X, Y, i, code, gamma, degree, coef0, out)
    return out


def resolve_gamma(gamma, X: np.ndarray) -> float:
    """``gamma`` as a number; ``'scale'`` means ``1 / (d · Var(X))`` as in scikit-learn."""
    X = validation.array("X", X, ndim=2, min_size=1, finite=True, numeric=True)
    if isinstance(gamma, str):
        validation.choice("gamma", gamma, ("scale",))
        var = float(X.var())
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    return validation.positive("gamma", gamma)


def check_kernel_args(kernel: str, gamma, degree, coef0) -> tuple[int, float, int, float]:
    """Validate kernel parameters; returns (code, gamma, degree, coef0) for the compiled loops."""
    validation.choice("kernel", kernel, KERNELS)
    gamma = validation.positive("gamma", gamma)
    degree = validation.positive_int("degree", degree)
    coef0 = validation.number("coef0", coef0)
    return _CODES[kernel], gamma, degree, coef0


def _checked(X, Y, kernel, gamma, degree, coef0):
    # The inputs both kernel-matrix functions take: X (n, d), Y (m, d) or X, kernel parameters.
    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
    if Y is None:
        Y = X
    Y = validation.array("Y", Y, ndim=2, dtype=np.float64, finite=True, min_size=1)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"Y: expected {X.shape[1]} columns to match X, got {Y.shape[1]}")
    return (X, Y) + check_kernel_args(kernel, gamma, degree, coef0)


def kernel_matrix(
    X: np.ndarray,
    Y: np.ndarray | None = None,
    *,
    kernel: str = "rbf",
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 0.0,
    parallel: bool = True,
) -> np.ndarray:
    """Kernel matrix ``K[i, j] = k(X[i], Y[j])``, shape ``(n, m)``; ``Y`` defaults to ``X``.

    Parameters
    ----------
    X : float64 array, shape (n, d)
    Y : float64 array, shape (m, d), optional
    kernel : 'linear', 'poly' or 'rbf'
    gamma, degree, coef0 : kernel parameters (see the module docstring)
    parallel : split the rows of ``K`` over numba's threads (``mlpar.core.threads.using_threads``
        sets how many); ``False`` runs the same loop on one thread.

    The compiled loops release the GIL (``nogil``), so Python threads (a threading joblib
    backend, Dask's threaded workers) can run several of them at once.

    Parallel strategy: a ``prange`` over the ``n`` output rows. Each row reads ``X[i]`` once
    and streams all of ``Y``; rows share nothing but read-only inputs, so there are no races
    and no reductions. Work per row is ``m·d`` multiply-adds (plus one ``exp`` per entry for
    RBF), which is why the loop is compute-bound and speeds up close to the thread count.
    """
    X, Y, code, gamma, degree, coef0 = _checked(X, Y, kernel, gamma, degree, coef0)
    parallel = validation.flag("parallel", parallel)
    limits.elements("X, Y", X.shape[0] * Y.shape[0])
    out = np.empty((X.shape[0], Y.shape[0]))
    X = np.ascontiguousarray(X)
    Y = np.ascontiguousarray(Y)
    run = _gram_parallel if parallel else _gram_serial
    return run(X, Y, code, gamma, degree, coef0, out)


def kernel_matrix_numpy(X: np.ndarray, Y: np.ndarray | None = None, *, kernel: str = "rbf",
                        gamma: float = 1.0, degree: int = 3, coef0: float = 0.0) -> np.ndarray:
    """Reference: the same kernels written with numpy (a BLAS matrix product plus elementwise)."""
    X, Y, code, gamma, degree, coef0 = _checked(X, Y, kernel, gamma, degree, coef0)
    dots = X @ Y.T
    if code == 0:
        return dots
    if code == 1:
        return (gamma * dots + coef0) ** degree
    # ||x - z||^2 = ||x||^2 + ||z||^2 - 2 x.z; clip the tiny negatives that rounding leaves.
    sq = (X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2.0 * dots
    return np.exp(-gamma * np.maximum(sq, 0.0))


def lifted_features(X: np.ndarray) -> np.ndarray:
    """The explicit degree-2 lift of 2-D points whose inner product is ``(x . z)^2``.

    ``phi(x) = (x1^2, sqrt(2) x1 x2, x2^2)``, shape ``(n, 3)``: a circle in the plane becomes a
    plane in this space, which is what the kernel trick exploits without building ``phi``.
    """
    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True)
    if X.shape[1] != 2:
        raise ValueError(f"X: expected 2 columns (points in the plane), got {X.shape[1]}")
    return np.column_stack([X[:, 0] ** 2, math.sqrt(2.0) * X[:, 0] * X[:, 1], X[:, 1] ** 2])
