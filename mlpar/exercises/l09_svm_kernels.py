"""Checks for lesson 09's exercises: the RBF kernel, one SMO pair update, one Pegasos step, and
the kernel matrix computed by row blocks on a pool of workers.

Each check names the exercise, the case and got-vs-expected, diagnoses the common mistakes by
name (a squared gamma, the distance instead of its square, transposed blocks, a missing 1/k),
and never crashes on a half-written answer (``mlpar.exercises.call`` and ``as_array``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.algorithms.svm import smo
from mlpar.exercises import as_array, call, expect, expect_close, fmt, passed

POOL_WORKERS = 2


def _rbf_mistakes(X, Y, gamma):
    # Plausible wrong kernels, by name: if the answer matches one, say which.
    sq = np.maximum((X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2 * X @ Y.T, 0.0)
    return {
        "the kernel uses the distance ||x - z||; it needs its square": np.exp(-gamma * np.sqrt(sq)),
        "gamma is squared; the kernel is exp(-gamma ||x - z||^2)": np.exp(-gamma**2 * sq),
        "there is an extra 1/2 (the Gaussian's exp(-||x - z||^2 / 2 sigma^2) form); here "
        "gamma multiplies the squared distance directly": np.exp(-gamma * sq / 2),
        "the minus sign is missing in the exponent": np.exp(gamma * sq),
        "the exponential is missing": -gamma * sq,
    }


def _expect_rbf(name, got, X, Y, gamma, what):
    # Shared by the kernel exercises: shape (with a transposition hint), named mistakes, values.
    expected = kernels.kernel_matrix_numpy(X, Y, kernel="rbf", gamma=gamma)
    arr = as_array(name, got, what=what, shape=expected.shape, finite=False)
    if np.allclose(arr, expected, rtol=1e-9, atol=1e-12):
        return
    for mistake, wrong in _rbf_mistakes(X, Y, gamma).items():
        if np.allclose(arr, wrong, rtol=1e-9, atol=1e-12):
            raise AssertionError(f"{name}: {what} is wrong: {mistake}")
    if arr.shape[0] == arr.shape[1] and np.allclose(arr.T, expected, rtol=1e-9, atol=1e-12):
        raise AssertionError(f"{name}: {what} is transposed; rows follow X, columns Y")
    expect_close(name, arr, expected, what=what, rtol=1e-9, atol=1e-12)


def check_rbf_kernel(func) -> None:
    """``func(X, Y, gamma)`` must return ``exp(-gamma ||X[i] - Y[j]||^2)``, shape (n, m)."""
    name = "rbf_kernel"
    rng = np.random.default_rng(9)
    for n, m, d, gamma in ((5, 5, 2, 1.5), (7, 3, 4, 0.25), (1, 6, 3, 3.0)):
        X = rng.normal(size=(n, d))
        Y = rng.normal(size=(m, d))
        got = call(name, func, X, Y, gamma)
        _expect_rbf(name, got, X, Y, gamma, f"K for X {X.shape}, Y {Y.shape}, gamma {gamma}")
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
        case = ", ".join(f"{k}={fmt(v)}" for k, v in zip(
            ("a_i", "a_j", "y_i", "y_j", "G_i", "G_j", "K_ii", "K_jj", "K_ij", "C"), args))
        got = call(name, func, *args)
        pair = as_array(name, got, what=f"the result for ({case})", shape=(2,))
        new_i, new_j = (float(v) for v in pair)
        _, ref_i, ref_j = smo.pair_step(*args)
        if abs(y_i * new_i + y_j * new_j - (y_i * a_i + y_j * a_j)) > 1e-9:
            raise AssertionError(
                f"{name}: y_i a_i + y_j a_j changed for ({case}); the step must move a_i by "
                "+y_i t and a_j by -y_j t with the same t"
            )
        if not (-1e-12 <= new_i <= C + 1e-12 and -1e-12 <= new_j <= C + 1e-12):
            raise AssertionError(
                f"{name}: got ({fmt(new_i)}, {fmt(new_j)}) outside [0, C={fmt(C)}] for "
                f"({case}); clip t so both multipliers stay in the box"
            )
        expect_close(name, [new_i, new_j], [ref_i, ref_j], what=f"(a_i, a_j) for ({case})",
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
        w = rng.normal(size=d) * 0.3
        X = rng.normal(size=(k, d))
        y = rng.choice([-1.0, 1.0], size=k)
        got = call(name, func, w.copy(), X, y, lam, t)
        eta = 1.0 / (lam * t)
        active = y * (X @ w) < 1.0
        step = (y[active, None] * X[active]).sum(axis=0)
        expected = (1 - eta * lam) * w + eta / k * step
        what = f"w after step t={t} with a batch of {k}"
        arr = as_array(name, got, what=what, shape=(d,), finite=False)
        mistakes = {
            "the sum over the batch is not divided by k (missing 1/k)":
                (1 - eta * lam) * w + eta * step,
            "every sample contributes; only those with y w.x < 1 (inside the margin) should":
                (1 - eta * lam) * w + eta / k * (y[:, None] * X).sum(axis=0),
            "w is not shrunk by (1 - eta lam) (the regulariser's gradient is missing)":
                w + eta / k * step,
            "the step size is 1/t; Pegasos uses eta = 1/(lam t)":
                (1 - lam / t) * w + step / (t * k),
        }
        if not np.allclose(arr, expected, rtol=1e-9, atol=1e-12):
            for mistake, wrong in mistakes.items():
                if np.allclose(arr, wrong, rtol=1e-9, atol=1e-12) and not np.allclose(
                        wrong, expected, rtol=1e-9, atol=1e-12):
                    raise AssertionError(f"{name}: {what} is wrong: {mistake}")
        expect_close(name, arr, expected, what=what, rtol=1e-9, atol=1e-12)
    passed(name, "three steps match the Pegasos update")


class RecordingPool:
    """A pool of ``POOL_WORKERS`` threads with ``map(func, items) -> list`` that records every
    task it receives and every block it returns: what the check inspects, never the time."""

    def __init__(self):
        self.items = []
        self.results = []
        self.threads = set()
        self._lock = threading.Lock()

    def map(self, func, items):
        items = list(items)

        def run(item):
            with self._lock:
                self.threads.add(threading.get_ident())
            return func(item)

        with ThreadPoolExecutor(POOL_WORKERS) as pool:
            results = list(pool.map(run, items))
        self.items += items
        self.results += results
        return results


def check_kernel_by_blocks(func) -> None:
    """``func(X, Y, gamma, n_blocks, pool_map)`` -> K, shape (n, m), computed as ``n_blocks``
    tasks on ``pool_map``, each task one contiguous block of rows of X."""
    name = "kernel_by_blocks"
    rng = np.random.default_rng(17)
    for n, m, d, gamma, n_blocks in ((12, 5, 3, 0.5, 3), (10, 10, 2, 2.0, 4), (7, 9, 4, 0.1, 2)):
        X = rng.normal(size=(n, d))
        Y = rng.normal(size=(m, d))
        pool = RecordingPool()
        case = f"X {X.shape}, Y {Y.shape}, gamma {gamma}, {n_blocks} blocks"
        got = call(name, func, X, Y, gamma, n_blocks, pool.map)
        expect(name, len(pool.items) > 0,
               f"pool_map received no task for {case}; the blocks must run as tasks on it")
        expect(name, len(pool.items) == n_blocks,
               f"pool_map received {len(pool.items)} task(s) for {case}, expected {n_blocks} "
               "(one per block of rows)")
        blocks = [as_array(name, r, what=f"block {b} returned by a task ({case})", ndim=2,
                           finite=False) for b, r in enumerate(pool.results)]
        widths = {b.shape[1] for b in blocks}
        heights = [b.shape[0] for b in blocks]
        if widths != {m}:
            hint = " (blocks of columns of K? split the rows of X)" if sum(
                b.shape[1] for b in blocks) == m else ""
            raise AssertionError(f"{name}: the tasks returned blocks of shapes "
                                 f"{[b.shape for b in blocks]} for {case}, expected "
                                 f"{m} columns each{hint}")
        expect(name, sum(heights) == n,
               f"the tasks' blocks have {sum(heights)} rows in all for {case}, expected {n}: "
               "rows missed or computed twice (an off-by-one in the block bounds?)")
        expect(name, max(heights) - min(heights) <= 1,
               f"blocks of {heights} rows for {case}; split the rows evenly "
               "(np.array_split does)")
        _expect_rbf(name, got, X, Y, gamma, f"K for {case}")
    passed(name, f"three cases, each as its blocks of rows on {POOL_WORKERS} threads")
