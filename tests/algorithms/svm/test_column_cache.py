"""The LRU cache of kernel columns: sizes, hits and misses, eviction order, extension, swaps."""

import numpy as np

from mlpar.algorithms.svm import column_cache as cc
from mlpar.algorithms.svm import kernel_matrix as kernels


def _problem(n=6, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    return X, (X, 2, 0.5, 3, 0.0), kernels.kernel_matrix(X, gamma=0.5)


def test_columns_in():
    assert cc.columns_in(1000, 200) == 1000  # never more than n
    assert cc.columns_in(1000, 0) == cc.MIN_SLOTS
    assert cc.columns_in(1 << 10, 1) == 128  # 1 MB / (8 bytes * 1024)


def test_hits_misses_and_least_recently_used_eviction():
    X, problem, K = _problem()
    cache = cc.new(len(X), 2)
    state = cache[6]
    np.testing.assert_allclose(cc.column(0, 6, problem, cache), K[0], rtol=1e-12)
    np.testing.assert_allclose(cc.column(1, 6, problem, cache), K[1], rtol=1e-12)
    cc.column(0, 6, problem, cache)  # a hit: 0 is now the most recent, 1 the least
    assert (state[cc.HITS], state[cc.MISSES]) == (1, 2)
    cc.column(2, 6, problem, cache)  # evicts 1
    assert cache[1][1] == -1 and cache[1][0] >= 0 and cache[1][2] >= 0
    assert state[cc.EVALS] == 18


def test_a_short_column_is_extended_not_recomputed():
    X, problem, K = _problem()
    cache = cc.new(len(X), 3)
    cc.column(4, 3, problem, cache)
    col = cc.column(4, 6, problem, cache)
    np.testing.assert_allclose(col, K[4], rtol=1e-12)
    assert cache[6][cc.EVALS] == 6


def test_swap_exchanges_entries_and_cuts_short_columns():
    X, problem, K = _problem()
    cache = cc.new(len(X), 3)
    cc.column(0, 6, problem, cache)
    cc.column(1, 3, problem, cache)
    cc.swap(2, 4, cache)  # as if positions 2 and 4 now hold each other's samples
    cols, slot_of, owner, length = cache[:4]
    full = cols[slot_of[0]]
    assert full[2] == K[0, 4] and full[4] == K[0, 2]
    assert length[slot_of[1]] == 2  # entry 2 of the short column is no longer valid
