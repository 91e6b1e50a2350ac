"""Checks for lesson 04: the sparsity measures Δ and ρ, predicting the stale-read rate from the
lesson's model (then measuring it), and the locked and lock-free epochs on threads (observed
through a counting lock and a recording update)."""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from mlpar.algorithms.sgd.conflicts import MIN_CONCURRENT_WRITES, ConflictCount, stale_rate_model
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem, sparsity_from_csr
from mlpar.algorithms.sgd.sparse_logistic import logistic_loss
from mlpar.exercises import (
    as_array,
    call,
    call_refusing,
    case_seed,
    expect,
    expect_close,
    fmt,
    number,
    passed,
    refuse_unless_close,
)


def _pattern(rows, n_features):
    """CSR (indptr, indices) of a list of column lists; an empty list is an empty row."""
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    indices = np.array([c for r in rows for c in r], dtype=np.int64)
    return indptr, indices, n_features


def _with_empty_rows(n_samples, n_features, density, seed):
    """A random problem's pattern with about a third of its rows emptied (no features)."""
    p = make_sparse_problem(n_samples, n_features, density, seed=seed)
    keep = np.random.default_rng(seed).random(n_samples) >= 1 / 3
    keep[0] = True  # at least one edge
    rows = [p.indices[p.indptr[i]:p.indptr[i + 1]].tolist() if keep[i] else []
            for i in range(n_samples)]
    return _pattern(rows, n_features)


def _patterns():
    """The cases Δ and ρ turn on: a single row, empty rows, a column in every row, rows
    sharing several columns (counted once), a lonely row (max ≠ mean), and random ones."""
    yield "a single row", _pattern([[0, 2, 5]], 6)
    yield "empty rows and a column every row has", _pattern(
        [[0, 1], [], [0, 3], [], [0, 2, 4], []], 5)
    yield "rows sharing two columns, a lonely row, an empty row", _pattern(
        [[0, 1], [0, 1], [2], [], [2, 3], [5]], 7)
    yield "a random sparse pattern with empty rows", _with_empty_rows(
        40, 30, 0.05, case_seed(11))
    yield "a random denser pattern with empty rows", _with_empty_rows(
        30, 12, 0.3, case_seed(12))


def _meets(indptr, indices, n_features):
    """Per non-empty row: rows met (itself included), and met counting once per shared column."""
    sizes = np.diff(indptr)
    rows = [set(indices[indptr[i]:indptr[i + 1]].tolist()) for i in range(sizes.size)]
    edges = [r for r in rows if r]
    degree = np.bincount(indices, minlength=n_features)
    meet = np.array([sum(1 for s in edges if r & s) for r in edges])
    per_column = np.array([sum(int(degree[c]) for c in r) for r in edges])
    return meet, per_column, len(edges), sizes.size


def _diagnose(name, case, got, expected, misreadings, hint):
    """Fail with what the answer looks like, if it matches a known misreading."""
    refuse_unless_close(name, f"for {case}", got, expected, misreadings, hint,
                        rel_tol=1e-12, abs_tol=1e-15, show_type=True)


def check_delta(delta) -> None:
    """``delta(indptr, indices, n_features)`` must return Δ = max column degree / |E|, where
    E is the set of non-empty rows."""
    name = "Exercise 1 (Δ, the busiest coordinate)"
    for case, (indptr, indices, n_features) in _patterns():
        degree = np.bincount(indices, minlength=n_features)
        sizes = np.diff(indptr)
        edges, rows = int(np.count_nonzero(sizes)), sizes.size
        expected = sparsity_from_csr(indptr, indices, n_features).delta
        misreadings = [
            (degree.max() / rows, f"You divided by all {rows} rows; the empty ones "
                                  f"({rows - edges}) are not edges: divide by the {edges} "
                                  "non-empty rows."),
            (float(degree.max()), f"That is the largest column count itself; divide it by the "
                                  f"number of non-empty rows ({edges})."),
            (degree.max() / n_features, "You divided by the number of features; Δ is a share "
                                        "of the updates, so divide by the non-empty rows."),
            (degree.mean() / edges, "That is the mean column count; Δ takes the largest."),
            (sizes.max() / edges, "You counted nonzeros per row (that is Ω); Δ counts the rows "
                                  "that contain each column."),
        ]
        got = call(name, delta, indptr.copy(), indices.copy(), n_features)
        _diagnose(name, case, got, expected, misreadings,
                  "Count, for every column, how many rows contain it; take the largest count "
                  "and divide by the number of non-empty rows.")
    passed(name, "a single row, empty rows, a column in every row and random patterns")


