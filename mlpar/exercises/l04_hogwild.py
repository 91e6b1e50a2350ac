"""Checks for lesson 04: the sparsity measures Δ and ρ, one sparse SGD update, and the locked
and lock-free epochs on threads (observed through a counting lock and a recording update)."""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from mlpar.algorithms.sgd.hogwild import run_sgd
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem, sparsity
from mlpar.algorithms.sgd.sparse_logistic import logistic_loss
from mlpar.exercises import as_array, call, expect, expect_close, fmt, passed


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
    passed(name, "matches mlpar.algorithms.sgd.sparse_data.sparsity on three problems")


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
    passed(name, "matches mlpar.algorithms.sgd.sparse_data.sparsity on three problems")


def check_sgd_step(sgd_step) -> None:
    """``sgd_step(w, cols, vals, label, step)`` must apply one logistic SGD update in place."""
    name = "Exercise 3 (one sparse SGD update)"
    problem = make_sparse_problem(300, 40, 0.1, seed=14)
    # The reference: one serial epoch of mlpar.algorithms.sgd.hogwild, whose order is seed 5's permutation.
    reference = run_sgd(problem, "serial", step=0.7, epochs=1, seed=5).weights
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


# --- Exercise 4: the locked and the lock-free epoch, on threads ----------------------------

EPOCH = "Exercise 4 (locked and lock-free epochs)"
# A short sleep inside each update releases the GIL, so the threads really interleave (and a
# pool cannot finish one chunk before the next one is handed out).
UPDATE_PAUSE = 1e-4
LOCK_TIMEOUT = 2.0  # seconds a thread may wait for the lock before it counts as never released


