"""SMO with libsvm's engineering: shrinking, a kernel-column cache sized in megabytes, one
compiled loop.

``smo.fit_smo`` is the readable solver: every iteration scans all ``n`` multipliers three times
(pick ``i``, pick ``j``, update the gradient) and it keeps every kernel row it ever computed
(``n * n * 8`` bytes at worst). On hard problems (large C, narrow RBF) it needs hundreds of
thousands of iterations, and those scans are where the time goes. ``fit_smo_fast`` solves the
same dual problem with the same working-set rule and stopping rule, so it reaches the same
solution (up to the tolerance), with three changes that libsvm makes (Chang & Lin 2011):

* **Shrinking** (Joachims 1999; libsvm's rule, Fan, Chen & Lin 2005): a multiplier stuck at a
  bound (0 or C) whose gradient says it would stay there is dropped from the *active set*;
  the scans and the gradient update then touch only the active multipliers, often a small part
  of the data. Every ``SHRINK_EVERY`` iterations the active set is re-examined. Because a
  dropped multiplier's gradient is no longer updated, it is rebuilt (from ``G_bar``, the part
  of the gradient due to multipliers at C, kept up to date as libsvm does) when the gap first
  falls under ``UNSHRINK_FACTOR * tol`` and again at the end, and the stopping rule is checked
  once more on *all* multipliers: the answer is the unshrunk problem's.
* **A least-recently-used cache of kernel columns** of ``cache_mb`` megabytes (libsvm's
  ``cache_size``; ``SVC`` defaults to 200): a column is computed the first time a pair needs
  it, only on the active set, and kept until the cache is full; then the column used longest
  ago makes room. A tiny cache gives the same solution, only with more kernel evaluations.
* **Cheaper passes**: the loop works with ``F = -y * G`` (``G`` the gradient), whose update
  ``F_k -= t (K_ik - K_jk)`` needs no labels and no branch, so the compiler turns it into vector
  instructions; membership of ``I_up`` and ``I_low`` is kept as one byte per multiplier. (Finding
  the next ``i`` inside that same loop saves a pass but loses the vector instructions: slower.)

The loop is sequential like the readable one: each step needs the gradient the previous step
left. What it saves is work, not waiting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from mlpar.algorithms.svm import column_cache, smo
from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.core import validation

DEFAULT_CACHE_MB = 200.0  # scikit-learn's SVC(cache_size=200), in megabytes
SHRINK_EVERY = 1000  # libsvm re-examines the active set every min(n, 1000) iterations
UNSHRINK_FACTOR = 10.0  # libsvm rebuilds the full gradient once the gap is below 10 tol

_AT_ZERO, _FREE, _AT_C = 0, 1, 2  # a multiplier's status

# The solver works in *positions*: like libsvm, it swaps a dropped multiplier behind the active
# ones, so the active set is always positions 0 .. n_active-1 and every scan reads contiguous
# memory, cached kernel columns included. ``orig[p]`` is the sample at position p.
# A problem is the tuple (Xp, code, gamma, degree, coef0) with Xp the rows in position order;
# the cache of kernel columns is mlpar.algorithms.svm.column_cache's.


_pair_step = numba.njit(cache=True, nogil=True)(smo.pair_step)


@numba.njit(cache=True, nogil=True)
def _set_status(k, a, C, y, status, up, low):
    # status, and membership of I_up (y_k a_k may grow) and I_low (it may shrink), kept as flags
    # so the scans test one byte instead of a label and a bound.
    st = _AT_C if a >= C else (_AT_ZERO if a <= 0.0 else _FREE)
    status[k] = st
    up[k] = st != _AT_C if y[k] > 0 else st != _AT_ZERO
    low[k] = st != _AT_ZERO if y[k] > 0 else st != _AT_C


@numba.njit(cache=True, nogil=True)
def _argmax_up(F, up, n_active):
    # The most violating position of I_up (the last one on ties, as fit_smo).
    f_max = -np.inf
    best = -1
    for k in range(n_active):
        if up[k] and F[k] >= f_max:
            f_max = F[k]
            best = k
    return best


@numba.njit(cache=True, nogil=True)
def _swap(p, q, sv, problem, cache):
    # Exchange positions p < q everywhere: solver state, rows, cached columns' entries.
    alpha, F, y, diag, F_bar, status, up, low, orig = sv
    for a in (alpha, F, y, diag, F_bar):
        a[p], a[q] = a[q], a[p]
    status[p], status[q] = status[q], status[p]
    up[p], up[q] = up[q], up[p]
    low[p], low[q] = low[q], low[p]
    orig[p], orig[q] = orig[q], orig[p]
    Xp = problem[0]
    for d in range(Xp.shape[1]):
        Xp[p, d], Xp[q, d] = Xp[q, d], Xp[p, d]
    column_cache.swap(p, q, cache)


@numba.njit(cache=True, nogil=True)
def _track_at_c(k, C, sv, problem, cache):
    # F_bar_q = -C sum_{a_j = C} y_j K_jq: add or remove k's share when it reaches or leaves C.
    alpha, F, y, diag, F_bar, status, up, low, orig = sv
    n = F.shape[0]
    cache[6][column_cache.BAR] += 1
    Kk = column_cache.column(k, n, problem, cache)
    sign = -C * y[k] if status[k] == _AT_C else C * y[k]
    for q in range(n):
        F_bar[q] += sign * Kk[q]


@numba.njit(cache=True, nogil=True)
def _unshrink(n_active, sv, problem, cache):
    # Rebuild F on the dropped positions: F_k = F_bar_k + y_k - sum_{free j} a_j y_j K_jk
    # (free multipliers are never dropped), libsvm's two ways, whichever computes fewer entries.
    alpha, F, y, diag, F_bar, status, up, low, orig = sv
    n = F.shape[0]
    n_free = 0
    for q in range(n_active):
        if status[q] == _FREE:
            n_free += 1
    for k in range(n_active, n):
        F[k] = F_bar[k] + y[k]
    if n_free * n > 2 * n_active * (n - n_active):
        for k in range(n_active, n):  # one column per dropped k, on the active positions
            Kk = column_cache.column(k, n_active, problem, cache)
            total = 0.0
            for q in range(n_active):
                if status[q] == _FREE:
                    total += alpha[q] * y[q] * Kk[q]
            F[k] -= total
    else:
        for q in range(n_active):  # one full column per free j
            if status[q] == _FREE:
                Kq = column_cache.column(q, n, problem, cache)
                w = alpha[q] * y[q]
                for k in range(n_active, n):
                    F[k] -= w * Kq[k]
    return n


@numba.njit(cache=True, nogil=True)
def _droppable(k, g_up, g_low, F, y, status):
    # libsvm's be_shrunk: a bounded multiplier that cannot be in a violating pair with the
    # current extremes (g_up = max_up F, g_low = -min_low F).
    st = status[k]
    if st == _FREE:
        return False
    if (st == _AT_C) == (y[k] > 0):  # only in I_low
        return F[k] > g_up
    return -F[k] > g_low  # only in I_up


@numba.njit(cache=True, nogil=True)
def _shrink(n_active, unshrunk, tol, sv, problem, cache):
    alpha, F, y, diag, F_bar, status, up, low, orig = sv
    g_up = -np.inf
    g_low = -np.inf
    for k in range(n_active):
        if up[k]:
            g_up = max(g_up, F[k])
        if low[k]:
            g_low = max(g_low, -F[k])
    if not unshrunk and g_up + g_low <= UNSHRINK_FACTOR * tol:
        unshrunk = True
        n_active = _unshrink(n_active, sv, problem, cache)
    k = 0
    while k < n_active:  # move each droppable one behind the active ones
        if _droppable(k, g_up, g_low, F, y, status):
            n_active -= 1
            while n_active > k:
                if not _droppable(n_active, g_up, g_low, F, y, status):
                    _swap(k, n_active, sv, problem, cache)
                    break
                n_active -= 1
        k += 1
    return n_active, unshrunk


@numba.njit(cache=True, nogil=True)
def _solve(problem, diag, y, C, tol, max_iter, shrinking, n_slots, alpha, F):
    # alpha, F (= -y G), diag, y and problem[0] are permuted in place (orig, returned, says
    # how); returns (orig, iterations, gap, counters, shrink passes, smallest active set).
    n = F.shape[0]
    cache = column_cache.new(n, n_slots)
    state = cache[6]
    status = np.zeros(n, np.int8)
    up = np.empty(n, np.bool_)
    low = np.empty(n, np.bool_)
    for k in range(n):
        _set_status(k, alpha[k], C, y, status, up, low)
    F_bar = np.zeros(n)  # the part of F due to multipliers at C
    orig = np.arange(n)
    sv = (alpha, F, y, diag, F_bar, status, up, low, orig)
    n_active = n
    unshrunk = False
    counter = min(n, SHRINK_EVERY)
    shrinks = 0
    smallest = n
    it = 0
    gap = np.inf
    i = _argmax_up(F, up, n_active)
    while True:
        j = -1
        f_min = np.inf
        if i >= 0:
            Ki = column_cache.column(i, n_active, problem, cache)
            best = np.inf
            f_i = F[i]
            d_i = diag[i]
            for k in range(n_active):
                if low[k]:
                    v = F[k]
                    if v < f_min:
                        f_min = v
                    b = f_i - v
                    if b > 0.0:
                        a = d_i + diag[k] - 2.0 * Ki[k]
                        if a <= 0.0:
                            a = smo.TAU
                        score = -(b * b) / a
                        if score <= best:
                            best = score
                            j = k
            gap = f_i - f_min
        if i < 0 or gap < tol or j < 0:
            if n_active < n:  # converged on the active set: check again on all of it
                n_active = _unshrink(n_active, sv, problem, cache)
                counter = 1
                i = _argmax_up(F, up, n_active)
                continue
            break
        if it >= max_iter:
            break
        Kj = column_cache.column(j, n_active, problem, cache)
        Ki = column_cache.column(i, n_active, problem, cache)  # a hit: i is the most recent but one
        old_i, old_j = status[i], status[j]
        t, ai, aj = _pair_step(alpha[i], alpha[j], y[i], y[j], -y[i] * F[i], -y[j] * F[j],
                               diag[i], diag[j], Ki[j], C)
        alpha[i] = ai
        alpha[j] = aj
        _set_status(i, ai, C, y, status, up, low)
        _set_status(j, aj, C, y, status, up, low)
        # Update F on the active set: a branch-free loop the compiler vectorises (fusing the
        # search for the next i into it would save a pass but lose the vector instructions).
        for k in range(n_active):
            F[k] -= t * (Ki[k] - Kj[k])
        # Keep F_bar exact: full columns of the multipliers that reached or left C.
        if shrinking and (old_i == _AT_C) != (status[i] == _AT_C):
            _track_at_c(i, C, sv, problem, cache)
        if shrinking and (old_j == _AT_C) != (status[j] == _AT_C):
            _track_at_c(j, C, sv, problem, cache)
        i = _argmax_up(F, up, n_active)
        it += 1
        state[column_cache.SCANNED] += n_active
        if shrinking:
            counter -= 1
            if counter == 0:
                counter = min(n, SHRINK_EVERY)
                shrinks += 1
                n_active, unshrunk = _shrink(n_active, unshrunk, tol, sv, problem, cache)
                smallest = min(smallest, n_active)
                i = _argmax_up(F, up, n_active)
    if n_active < n:  # stopped by max_iter while shrunk: F of the dropped ones is stale
        _unshrink(n_active, sv, problem, cache)
    return orig, it, gap, state, shrinks, smallest


@dataclass(frozen=True)
class FastSMOModel(smo.SVMModel):
    """``smo.SVMModel`` plus what the solver did: the counts the lesson compares.

    ``kernel_evaluations``: kernel entries computed (a cache miss costs a column on the active
    set, or all ``n`` entries for the at-C bookkeeping); ``smallest_active_set``: the fewest
    multipliers the loop scanned after a shrink (``n`` without shrinking).
    """

    shrinking: bool = True
    cache_mb: float = DEFAULT_CACHE_MB
    cache_columns: int = 0
    kernel_evaluations: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    shrink_passes: int = 0
    smallest_active_set: int = 0
    mean_active_set: float = 0.0
    at_c_updates: int = 0


def fit_smo_fast(
    X: np.ndarray,
    y,
    *,
    shrinking: bool = True,
    cache_mb: float = DEFAULT_CACHE_MB,
    max_iter: int | None = None,
    **svm_params,
) -> FastSMOModel:
    """Train the same binary kernel SVM as ``smo.fit_smo``, with shrinking and a column cache.

    Parameters
    ----------
    X : float64 array, shape (n, d); y : labels, shape (n,), exactly two distinct values.
    shrinking : drop bounded multipliers from the scans (libsvm's ``shrinking``, on by default).
    cache_mb : megabytes of kernel columns kept (libsvm's ``cache_size``); any size gives the
        same solution, at least two columns are always kept.
    max_iter : cap on pair updates; default ``max(10_000_000, 100 n)`` as libsvm.
    **svm_params : ``C``, ``kernel``, ``gamma``, ``degree``, ``coef0``, ``tol``, as ``fit_smo``
        (second-order working-set selection, libsvm's rule, always).
    """
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    validation.finite_data("X", X)  # bad data named as such, before the solver starts
    validation.same_length("X", X, "y", y)
    if np.asarray(y).dtype.kind == "f":
        validation.finite_data("y", np.asarray(y))
    y_signed, classes = smo.signed_labels(y)
    if not isinstance(shrinking, bool):
        raise TypeError(f"shrinking: expected True or False, got {type(shrinking).__name__}")
    cache_mb = validation.non_negative("cache_mb", cache_mb)
    unknown = sorted(set(svm_params) - {"C", "kernel", "gamma", "degree", "coef0", "tol"})
    if unknown:
        raise TypeError(f"svm_params: unexpected keyword(s) {unknown}; expected C, kernel, "
                        "gamma, degree, coef0, tol")
    params = smo.svm_params(X, **svm_params)
    code, gamma, degree, coef0 = kernels.check_kernel_args(
        params["kernel"], params["gamma"], params["degree"], params["coef0"])
    n = X.shape[0]
    if max_iter is None:
        max_iter = max(10_000_000, 100 * n)
    max_iter = validation.positive_int("max_iter", max_iter)

    X = np.ascontiguousarray(X)
    diag = np.empty(n)
    kernels._kernel_diagonal(X, code, gamma, degree, coef0, diag)
    alpha = np.zeros(n)
    y_pos = y_signed.copy()  # the solver permutes these (positions); orig maps them back
    F = y_signed.copy()  # F = -y G, and G = -1 at a = 0
    n_slots = column_cache.columns_in(n, cache_mb)
    orig, n_iter, gap, state, shrinks, smallest = _solve(
        (X.copy(), code, gamma, degree, coef0), diag, y_pos, params["C"], params["tol"],
        max_iter, shrinking, n_slots, alpha, F)
    alpha[orig], F[orig] = alpha.copy(), F.copy()
    fields = smo.solution_fields(X, y_signed, classes, alpha, -y_signed * F, params,
                                 n_iter=n_iter, gap=gap, max_iter=max_iter)
    return FastSMOModel(**fields, shrinking=shrinking, cache_mb=cache_mb, cache_columns=n_slots,
                        kernel_evaluations=int(state[column_cache.EVALS]),
                        cache_hits=int(state[column_cache.HITS]),
                        cache_misses=int(state[column_cache.MISSES]), shrink_passes=int(shrinks),
                        smallest_active_set=int(smallest),
                        mean_active_set=float(state[column_cache.SCANNED]) / max(1, n_iter),
                        at_c_updates=int(state[column_cache.BAR]))