def check_rho(rho) -> None:
    """``rho(indptr, indices)`` must return ρ = max over non-empty rows of the non-empty rows
    sharing a column with it (itself included) / |E|."""
    name = "Exercise 2 (ρ, the most crowded update)"
    for case, (indptr, indices, n_features) in _patterns():
        meet, per_column, edges, rows = _meets(indptr, indices, n_features)
        expected = sparsity_from_csr(indptr, indices, n_features).rho
        misreadings = [
            ((meet.max() - 1) / edges, "You are one row short: a row shares its columns with "
                                       "itself, so it counts itself."),
            (meet.max() / rows, f"You divided by all {rows} rows; the empty ones "
                                f"({rows - edges}) are not edges: divide by the {edges} "
                                "non-empty rows."),
            (float(meet.max()), f"That is the largest count itself; divide it by the number of "
                                f"non-empty rows ({edges})."),
            (meet.mean() / edges, "That is the mean over the rows; ρ takes the largest."),
            (per_column.max() / edges, "You counted a row once for every column it shares; "
                                       "count each row that meets it once."),
            (sparsity_from_csr(indptr, indices, n_features).delta,
             "That is Δ (rows per column); ρ counts the rows that share any column with one row."),
        ]
        got = call(name, rho, indptr.copy(), indices.copy())
        _diagnose(name, case, got, expected, misreadings,
                  "For each non-empty row, count the non-empty rows (itself included) that share "
                  "at least one column with it; take the largest count and divide by the "
                  "number of non-empty rows.")
    passed(name, "a single row, empty rows, rows sharing several columns and random patterns")


# --- Exercise 3: predict the stale-read rate from the model, then measure it ----------------

PREDICT = "Exercise 3 (predict the stale-read rate)"
_PREDICT_CASES = [(0.01, 2), (0.3, 2), (1.0, 2), (0.05, 4), (0.2, 8), (0.5, 1), (0.02, 64)]


def check_stale_prediction(predict, measured: ConflictCount | None = None) -> None:
    """``predict(density, threads)`` must return the lesson's model ``1 − (1 − d)^(P − 1)``.

    Graded against the model exactly, on cases of several thread counts. With ``measured`` (a
    ``ConflictCount`` from ``count_conflicts``) it then reports how far the measured rate per
    concurrent write fell from the prediction at the measured problem's actual density, and
    the likely reasons; the measurement never decides the grade.
    """
    rng = np.random.default_rng(case_seed(13))  # one more case, new in every graded run
    extra = (round(float(rng.uniform(0.01, 0.5)), 3), int(rng.integers(3, 33)))
    for density, threads in [*_PREDICT_CASES, extra]:
        expected = stale_rate_model(density, threads)
        case = f"density {density:g} on {threads} thread{'s' if threads > 1 else ''}"
        others = threads - 1
        misreadings = [
            (density, "That ignores the thread count: with P threads, P − 1 others can write "
                      "w_j while this update is in flight."),
            (1 - (1 - density) ** threads, "You counted this update's own thread among the "
                                           "writers: only the other P − 1 threads can make its "
                                           "read stale."),
            (others * density, "(P − 1)·d adds the chances as if they could not overlap; it "
                               "even exceeds 1. The read is stale if *at least one* other "
                               "thread wrote w_j: 1 minus the chance that none did."),
            (threads * density, "P·d counts this thread too and adds the chances; the read is "
                                "stale if at least one of the P − 1 others wrote w_j."),
            (density ** others, "That is the chance that *every* other thread wrote w_j; one "
                                "is enough."),
            (1 - density ** others, "1 − d^(P−1) is 'not all of them wrote'; you need 1 − "
                                    "(chance that none wrote) = 1 − (1 − d)^(P−1)."),
        ]
        got = call_refusing(PREDICT, predict, {stale_rate_model: "the library's model"},
                            density, threads,
                            why="Write the model from its two ingredients: each other thread "
                                "writes w_j with probability d while yours is in flight.")
        _diagnose(PREDICT, case, got, expected, misreadings,
                  "Each of the other P − 1 threads makes about one update while yours is in "
                  "flight and writes w_j with probability d; the read is stale if at least one "
                  "of them did.")
    passed(PREDICT, f"{len(_PREDICT_CASES) + 1} densities and thread counts match the model")
    if measured is None:
        return
    if not isinstance(measured, ConflictCount):
        raise TypeError(f"measured: expected the ConflictCount that conflicts.count_conflicts "
                        f"returns, got {type(measured).__name__}")
    print(compare_with_measurement(predict, measured))


