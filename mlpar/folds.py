"""Cross-validation folds: k-fold, t×k-fold (repeated) and leave-one-out, as index arrays.

A split is a pair ``(train, test)`` of sorted integer index arrays into the rows of ``X``.
Lists of splits are plain data: they pickle to any worker, scikit-learn accepts them as
``cv=``, and the same list gives the same folds on every engine.

    >>> folds = kfold(569, 5, seed=0)        # 5 pairs; the test parts partition the rows
    >>> repeated_kfold(569, 5, 3, seed=0)    # 15 pairs, three different shuffles
    >>> leave_one_out(442)                   # 442 pairs, one test row each
"""

from __future__ import annotations

import numbers

import numpy as np

from . import validation


def kfold(
    n_samples: int, k: int, *, shuffle: bool = True, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` (train, test) index pairs; the test parts partition ``range(n_samples)``.

    The rows are permuted with ``default_rng(seed)`` (or kept in order if ``shuffle`` is
    False) and cut into ``k`` nearly equal consecutive parts; fold ``i`` tests on part ``i``
    and trains on the other ``n_samples - |part i|`` rows.
    """
    n_samples = validation.positive_int("n_samples", n_samples)
    k = validation.integer("k", k, minimum=2)
    if k > n_samples:
        raise ValueError(
            f"k: expected at most n_samples={n_samples} folds, got {k}; use fewer folds"
        )
    seed = validation.seed("seed", seed)
    order = np.random.default_rng(seed).permutation(n_samples) if shuffle else np.arange(n_samples)
    parts = np.array_split(order, k)
    return [
        (np.sort(np.concatenate(parts[:i] + parts[i + 1 :])), np.sort(parts[i])) for i in range(k)
    ]


def repeated_kfold(
    n_samples: int, k: int, t: int, *, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """t×k-fold: ``t`` independent k-fold splits, ``t * k`` pairs in all.

    Repeat ``r`` shuffles with its own child seed from ``SeedSequence(seed).spawn(t)``, so the
    repeats differ from each other and the whole list depends on ``seed`` alone.
    """
    t = validation.positive_int("t", t)
    seed = validation.seed("seed", seed)
    children = np.random.SeedSequence(seed).spawn(t)
    splits = []
    for child in children:
        splits += kfold(n_samples, k, seed=int(child.generate_state(1)[0]))
    return splits


def leave_one_out(n_samples: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_samples`` pairs; pair ``i`` tests on row ``i`` alone and trains on all the others."""
    n_samples = validation.integer("n_samples", n_samples, minimum=2)
    rows = np.arange(n_samples)
    return [(np.delete(rows, i), rows[i : i + 1]) for i in range(n_samples)]


def check_splits(splits, n_samples: int) -> list:
    if isinstance(splits, numbers.Integral) and not isinstance(splits, bool):
        return kfold(n_samples, splits)
    try:
        splits = list(splits)
    except TypeError:
        raise TypeError(
            f"splits: expected an int (number of folds) or a list of (train, test) index arrays, "
            f"got {type(splits).__name__}"
        ) from None
    if not splits:
        raise ValueError("splits: expected at least one (train, test) pair, got none")
    checked = []
    for i, pair in enumerate(splits):
        if len(pair) != 2:
            raise ValueError(f"splits[{i}]: expected a (train, test) pair, got {len(pair)} items")
        train, test = (np.asarray(part) for part in pair)
        for name, part in (("train", train), ("test", test)):
            if part.ndim != 1 or part.size == 0 or part.dtype.kind not in "iu":
                raise ValueError(
                    f"splits[{i}] {name}: expected a non-empty 1-D integer index array"
                )
            if part.min() < 0 or part.max() >= n_samples:
                raise ValueError(
                    f"splits[{i}] {name}: expected indices in [0, {n_samples}), "
                    f"got values from {part.min()} to {part.max()}"
                )
        checked.append((train, test))
    return checked
