"""Exhaustive cross-validation: leave-p-out, every subset of p rows held out once.

Leave-one-out is the case p = 1 (``mlpar.core.splits.leave_one_out``). With p = 2 every pair
of rows is a test set once, so n rows give n(n - 1)/2 fits: exhaustive, unbiased in the sense
Kohavi (1995) discusses, and quickly unaffordable, which is why the splits are counted (and
refused above a limit) before any is built. The order is that of ``itertools.combinations``,
the same as scikit-learn's ``LeavePOut``, so scores can be compared split by split.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mlpar.core import validation

MAX_SPLITS = 200_000  # beyond this the index arrays alone would crowd a 2 GB notebook


def n_leave_p_out_splits(n_samples: int, p: int) -> int:
    """How many (train, test) pairs leave-p-out makes: ``C(n_samples, p)``."""
    n_samples = validation.integer("n_samples", n_samples, minimum=2)
    p = validation.positive_int("p", p)
    if p >= n_samples:
        raise ValueError(f"p: expected fewer rows held out than n_samples = {n_samples}, got {p}")
    return math.comb(n_samples, p)


def leave_p_out(n_samples: int, p: int, *, max_splits: int = MAX_SPLITS) -> list:
    """Every ``(train, test)`` pair whose test part is one subset of ``p`` rows.

    Refuses (ValueError) when there would be more than ``max_splits`` pairs, before building
    any of them.
    """
    count = n_leave_p_out_splits(n_samples, p)
    max_splits = validation.positive_int("max_splits", max_splits)
    if count > max_splits:
        raise ValueError(
            f"n_samples, p: leave-{p}-out on {n_samples} rows makes {count:,} splits, more than "
            f"max_splits = {max_splits:,}; use fewer rows, a smaller p, or repeated k-fold"
        )
    rows = np.arange(n_samples)
    pairs = []
    for test in itertools.combinations(range(n_samples), p):
        test = np.array(test, dtype=np.int64)
        keep = np.ones(n_samples, dtype=bool)
        keep[test] = False
        pairs.append((rows[keep], test))
    return pairs