def compare_with_measurement(predict, measured: ConflictCount) -> str:
    """How far a measured stale-read rate fell from ``predict`` at its actual density, and why."""
    if not isinstance(measured, ConflictCount):
        raise TypeError(f"measured: expected a ConflictCount, got {type(measured).__name__}")
    d = measured.actual_density
    predicted = number(call(PREDICT, predict, d, measured.threads))
    head = (f"measured on {measured.threads} threads at actual density {d:.3g} "
            f"(nominal {measured.density:g}): ")
    if predicted is None:
        return head + "your function did not return a number"
    if measured.threads < 2:
        return head + "n/a: one thread has nobody to race with (the model says 0 too)"
    if measured.concurrent_writes < MIN_CONCURRENT_WRITES:
        return (head + f"n/a: only {measured.concurrent_writes:,} writes were made while the "
                "threads overlapped; the machine ran them one after the other (busy, or one "
                "usable core), so nothing was measured")
    rate = measured.stale_rate_concurrent
    ratio = rate / predicted if predicted > 0 else float("inf")
    text = (head + f"{rate:.3g} stale reads per concurrent write against your prediction "
            f"{predicted:.3g}: measured/predicted = {ratio:.2f}. ")
    if 0.75 <= ratio <= 1.33:
        return text + "✓ within a third of the model."
    if measured.work_per_update == 0 and ratio < 0.75:
        return text + ("Below the model: without work_per_update an update is mostly its own "
                       "reads and writes, so its read-to-write window is short and rows of "
                       "different lengths take different times; the model assumes windows of "
                       "one whole update.")
    if ratio < 0.75:
        return text + ("Below the model: part of each update (the reads before the padding, the "
                       "loop between updates) lies outside its read-to-write window, and an "
                       "update counted as concurrent may have overlapped the other thread only "
                       "in part.")
    return text + ("Above the model: at small densities only a few stale reads are counted, "
                   "so the rate is noisy; and the model gives every update the same length, "
                   "while a long row's update stays in flight longer and meets more writes.")


# --- Exercise 4: the locked and the lock-free epoch, on threads ----------------------------

EPOCH = "Exercise 4 (locked and lock-free epochs)"
# A short sleep inside each update releases the GIL, so the threads really interleave (and a
# pool cannot finish one chunk before the next one is handed out).
UPDATE_PAUSE = 1e-4
LOCK_TIMEOUT = 2.0  # seconds a thread may wait for the lock before it counts as never released
# A thread's first update waits (at most this long) until every thread of the epoch has shown
# up, at update or at the lock: on a busy machine the operating system may otherwise let the
# first thread finish its chunk before the caller gets a core to start the second, and a
# correct start-all-then-join-all would look like a serial loop. A serial loop waits in vain.
START_WAIT = 0.5


class CountingLock:
    """A lock for grading: counts acquires and releases, knows its owner, never hangs, and
    serves its waiters in turn.

    Used like ``threading.Lock`` (``with lock:`` or ``acquire()``/``release()``). A thread that
    waits longer than ``LOCK_TIMEOUT`` gets a RuntimeError instead of waiting forever, so a
    lock that is never released is reported instead of freezing the notebook. First come,
    first served (a ticket lock): a plain lock goes to whichever thread runs first after a
    release, which on a busy machine is the thread that just released it, over and over, and
    a correct epoch would look like one thread after another.
    """

    def __init__(self):
        self._turn = threading.Condition()
        self._next = self._serving = 0  # the next ticket to hand out, the ticket served now
        self._abandoned: set[int] = set()  # tickets whose thread gave up waiting
        self.owner = None
        self.acquires = self.releases = self.timeouts = 0
        self.arriving = None  # called by each thread that asks for the lock (``_recorded``)

    def _skip_abandoned(self) -> None:
        while self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1

    def acquire(self, blocking=True, timeout=-1):
        if self.arriving is not None:
            self.arriving()
        with self._turn:
            ticket, self._next = self._next, self._next + 1
            if not self._turn.wait_for(lambda: self._serving == ticket, timeout=LOCK_TIMEOUT):
                self._abandoned.add(ticket)
                self.timeouts += 1
                raise RuntimeError("waited too long for the lock: another thread never "
                                   "released it")
            self.owner = threading.get_ident()
            self.acquires += 1
        return True

    def release(self):
        with self._turn:
            if self.owner != threading.get_ident():
                raise RuntimeError("released a lock this thread does not hold")
            self.owner = None
            self.releases += 1
            self._serving += 1
            self._skip_abandoned()
            self._turn.notify_all()

    def locked(self) -> bool:
        return self.owner is not None

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


