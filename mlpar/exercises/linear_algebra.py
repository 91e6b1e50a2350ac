"""Checks for the exercises of lesson 02 (parallel linear algebra).

Each ``check_*`` calls the student's function on fresh inputs, compares it with a reference
from ``mlpar``, and prints one pass line or raises ``AssertionError`` that says what is wrong.
"""

from __future__ import annotations

import numpy as np

from .. import matmul as _matmul
from .. import vectorized as _vectorized
from . import call, expect_close, passed


def check_gflops(func) -> None:
    """``func(n, m, p, seconds)`` -> GFLOP/s of an (n, m) @ (m, p) product taking ``seconds``."""
    name = "gflops"
    for n, m, p, seconds in [(100, 100, 100, 1e-3), (512, 64, 8, 0.25), (3, 5, 7, 2e-9)]:
        got = call(name, func, n, m, p, seconds)
        expected = _matmul.matmul_flops(n, m, p) / seconds / 1e9
        if not np.isscalar(got) and np.ndim(got) != 0:
            raise AssertionError(f"{name}: expected one number, got {type(got).__name__} {got!r}")
        got = float(got)
        if np.isclose(got, expected, rtol=1e-9):
            continue
        hint = ""
        if np.isclose(2 * got, expected, rtol=1e-9):
            hint = "; off by a factor of 2: a multiply-add is two floating-point operations"
        elif np.isclose(got, expected * 1e9, rtol=1e-9):
            hint = "; the unit is GIGA-flop/s: divide flops per second by 1e9"
        elif np.isclose(got, expected * seconds * seconds, rtol=1e-9):
            hint = "; a rate is operations divided by seconds"
        raise AssertionError(
            f"{name}: for n={n}, m={m}, p={p} in {seconds} s got {got:.6g}, expected "
            f"{expected:.6g}{hint}"
        )
    passed(name, "2·n·m·p flops / seconds / 1e9")


def check_blocked_matmul(func) -> None:
    """``func(a, b, block)`` -> ``a @ b`` computed tile by tile."""
    name = "blocked_matmul"
    cases = [(8, 8, 8, 4), (12, 8, 16, 4), (10, 7, 13, 4), (5, 3, 2, 8), (9, 9, 9, 1)]
    for n, m, p, block in cases:
        a, b = _matmul.random_matrices(n, m, p, seed=n + m + p)
        a0, b0 = a.copy(), b.copy()
        got = call(name, func, a, b, block)
        if not (np.array_equal(a, a0) and np.array_equal(b, b0)):
            raise AssertionError(f"{name}: your function changed its inputs a or b; "
                                 "accumulate into a new array C instead")
        multiple = n % block == 0 and m % block == 0 and p % block == 0
        try:
            expect_close(name, got, a @ b, what=f"C for shapes ({n}, {m}) @ ({m}, {p}), "
                         f"block={block}", rtol=1e-10, atol=1e-10)
        except AssertionError as err:
            if not multiple:
                raise AssertionError(
                    f"{err}\nHint: the sizes here are not multiples of the block, so the edge "
                    "tiles (the last in each direction) are smaller: slice up to "
                    "min(i + block, n), or let numpy clip a slice that runs past the end"
                ) from None
            raise
    passed(name, "equals a @ b, including edge tiles")


def check_gradient(func) -> None:
    """``func(X, y, w)`` -> gradient of ½‖Xw − y‖², shape (d,), written with matrix operations."""
    name = "gradient"
    for n, d, seed in [(50, 3, 0), (7, 11, 1), (1, 1, 2)]:
        X, y, _ = _vectorized.least_squares_data(n, d, seed=seed)
        w = np.random.default_rng(seed + 100).standard_normal(d)
        expected = _vectorized.gradient_loop(X, y, w)
        got = np.asarray(call(name, func, X, y, w))
        if got.shape != (d,) and got.size == d:
            raise AssertionError(f"{name}: got shape {got.shape}, expected ({d},); w and y are "
                                 "1-D vectors, so keep them 1-D (no [:, None] or .reshape)")
        if got.shape == (d,) and not np.allclose(got, expected, rtol=1e-8, atol=1e-10):
            if np.allclose(-got, expected, rtol=1e-8, atol=1e-10):
                raise AssertionError(f"{name}: got minus the gradient; the residual is X @ w - y")
            if np.allclose(got * n, expected, rtol=1e-8, atol=1e-10) and n > 1:
                raise AssertionError(f"{name}: got the gradient divided by n={n}; this lesson's "
                                     "loss is ½‖Xw − y‖², a sum, not a mean")
        expect_close(name, got, expected, what=f"the gradient for X of shape {X.shape}",
                     rtol=1e-8, atol=1e-10)
    passed(name, "Xᵀ(Xw − y) equals the per-sample loop")


def check_squared_distances(func) -> None:
    """``func(X, Y)`` -> squared Euclidean distances, shape (n, m), without Python loops."""
    name = "squared_distances"
    # The last case measures points against themselves: the diagonal is exactly 0, where the
    # cancellation in ‖x‖² + ‖y‖² − 2xᵀy can leave a tiny negative number.
    for n, m, d, seed in [(6, 4, 3, 0), (1, 9, 2, 1), (5, 5, 1, 2), (30, 30, 7, 3)]:
        X = _vectorized.random_points(n, d, seed=seed) * 10.0
        Y = X if seed == 3 else _vectorized.random_points(m, d, seed=seed + 10)
        expected = _vectorized.distances_loop(X, Y) ** 2
        got = np.asarray(call(name, func, X, Y))
        if got.shape == (m, n) and n != m:
            raise AssertionError(f"{name}: got shape {got.shape}, expected ({n}, {m}): "
                                 "row i is point X[i], column j is point Y[j]")
        if got.shape == expected.shape:
            close = np.allclose(got, expected, rtol=1e-8, atol=1e-8)
            if not close and np.allclose(got ** 2, expected, rtol=1e-8, atol=1e-8):
                raise AssertionError(f"{name}: these are distances, not squared distances; "
                                     "drop the square root")
            if (got < 0).any():
                raise AssertionError(f"{name}: got a negative squared distance {got.min():.3g}; "
                                     "rounding in ‖x‖² + ‖y‖² − 2xᵀy can go below 0: clip at 0 "
                                     "(np.maximum(..., 0.0))")
        expect_close(name, got, expected, what=f"D² for X {X.shape} and Y {Y.shape}",
                     rtol=1e-8, atol=1e-8)
    passed(name, "equals the loop over pairs")
