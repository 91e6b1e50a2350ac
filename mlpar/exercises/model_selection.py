"""Checks for lesson 03's exercises: folds, a parallel cross-validation, Amdahl's serial fraction.

Each check runs the student's function on fresh inputs and compares with the package's own
implementation; it raises ``AssertionError`` naming what is wrong, or prints one pass line.
"""

from __future__ import annotations

import numpy as np

from .. import model_selection as ms
from .. import scaling_laws
from . import call, expect_close, passed


def check_kfold(my_kfold) -> None:
    """``my_kfold(n_samples, k, seed)`` -> list of k (train, test) integer index arrays.

    Required: the test parts cover every row exactly once, sizes differ by at most one, each
    train part is the complement of its test part, and the same seed gives the same folds.
    """
    name = "Exercise 1 (k-fold)"
    for n, k in ((10, 3), (23, 5), (7, 7)):
        folds = call(name, my_kfold, n, k, 0)
        if len(folds) != k:
            raise AssertionError(
                f"{name}: expected {k} (train, test) pairs for k={k}, got {len(folds)}"
            )
        tests = [np.asarray(te) for _, te in folds]
        everything = np.sort(np.concatenate(tests))
        if not np.array_equal(everything, np.arange(n)):
            raise AssertionError(
                f"{name}: with n={n}, k={k} the test parts must contain each row "
                f"0..{n - 1} exactly once; together they hold {everything.tolist()}"
            )
        sizes = [len(te) for te in tests]
        if max(sizes) - min(sizes) > 1:
            raise AssertionError(f"{name}: fold sizes should differ by at most 1, got {sizes}")
        for i, (train, test) in enumerate(folds):
            expected = np.setdiff1d(np.arange(n), test)
            if not np.array_equal(np.sort(np.asarray(train)), expected):
                raise AssertionError(
                    f"{name}: fold {i}'s train rows must be every row not in its test rows"
                )
    again = call(name, my_kfold, 23, 5, 0)
    first = call(name, my_kfold, 23, 5, 0)
    if not all(
        np.array_equal(np.asarray(a[1]), np.asarray(b[1]))
        for a, b in zip(first, again, strict=True)
    ):
        raise AssertionError(
            f"{name}: the same seed must give the same folds; use default_rng(seed)"
        )
    passed(name, "test parts partition the rows, train parts are their complements, seeded")


def check_parallel_cv(parallel_cv) -> None:
    """``parallel_cv(model, X, y, folds, n_jobs)`` -> one score per fold, computed in parallel.

    Compared exactly with ``mlpar.model_selection.cross_validate`` run sequentially.
    """
    name = "Exercise 2 (parallel CV)"
    X, y = ms.load_dataset("breast_cancer")
    model = ms.make_model("logistic")
    folds = ms.kfold(len(y), 4, seed=11)
    reference = ms.cross_validate(model, X, y, folds).scores
    got = np.asarray(call(name, parallel_cv, model, X, y, folds, 2), dtype=float)
    if got.shape != reference.shape:
        raise AssertionError(
            f"{name}: expected {len(folds)} scores (one per fold), got shape {got.shape}"
        )
    if not np.array_equal(got, reference):
        if np.array_equal(np.sort(got), np.sort(reference)):
            raise AssertionError(f"{name}: right scores in the wrong order; keep the folds' order")
        raise AssertionError(
            f"{name}: scores {np.round(got, 4).tolist()} differ from the serial ones "
            f"{np.round(reference, 4).tolist()}; fit a fresh clone on X[train], score on X[test]"
        )
    passed(name, f"{len(folds)} fold scores equal the serial ones exactly")


def check_serial_fraction(serial_fraction) -> None:
    """``serial_fraction(p, speedup)`` -> Amdahl's ``s`` from one measurement at ``p`` workers."""
    name = "Exercise 3 (serial fraction)"
    for s, p in ((0.0, 2), (0.1, 2), (0.25, 4), (0.05, 64), (1.0, 8)):
        speedup = float(scaling_laws.amdahl_speedup([p], s)[0])
        got = call(name, serial_fraction, p, speedup)
        expect_close(
            name, got, s, what=f"s for p={p}, speedup={speedup:.4f}", rtol=1e-9, atol=1e-12
        )
    passed(name, "Amdahl's law inverted correctly")
