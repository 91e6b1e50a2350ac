"""Checks for lesson 09's exercises: the RBF kernel, one SMO pair update, one Pegasos step."""

from __future__ import annotations

import numpy as np

from .. import kernels, smo
from . import call, expect_close, passed


def check_rbf_kernel(func) -> None:
    """``func(X, Y, gamma)`` must return ``exp(-gamma ||X[i] - Y[j]||^2)``, shape (n, m)."""
    name = "rbf_kernel"
    rng = np.random.default_rng(9)
    for n, m, d, gamma in ((5, 5, 2, 1.0), (7, 3, 4, 0.25), (1, 6, 3, 3.0)):
        X = rng.normal(size=(n, d))
        Y = rng.normal(size=(m, d))
        got = call(name, func, X, Y, gamma)
        expected = kernels.kernel_matrix_numpy(X, Y, kernel="rbf", gamma=gamma)
        if np.shape(got) == (m, n) and n != m:
            raise AssertionError(f"{name}: got shape {np.shape(got)}; rows should follow X, "
                                 "columns Y")
        if np.allclose(got, np.exp(-gamma * np.sqrt(np.maximum(0, -2 * X @ Y.T
                                                             + (X**2).sum(1)[:, None]
                                                             + (Y**2).sum(1)[None, :])))):
            raise AssertionError(f"{name}: the kernel uses the distance; it needs its square")
        expect_close(name, got, expected, what=f"K for X {X.shape}, Y {Y.shape}", rtol=1e-9,
                     atol=1e-12)
    passed(name, "matches the RBF kernel on three shapes")


def check_pair_update(func) -> None:
    """``func(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C)`` -> new ``(a_i, a_j)``."""
    name = "pair_update"
    rng = np.random.default_rng(11)
    clipped = free = 0
    for _ in range(400):
        C = float(rng.uniform(0.5, 3.0))
        a_i, a_j = (float(v) for v in rng.uniform(0, C, size=2))
        y_i, y_j = (float(v) for v in rng.choice([-1.0, 1.0], size=2))
        G_i, G_j = (float(v) for v in rng.normal(scale=2.0, size=2))
        if -y_i * G_i + y_j * G_j <= 0:  # SMO only updates a violating pair
            continue
        K_ij = float(rng.uniform(-0.5, 0.5))
        args = (a_i, a_j, y_i, y_j, G_i, G_j, 1.0, 1.0, K_ij, C)
        got = call(name, func, *args)
        try:
            new_i, new_j = (float(v) for v in got)
        except (TypeError, ValueError):
            raise AssertionError(f"{name}: expected a pair (a_i, a_j), got {got!r}") from None
        _, ref_i, ref_j = smo.pair_step(*args)
        if abs(y_i * new_i + y_j * new_j - (y_i * a_i + y_j * a_j)) > 1e-9:
            raise AssertionError(
                f"{name}: y_i a_i + y_j a_j changed for {args}; the step must move a_i by "
                "+y_i t and a_j by -y_j t with the same t"
            )
        if not (-1e-12 <= new_i <= C + 1e-12 and -1e-12 <= new_j <= C + 1e-12):
            raise AssertionError(
                f"{name}: got ({new_i:.4g}, {new_j:.4g}) outside [0, C={C:.4g}] for {args}; "
                "clip t so both multipliers stay in the box"
            )
        expect_close(name, [new_i, new_j], [ref_i, ref_j], what=f"(a_i, a_j) for {args}",
                     rtol=1e-9, atol=1e-12)
        if ref_i in (0.0, C) or ref_j in (0.0, C):
            clipped += 1
        else:
            free += 1
    passed(name, f"{free} free and {clipped} clipped steps agree with the reference")


def check_pegasos_step(func) -> None:
    """``func(w, X_batch, y_batch, lam, t)`` -> the next ``w`` (no projection)."""
    name = "pegasos_step"
    rng = np.random.default_rng(13)
    for k, d, lam, t in ((1, 3, 0.1, 1), (8, 5, 0.01, 7), (16, 2, 1.0, 40)):
        w = rng.normal(size=d)
        X = rng.normal(size=(k, d))
        y = rng.choice([-1.0, 1.0], size=k)
        got = call(name, func, w.copy(), X, y, lam, t)
        eta = 1.0 / (lam * t)
        active = y * (X @ w) < 1.0
        expected = (1 - eta * lam) * w + eta / k * (y[active, None] * X[active]).sum(axis=0)
        expect_close(name, got, expected, what=f"w after step t={t} with a batch of {k}",
                     rtol=1e-9, atol=1e-12)
    passed(name, "three steps match the Pegasos update")
