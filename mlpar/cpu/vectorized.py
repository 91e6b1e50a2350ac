"""Writing an algorithm as matrix operations instead of loops over samples.

Two computations that ML code does all the time, each written twice: once as the loop over
samples that follows the formula, and once as whole-array operations that numpy hands to
compiled code (broadcasting) or to BLAS (matrix products), where SIMD and threads are used
without a line of parallel code.

Least squares.  Loss L(w) = ½ ‖X w − y‖², X: (n, d), y: (n,), w: (d,). Its gradient

    ∇L(w) = Σ_i (x_iᵀ w − y_i) x_i  =  Xᵀ (X w − y)                       shape (d,)

is a sum over samples, which is exactly two matrix–vector products (4·n·d flops).

Pairwise Euclidean distances.  For rows x_i of X (n, d) and y_j of Y (m, d):

    D[i, j] = ‖x_i − y_j‖ = sqrt(‖x_i‖² + ‖y_j‖² − 2 x_iᵀ y_j)              shape (n, m)

by broadcasting (an (n, m, d) temporary) or by the expansion on the right, whose cross term
is one matrix product X Yᵀ.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import validation


def _check_least_squares(X, y, w):
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    w = validation.array("w", w, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w: expected {X.shape[1]} entries to match the columns of X, "
                         f"got {w.shape[0]}")
    return X, y, w


def least_squares_data(n: int, d: int, *, noise: float = 0.1, seed: int = 0):
    """A linear-regression problem: X (n, d), y = X w_true + noise, and w_true (d,)."""
    n = validation.positive_int("n", n)
    d = validation.positive_int("d", d)
    if n * d * 8 > validation.memory_bytes() // 2:
        raise ValueError(f"n, d: expected an array that fits in half of this machine's memory, "
                         f"got ({n}, {d}) = {n * d * 8 / 1e9:,.4g} GB")
    noise = validation.non_negative("noise", noise)
    rng = np.random.default_rng(validation.seed("seed", seed))
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    y = X @ w_true + noise * rng.standard_normal(n)
    return X, y, w_true


def least_squares_loss(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """½ ‖X w − y‖²."""
    X, y, w = _check_least_squares(X, y, w)
    r = X @ w - y
    return 0.5 * float(r @ r)


def gradient_loop(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_i (x_iᵀ w − y_i) x_i, one sample at a time in the interpreter, as the formula reads."""
    X, y, w = _check_least_squares(X, y, w)
    rows, targets, weights = X.tolist(), y.tolist(), w.tolist()  # Python floats, as in matmul
    d = X.shape[1]
    grad = [0.0] * d
    for x_i, y_i in zip(rows, targets, strict=True):
        residual = -y_i
        for j in range(d):
            residual += x_i[j] * weights[j]
        for j in range(d):
            grad[j] += residual * x_i[j]
    return np.array(grad)


def gradient_matrix(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Xᵀ (X w − y): two matrix–vector products, both run by BLAS."""
    X, y, w = _check_least_squares(X, y, w)
    return X.T @ (X @ w - y)


def _check_pair(X, Y):
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    Y = validation.array("Y", Y, ndim=2, dtype=np.float64, min_size=1)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"Y: expected {X.shape[1]} columns (features) to match X, "
                         f"got shape {Y.shape}")
    return X, Y


def distances_loop(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """D[i, j] = ‖x_i − y_j‖ with two Python loops over the points (one numpy call per pair)."""
    X, Y = _check_pair(X, Y)
    D = np.empty((X.shape[0], Y.shape[0]))
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            diff = X[i] - Y[j]
            D[i, j] = np.sqrt(diff @ diff)
    return D


def distances_broadcast(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Broadcasting: X[:, None, :] − Y[None, :, :] is an (n, m, d) array of differences.

    No Python loop, but the temporary holds n·m·d numbers: the memory, not the arithmetic,
    sets the cost, and it can run out of memory for large inputs.
    """
    X, Y = _check_pair(X, Y)
    diff = X[:, None, :] - Y[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))


def distances_matrix(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """‖x‖² + ‖y‖² − 2 X Yᵀ: the n·m·d work is one matrix product, done by BLAS.

    Rounding can make a tiny squared distance come out slightly negative (the terms cancel),
    so it is clipped at zero before the square root; accuracy near zero is absolute,
    about 1e-8 times the squared norms, not relative.
    """
    X, Y = _check_pair(X, Y)
    sq = (X * X).sum(axis=1)[:, None] + (Y * Y).sum(axis=1)[None, :] - 2.0 * (X @ Y.T)
    return np.sqrt(np.maximum(sq, 0.0))


def random_points(n: int, d: int, *, seed: int = 0) -> np.ndarray:
    """n standard-normal points in d dimensions, shape (n, d)."""
    n = validation.positive_int("n", n)
    d = validation.positive_int("d", d)
    if n * d * 8 > validation.memory_bytes() // 2:
        raise ValueError(f"n, d: expected an array that fits in half of this machine's memory, "
                         f"got ({n}, {d}) = {n * d * 8 / 1e9:,.4g} GB")
    return np.random.default_rng(validation.seed("seed", seed)).standard_normal((n, d))
