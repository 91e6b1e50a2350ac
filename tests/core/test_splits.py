"""Folds: k-fold partitions the rows, t×k-fold repeats differ, leave-one-out, seeding, bad input."""

import numpy as np
import pytest

from mlpar.core import splits as folds_mod
from mlpar.core.splits import check_splits, kfold, leave_one_out, stratified_shards


@pytest.mark.parametrize("n, k", [(10, 2), (11, 3), (569, 5), (7, 7)])
def test_kfold_partitions_the_rows(n, k):
    folds = folds_mod.kfold(n, k, seed=3)
    assert len(folds) == k
    tests = np.concatenate([te for _, te in folds])
    assert np.array_equal(np.sort(tests), np.arange(n))
    sizes = [len(te) for _, te in folds]
    assert max(sizes) - min(sizes) <= 1
    for train, test in folds:
        assert np.array_equal(np.union1d(train, test), np.arange(n))
        assert np.intersect1d(train, test).size == 0


def test_kfold_is_seeded():
    a, b, c = (
        folds_mod.kfold(50, 5, seed=1),
        folds_mod.kfold(50, 5, seed=1),
        folds_mod.kfold(50, 5, seed=2),
    )
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x[1], y[1]) for x, y in zip(a, c, strict=True))
    plain = folds_mod.kfold(10, 2, shuffle=False)
    assert np.array_equal(plain[0][1], np.arange(5))


def test_repeated_kfold_has_t_different_repeats():
    splits = folds_mod.repeated_kfold(40, 4, 3, seed=0)
    assert len(splits) == 12
    first_tests = [splits[r * 4][1] for r in range(3)]
    assert not np.array_equal(first_tests[0], first_tests[1])
    for r in range(3):
        tests = np.concatenate([te for _, te in splits[r * 4 : r * 4 + 4]])
        assert np.array_equal(np.sort(tests), np.arange(40))


def test_leave_one_out():
    splits = folds_mod.leave_one_out(5)
    assert len(splits) == 5
    assert all(
        list(te) == [i] and i not in tr and len(tr) == 4 for i, (tr, te) in enumerate(splits)
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: folds_mod.kfold(10, 11), ValueError, "k: expected at most n_samples=10"),
        (lambda: folds_mod.kfold(10, 1), ValueError, "k"),
        (lambda: folds_mod.kfold(0, 2), ValueError, "n_samples"),
        (lambda: folds_mod.repeated_kfold(10, 2, 0), ValueError, "t"),
        (lambda: folds_mod.leave_one_out(1), ValueError, "n_samples"),
        (lambda: folds_mod.check_splits([], 10), ValueError, "at least one"),
        (lambda: folds_mod.check_splits([(np.arange(3),)], 10), ValueError, "pair"),
        (
            lambda: folds_mod.check_splits([(np.arange(3), np.array([0.5]))], 10),
            ValueError,
            "integer",
        ),
        (
            lambda: folds_mod.check_splits([(np.arange(3), np.array([10]))], 10),
            ValueError,
            r"\[0, 10\)",
        ),
        (lambda: folds_mod.check_splits(2.5, 10), TypeError, "splits"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_check_splits_refuses_test_rows_inside_the_training_rows():
    train, test = np.arange(0, 8), np.arange(6, 10)
    with pytest.raises(ValueError, match=r"splits\[0\]: expected test rows outside the training rows, got 2"):
        check_splits([(train, test)], 10)


def test_check_splits_with_a_fold_count_names_splits():
    with pytest.raises(ValueError, match="splits: expected an integer <= 10"):
        check_splits(11, 10)
    assert len(check_splits(5, 10)) == 5


def test_sizes_are_checked_before_allocating():
    with pytest.raises(ValueError, match="n_samples: expected arrays of at most"):
        kfold(10**12, 2)
    with pytest.raises(ValueError, match="n_samples: expected arrays of at most"):
        leave_one_out(10**7)
    with pytest.raises(ValueError, match="n_shards: expected at most len"):
        stratified_shards(np.array([0, 1, 0, 1]), 10**12, seed=0)


@pytest.mark.parametrize("bad", ["no", 2, None])
def test_shuffle_is_a_bool(bad):
    with pytest.raises(TypeError, match="shuffle: expected True or False"):
        kfold(10, 2, shuffle=bad)