def _recorded(update, shared, lock, n_threads):
    """``update`` wrapped to record each call (thread, sample, lock held, shared w), in the
    order the calls began, and the samples in the order their updates finished."""
    calls, finished = [], []
    books = threading.Lock()
    arrived, waited, everyone = set(), set(), threading.Event()

    def arrive():
        with books:
            arrived.add(threading.get_ident())
            if len(arrived) >= n_threads:
                everyone.set()

    if lock is not None:
        lock.arriving = arrive

    def recording_update(w, i):
        if threading.get_ident() not in waited:  # this thread's first update
            waited.add(threading.get_ident())
            arrive()
            everyone.wait(START_WAIT)
        held = lock is not None and lock.owner == threading.get_ident()
        same = isinstance(w, np.ndarray) and np.shares_memory(w, shared)
        with books:
            calls.append((threading.get_ident(), int(i), held, same))
        time.sleep(UPDATE_PAUSE)
        update(w, i)
        with books:
            finished.append(int(i))

    return recording_update, calls, finished


def _run_epoch(func, problem, order, n_threads, lock, case):
    w = np.zeros(problem.n_features)
    update, calls, finished = _recorded(_python_update(problem, 0.7), w, lock, n_threads)
    before = set(threading.enumerate())
    call(EPOCH, func, w, order.copy(), update, n_threads, lock)
    done = len(calls)
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for t in left:
        t.join(LOCK_TIMEOUT)
    expect(EPOCH, not left and done == len(calls),
           f"{case}: the function returned while its threads were still updating; join() "
           "every thread before returning")
    return w, calls, finished


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
    # (Threads started and joined one at a time may also show one id: the next thread can get
    # the ended one's id back.)
    expect(EPOCH, min(2, n_threads) <= len(idents) <= n_threads,
           f"{case}: updates ran on {len(idents)} thread(s), expected {n_threads}"
           + (" (or the threads ran one after the other, each started after the previous one "
              "was joined)" if len(idents) == 1 < n_threads else ""))
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
    # last: a lock around a whole chunk also stops the interleaving, and is named above
    switches = sum(a[0] != b[0] for a, b in zip(calls, calls[1:]))
    expect(EPOCH, n_threads < 2 or switches >= n_threads,
           f"{case}: the updates never interleaved (the thread doing them changed only "
           f"{switches} time(s) in {len(calls)} updates): each thread finished before the next "
           "began, which is a serial loop. Start all the threads first, then join them all")


def check_epochs(epoch) -> None:
    """``epoch(w, order, update, n_threads, lock)``: one epoch of SGD on ``n_threads`` threads.

    Split ``order`` into ``n_threads`` chunks; each thread calls ``update(w, i)`` for every
    sample ``i`` of its chunk, on the shared ``w``. If ``lock`` is not None, each update runs
    while holding it (the locked variant); if it is None, without any lock (Hogwild).
    Checked: the threads, each sample once, the shared ``w``, the lock taken and released once
    per update (a grading lock counts them), the threads' updates interleaved (not one thread
    after another), the threads joined, and the result.
    """
    problem = make_sparse_problem(301, 40, 0.1, seed=case_seed(15))  # 301: no thread count divides it
    order = np.random.default_rng(case_seed(6)).permutation(problem.n_samples)
    serial_update = _python_update(problem, 0.7)

    def replay(samples):
        """w after the updates of ``samples``, one after another, from w = 0."""
        w = np.zeros(problem.n_features)
        for i in samples:
            serial_update(w, i)
        return w

    w, calls, _ = _run_epoch(epoch, problem, order, 1, None, "1 thread, no lock")
    _check_structure(calls, order, 1, None, "1 thread, no lock")
    expect_close(EPOCH, w, replay(order), what="1 thread, no lock: w after the epoch",
                 rtol=1e-12)
    for n_threads, lock in ((2, CountingLock()), (2, None), (3, CountingLock())):
        case = f"{n_threads} threads, {'with a lock' if lock is not None else 'lock-free'}"
        w, calls, finished = _run_epoch(epoch, problem, order, n_threads, lock, case)
        _check_structure(calls, order, n_threads, lock, case)
        w = as_array(EPOCH, w, what=f"{case}: w", ndim=1)
        # The threads' order is the scheduler's: the reference replays the order in which
        # their updates finished. Under the lock that is the order they ran in, exactly.
        if lock is not None:
            expect_close(EPOCH, w, replay(finished), rtol=1e-12,
                         what=f"{case}: w after the epoch (against the updates replayed in the "
                              "order the threads made them)")
        else:  # without it, a thread may read w just before another one writes
            loss, expected = logistic_loss(problem, w), logistic_loss(problem, replay(finished))
            expect(EPOCH, abs(loss - expected) <= 0.01 * expected,
                   f"{case}: loss after the epoch is {fmt(loss)}, expected within 1% of "
                   f"{fmt(expected)}, the loss of the same updates replayed in the order the "
                   "threads made them")
    passed(EPOCH, "threads share w, each sample once, lock taken and released per update, "
                  "threads joined, serial result on 1 thread")