class CountingLock:
    """A lock for grading: counts acquires and releases, knows its owner, never hangs.

    Used like ``threading.Lock`` (``with lock:`` or ``acquire()``/``release()``). A thread that
    waits longer than ``LOCK_TIMEOUT`` gets a RuntimeError instead of waiting forever, so a
    lock that is never released is reported instead of freezing the notebook.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._books = threading.Lock()
        self.owner = None
        self.acquires = self.releases = self.timeouts = 0

    def acquire(self, blocking=True, timeout=-1):
        if not self._lock.acquire(timeout=LOCK_TIMEOUT):
            with self._books:
                self.timeouts += 1
            raise RuntimeError("waited too long for the lock: another thread never released it")
        self.owner = threading.get_ident()
        with self._books:
            self.acquires += 1
        return True

    def release(self):
        if self.owner != threading.get_ident():
            raise RuntimeError("released a lock this thread does not hold")
        self.owner = None
        with self._books:
            self.releases += 1
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _python_update(problem, step):
    """``update(w, i)``: one logistic SGD update of sample ``i`` on ``w``, in place (numpy)."""

    def update(w, i):
        a, b = problem.indptr[i], problem.indptr[i + 1]
        cols, vals, label = problem.indices[a:b], problem.data[a:b], problem.y[i]
        z = label * float(vals @ w[cols])
        sigma = math.exp(-z) / (1 + math.exp(-z)) if z >= 0 else 1 / (1 + math.exp(z))
        w[cols] += step * label * sigma * vals

    return update


def _recorded(update, shared, lock):
    calls = []
    books = threading.Lock()

    def recording_update(w, i):
        held = lock is not None and lock.owner == threading.get_ident()
        same = isinstance(w, np.ndarray) and np.shares_memory(w, shared)
        with books:
            calls.append((threading.get_ident(), int(i), held, same))
        time.sleep(UPDATE_PAUSE)
        update(w, i)

    return recording_update, calls


def _run_epoch(func, problem, order, n_threads, lock, case):
    w = np.zeros(problem.n_features)
    update, calls = _recorded(_python_update(problem, 0.7), w, lock)
    before = set(threading.enumerate())
    call(EPOCH, func, w, order.copy(), update, n_threads, lock)
    done = len(calls)
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for t in left:
        t.join(LOCK_TIMEOUT)
    expect(EPOCH, not left and done == len(calls),
           f"{case}: the function returned while its threads were still updating; join() "
           "every thread before returning")
    return w, calls


def _check_structure(calls, order, n_threads, lock, case):
    n = len(order)
    if lock is not None:
        expect(EPOCH, lock.timeouts == 0 and lock.acquires == lock.releases,
               f"{case}: the lock was acquired {lock.acquires} times but released "
               f"{lock.releases} times; a lock that is never released stops every other thread "
               "(use `with lock:`)")
    expect(EPOCH, len(calls) > 0, f"{case}: update was never called")
    idents = {c[0] for c in calls}
    expect(EPOCH, threading.get_ident() not in idents,
           f"{case}: updates ran on the calling thread; start {n_threads} threading.Thread "
           "workers and let them call update")
    # A pool may hand two chunks to one of its threads, so any 2..n_threads threads will do.
    expect(EPOCH, min(2, n_threads) <= len(idents) <= n_threads,
           f"{case}: updates ran on {len(idents)} thread(s), expected {n_threads}")
    counts = np.bincount([c[1] for c in calls], minlength=int(order.max()) + 1)
    wanted = np.bincount(order, minlength=int(order.max()) + 1)
    if not np.array_equal(counts[: wanted.size], wanted) or counts.size > wanted.size:
        bad = int(np.flatnonzero(counts[: wanted.size] != wanted)[0]) if not np.array_equal(
            counts[: wanted.size], wanted) else wanted.size
        got = int(counts[bad]) if bad < counts.size else 0
        raise AssertionError(
            f"{EPOCH}: {case}: sample {bad} was updated {got} time(s), expected "
            f"{int(wanted[bad]) if bad < wanted.size else 0}: every sample of the order exactly "
            f"once ({len(calls)} updates made for {n} samples; check the chunk bounds)")
    expect(EPOCH, all(c[3] for c in calls),
           f"{case}: update received a copy of w, not the shared array; the threads would never "
           "see each other's writes (pass w itself)")
    if lock is not None:
        unheld = sum(not c[2] for c in calls)
        expect(EPOCH, unheld == 0,
               f"{case}: {unheld} of {len(calls)} updates ran without holding the lock")
        expect(EPOCH, lock.acquires == len(calls),
               f"{case}: the lock was taken {lock.acquires} time(s) for {len(calls)} updates, "
               "expected once per update; holding it around a whole chunk lets only one "
               "thread work at a time")


def check_epochs(epoch) -> None:
    """``epoch(w, order, update, n_threads, lock)``: one epoch of SGD on ``n_threads`` threads.

    Split ``order`` into ``n_threads`` chunks; each thread calls ``update(w, i)`` for every
    sample ``i`` of its chunk, on the shared ``w``. If ``lock`` is not None, each update runs
    while holding it (the locked variant); if it is None, without any lock (Hogwild).
    Checked: the threads, each sample once, the shared ``w``, the lock taken and released once
    per update (a grading lock counts them), the threads joined, and the result.
    """
    problem = make_sparse_problem(301, 40, 0.1, seed=15)  # 301: no thread count divides it
    order = np.random.default_rng(6).permutation(problem.n_samples)
    reference = np.zeros(problem.n_features)
    serial_update = _python_update(problem, 0.7)
    for i in order:
        serial_update(reference, i)
    w, calls = _run_epoch(epoch, problem, order, 1, None, "1 thread, no lock")
    _check_structure(calls, order, 1, None, "1 thread, no lock")
    expect_close(EPOCH, w, reference, what="1 thread, no lock: w after the epoch", rtol=1e-12)
    best = logistic_loss(problem, reference)
    for n_threads, lock in ((2, CountingLock()), (2, None), (3, CountingLock())):
        case = f"{n_threads} threads, {'with a lock' if lock is not None else 'lock-free'}"
        w, calls = _run_epoch(epoch, problem, order, n_threads, lock, case)
        _check_structure(calls, order, n_threads, lock, case)
        loss = logistic_loss(problem, as_array(EPOCH, w, what=f"{case}: w", ndim=1))
        expect(EPOCH, abs(loss - best) <= 0.01 * best,
               f"{case}: loss after the epoch is {fmt(loss)}, expected within 1% of the serial "
               f"epoch's {fmt(best)}")
    passed(EPOCH, "threads share w, each sample once, lock taken and released per update, "
                  "threads joined, serial result on 1 thread")
