"""Checks for lesson 04: the sparsity measures Δ and ρ, and one sparse SGD update."""

from __future__ import annotations

import math

import numpy as np

from ..hogwild import run_sgd
from ..sparse_data import make_sparse_problem, sparsity
from . import call, expect_close, passed


def _tiny_problems():
    # Fresh, seeded problems: one very sparse, one medium, one fully dense.
    yield make_sparse_problem(40, 30, 0.05, seed=11)
    yield make_sparse_problem(60, 12, 0.3, seed=12)
    yield make_sparse_problem(10, 5, 1.0, seed=13)


def check_delta(delta) -> None:
    """``delta(indptr, indices, n_features)`` must return Δ = max column degree / edges."""
    name = "Exercise 1 (Δ, the busiest coordinate)"
    for problem in _tiny_problems():
        got = call(name, delta, problem.indptr, problem.indices, problem.n_features)
        expected = sparsity(problem).delta
        if not isinstance(got, (int, float, np.floating)) or not math.isclose(
            got, expected, rel_tol=1e-12
        ):
            raise AssertionError(
                f"{name}: for {problem!r} you returned {got!r}, expected {expected!r}. "
                "Count, for every column, how many rows contain it; take the largest count and "
                "divide by the number of (non-empty) rows."
            )
    passed(name, "matches mlpar.sparse_data.sparsity on three problems")


def check_rho(rho) -> None:
    """``rho(indptr, indices)`` must return ρ = max over rows of rows sharing a column / rows."""
    name = "Exercise 2 (ρ, the most crowded update)"
    for problem in _tiny_problems():
        got = call(name, rho, problem.indptr, problem.indices)
        expected = sparsity(problem).rho
        if not isinstance(got, (int, float, np.floating)) or not math.isclose(
            got, expected, rel_tol=1e-12
        ):
            hint = ""
            if isinstance(got, (int, float, np.floating)) and math.isclose(
                got, expected - 1 / problem.n_samples, rel_tol=1e-12
            ):
                hint = " You are one row short: a row shares its columns with itself."
            raise AssertionError(
                f"{name}: for {problem!r} you returned {got!r}, expected {expected!r}.{hint}"
            )
    passed(name, "matches mlpar.sparse_data.sparsity on three problems")


def check_sgd_step(sgd_step) -> None:
    """``sgd_step(w, cols, vals, label, step)`` must apply one logistic SGD update in place."""
    name = "Exercise 3 (one sparse SGD update)"
    problem = make_sparse_problem(300, 40, 0.1, seed=14)
    # The reference: one serial epoch of mlpar.hogwild, whose order is seed 5's permutation.
    reference = run_sgd(problem, "serial", step=0.7, epochs=1, seed=5).w
    order = np.random.default_rng(5).permutation(problem.n_samples)
    w = np.zeros(problem.n_features)
    for i in order:
        a, b = problem.indptr[i], problem.indptr[i + 1]
        cols, vals = problem.indices[a:b].copy(), problem.data[a:b].copy()
        result = call(name, sgd_step, w, cols, vals, float(problem.y[i]), 0.7)
        if result is not None and result is not w:
            raise AssertionError(
                f"{name}: update w in place (w[cols] -= ...) and return None; Hogwild threads "
                "share one array, so a copy would never be seen by the others"
            )
    what = "w after one epoch of your updates"
    expect_close(name, w, reference, what=what, rtol=1e-9, atol=1e-12)
    passed(name, f"{problem.n_samples} updates reproduce mlpar's serial epoch")
