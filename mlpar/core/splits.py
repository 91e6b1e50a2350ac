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

from mlpar.core import limits, seeding, validation


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
    limits.elements("n_samples", n_samples * k)
    shuffle = validation.flag("shuffle", shuffle)
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
    limits.elements("t, n_samples", t * validation.positive_int("n_samples", n_samples))
    children = seeding.worker_seeds(t, seed=seed)
    splits = []
    for child in children:
        splits += kfold(n_samples, k, seed=int(child.generate_state(1)[0]))
    return splits


def leave_one_out(n_samples: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_samples`` pairs; pair ``i`` tests on row ``i`` alone and trains on all the others."""
    n_samples = validation.integer("n_samples", n_samples, minimum=2)
    # n pairs of n - 1 indices: quadratic memory, so check the total before building any
    limits.elements("n_samples", n_samples * n_samples)
    rows = np.arange(n_samples)
    return [(np.delete(rows, i), rows[i : i + 1]) for i in range(n_samples)]


def check_splits(splits, n_samples: int, *, allow_overlap: bool = False) -> list:
    """``splits`` as a list of (train, test) index arrays into ``range(n_samples)``.

    An int means that many k-fold folds. Every pair must have non-empty 1-D integer parts
    inside the range, and no row in both parts unless ``allow_overlap`` (a training score).
    """
    allow_overlap = validation.flag("allow_overlap", allow_overlap)
    n_samples = validation.positive_int("n_samples", n_samples)
    if isinstance(splits, numbers.Integral) and not isinstance(splits, bool):
        k = validation.integer("splits", splits, minimum=2, maximum=n_samples)
        return kfold(n_samples, k)
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
        if not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"splits[{i}]: expected a (train, test) pair, got {len(pair)} items")
        try:
            train, test = (np.asarray(part) for part in pair)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"splits[{i}]: expected two 1-D index arrays, got {exc}") from None
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
        overlap = np.intersect1d(train, test) if not allow_overlap else train[:0]
        if overlap.size:
            raise ValueError(
                f"splits[{i}]: expected test rows outside the training rows, got "
                f"{overlap.size} row(s) in both (e.g. {overlap[:5].tolist()}); a model tested "
                "on rows it was trained on scores too well"
            )
        checked.append((train, test))
    return checked


# --- shards: one part of the rows per worker ---------------------------------------------------

def shards(n_samples: int, n_workers: int) -> list[slice]:
    """Contiguous row ranges, sizes differing by at most one (like ``np.array_split``)."""
    n = validation.positive_int("n_samples", n_samples)
    m = validation.positive_int("n_workers", n_workers)  # virtual workers too: no core cap
    if m > n:
        raise ValueError(f"n_workers: expected at most n_samples = {n} workers, got {m}")
    bounds = np.linspace(0, n, m + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _labels(y) -> np.ndarray:
    """Class labels: a 1-D array of ints, strings or finite floats."""
    if isinstance(y, np.ndarray):
        validation.array("y", y)  # refuses broadcast views bigger than memory
    try:
        y = np.asarray(y)
    except ValueError as exc:
        raise ValueError(f"y: expected a 1-D array of class labels, got {exc}") from None
    if y.ndim != 1 or y.size == 0 or y.dtype.kind not in "iubfUS":
        raise ValueError(f"y: expected a non-empty 1-D array of class labels, got "
                         f"{validation.describe(y)}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y: expected finite class labels, got NaN or inf")
    return y


def stratified_shards(y, n_shards: int, *, seed: int) -> list[np.ndarray]:
    """Split ``range(len(y))`` into ``n_shards`` index arrays with the class balance of ``y``.

    Each class is shuffled (``seed``) and dealt round-robin, so every shard gets both classes
    whenever each class has at least ``n_shards`` members.
    """
    y = _labels(y)
    n_shards = validation.positive_int("n_shards", n_shards)
    if n_shards > y.size:
        raise ValueError(f"n_shards: expected at most len(y) = {y.size} shards, got {n_shards}")
    rng = np.random.default_rng(validation.seed("seed", seed))
    shards = [[] for _ in range(n_shards)]
    offset = 0
    for label in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == label))
        if members.size < n_shards:
            raise ValueError(
                f"n_shards: expected at most {members.size} (the size of class {label!r}), "
                f"got {n_shards}"
            )
        for k, idx in enumerate(members):
            shards[(k + offset) % n_shards].append(idx)
        offset += members.size
    return [np.sort(np.array(s, dtype=np.int64)) for s in shards]


def stratified_kfold(y, n_folds: int, *, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified ``(train, test)`` index pairs for ``n_folds``-fold cross-validation."""
    n_folds = validation.integer("n_folds", n_folds, minimum=2)
    y = _labels(y)
    if n_folds > y.size:
        raise ValueError(f"n_folds: expected at most len(y) = {y.size} folds, got {n_folds}")
    tests = stratified_shards(y, n_folds, seed=seed)
    everything = np.arange(len(y))
    return [(np.setdiff1d(everything, test), test) for test in tests]
