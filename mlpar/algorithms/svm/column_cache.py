"""A least-recently-used cache of kernel columns, sized in megabytes (libsvm's kernel cache).

SMO needs column ``K[:, i]`` for every pair it selects, and the same few hundred columns again
and again. Computing one costs ``n`` kernel evaluations; keeping all of them costs ``n * n * 8``
bytes. This cache keeps as many as ``cache_mb`` megabytes hold and, when full, evicts the column
used longest ago. It is a tuple of arrays, so compiled code can pass it around:
``(cols, slot_of, owner, length, prev, nxt, state)``: ``cols[s, :length[s]]`` holds column
``owner[s]`` on positions ``0 .. length[s]-1``; ``slot_of[c]`` is column c's slot or -1;
``prev``/``nxt`` link the slots from most to least recently used; ``state`` holds the list's
ends and the counters (kernel evaluations, hits, misses) the lesson reports.

Positions, not samples: the solver (``smo_fast``) keeps its active multipliers first, so a column
is computed only on the first ``need`` positions and extended later if more are needed; when
the solver exchanges two positions, ``swap`` exchanges their entries in every cached column.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from mlpar.algorithms.svm import kernel_matrix as kernels

MIN_SLOTS = 2  # columns i and j are needed at the same time
BYTES_PER_MB = 1 << 20
# state[...]: the LRU list's ends, slots in use, counters.
HEAD, TAIL, USED, EVALS, HITS, MISSES, SCANNED, BAR = range(8)


def columns_in(n: int, cache_mb: float) -> int:
    """How many kernel columns of ``n`` float64 entries ``cache_mb`` megabytes hold (>= 2)."""
    return int(max(MIN_SLOTS, min(n, math.floor(cache_mb * BYTES_PER_MB / (8 * n)))))


@numba.njit(cache=True, nogil=True)
def new(n, n_slots):
    """An empty cache of ``n_slots`` columns of length ``n``."""
    state = np.zeros(8, np.int64)
    state[HEAD] = -1
    state[TAIL] = -1
    return (np.empty((n_slots, n)), np.full(n, -1, np.int64), np.full(n_slots, -1, np.int64),
            np.zeros(n_slots, np.int64), np.full(n_slots, -1, np.int64),
            np.full(n_slots, -1, np.int64), state)


@numba.njit(cache=True, nogil=True)
def touch(s, prev, nxt, state):
    # Move slot s to the front of the LRU list (most recently used).
    if state[HEAD] == s:
        return
    p, q = prev[s], nxt[s]
    if p >= 0:
        nxt[p] = q
    if q >= 0:
        prev[q] = p
    if state[TAIL] == s:
        state[TAIL] = p
    prev[s] = -1
    nxt[s] = state[HEAD]
    if state[HEAD] >= 0:
        prev[state[HEAD]] = s
    state[HEAD] = s
    if state[TAIL] < 0:
        state[TAIL] = s


@numba.njit(cache=True, nogil=True)
def fill(c, need, problem, cache):
    # A miss: find c a slot (evicting the least recently used column) and compute the entries
    # it lacks, positions length[s] .. need-1 (a column computed on a smaller active set is
    # extended, not recomputed).
    Xp, code, gamma, degree, coef0 = problem
    cols, slot_of, owner, length, prev, nxt, state = cache
    state[MISSES] += 1
    s = slot_of[c]
    if s < 0:
        if state[USED] < cols.shape[0]:
            s = state[USED]
            state[USED] += 1
        else:
            s = state[TAIL]
            slot_of[owner[s]] = -1
        slot_of[c] = s
        owner[s] = c
        length[s] = 0
    col = cols[s]
    for k in range(length[s], need):
        col[k] = kernels.kernel_entry(Xp, c, Xp, k, code, gamma, degree, coef0)
    state[EVALS] += need - length[s]
    length[s] = need
    touch(s, prev, nxt, state)
    return s


@numba.njit(cache=True, nogil=True)
def column(c, need, problem, cache):
    # Column c of K on positions 0 .. need-1: the cached slot (a hit) or a freshly filled one.
    cols, slot_of, owner, length, prev, nxt, state = cache
    s = slot_of[c]
    if s >= 0 and length[s] >= need:
        state[HITS] += 1
        touch(s, prev, nxt, state)
        return cols[s]
    return cols[fill(c, need, problem, cache)]


@numba.njit(cache=True, nogil=True)
def swap(p, q, cache):
    """Positions p < q were exchanged: exchange their columns' owners and their entries."""
    cols, slot_of, owner, length, prev, nxt, state = cache
    sp, sq = slot_of[p], slot_of[q]
    slot_of[p], slot_of[q] = sq, sp
    if sp >= 0:
        owner[sp] = q
    if sq >= 0:
        owner[sq] = p
    for s in range(state[USED]):
        if length[s] > q:
            cols[s, p], cols[s, q] = cols[s, q], cols[s, p]
        elif length[s] > p:  # entry p would now belong to another sample: cut the column there
            length[s] = p
