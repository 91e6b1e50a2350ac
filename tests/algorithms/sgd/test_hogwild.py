"""Tests for mlpar.algorithms.sgd.hogwild (serial, locked and lock-free SGD) and mlpar.cpu.spinlock.

Deterministic by design: exact equalities only with one thread; with two threads the tests
check convergence within a tolerance and counts that hold whatever the interleaving.
"""

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest

from mlpar.algorithms.sgd.hogwild import SGDRun, plot_runs, run_in_threads, run_sgd
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem
from mlpar.algorithms.sgd.sparse_logistic import logistic_loss
from mlpar.algorithms.training import TrainingResult
from mlpar.cpu import spinlock

# Stated tolerance: every parallel variant ends within 1% of the serial run's final loss.
LOSS_RTOL = 0.01


@pytest.fixture(scope="module")
def problem():
    return make_sparse_problem(4000, 300, 0.03, seed=0)


@pytest.fixture(scope="module")
def serial(problem):
    return run_sgd(problem, "serial", step=1.0, epochs=10, seed=0)


def test_serial_sgd_reaches_the_scikit_learn_optimum(problem, serial):
    from sklearn.linear_model import LogisticRegression

    # A nearly unregularised fit is the reference minimiser of the same mean logistic loss.
    model = LogisticRegression(C=1e4, fit_intercept=False, tol=1e-8, max_iter=2000)
    model.fit(problem.to_scipy(), problem.y)
    best = logistic_loss(problem, model.coef_.ravel().copy())
    assert serial.losses[0] == pytest.approx(np.log(2.0))  # w = 0 at the start
    assert best <= serial.final_loss <= best * 1.01


@pytest.mark.parametrize("variant", ["lock-free", "locked", "atomic"])
def test_one_thread_equals_serial_sgd_exactly(problem, serial, variant):
    run = run_sgd(problem, variant, threads=1, step=1.0, epochs=10, seed=0)
    np.testing.assert_array_equal(run.weights, serial.weights)
    np.testing.assert_array_equal(run.losses, serial.losses)
    assert run.lock_waits == 0 and run.cas_retries == 0


@pytest.mark.parametrize("variant", ["lock-free", "locked", "atomic"])
def test_two_threads_reach_the_serial_loss(problem, serial, variant):
    run = run_sgd(problem, variant, threads=2, step=1.0, epochs=10, seed=0)
    assert run.final_loss == pytest.approx(serial.final_loss, rel=LOSS_RTOL)
    assert run.updates == 10 * problem.n_samples
    assert len(run.times) == len(run.losses) == 11
    assert np.all(np.diff(run.times) >= 0)


def test_many_threads_still_reach_the_serial_loss(problem, serial):
    run = run_sgd(problem, "lock-free", threads=4, step=1.0, epochs=10, seed=0)
    assert run.final_loss == pytest.approx(serial.final_loss, rel=LOSS_RTOL)


def test_different_seeds_shuffle_differently(problem, serial):
    other = run_sgd(problem, "serial", step=1.0, epochs=10, seed=1)
    assert not np.array_equal(other.weights, serial.weights)


def test_sgd_run_summary(serial):
    assert isinstance(serial, SGDRun) and isinstance(serial, TrainingResult)
    assert serial.clock == "real" and serial.label == "serial, 1 thread"
    assert serial.updates_per_second > 0
    assert "serial, 1 thread" in repr(serial)
    assert serial.final_loss == serial.losses[-1]


def test_plots_draw_one_line_per_run_or_rate(problem, serial):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plot_runs([serial, serial])
    assert len(ax.lines) == 2
    assert len(serial.plot().lines) == 1  # the common TrainingResult plot works too
    plt.close("all")


@pytest.mark.parametrize("step", [0.0, -0.5])
def test_non_positive_step_raises(problem, step):
    with pytest.raises(ValueError, match="step"):
        run_sgd(problem, "lock-free", step=step)


def test_zero_epochs_raises(problem):
    with pytest.raises(ValueError, match="epochs"):
        run_sgd(problem, "locked", epochs=0)


@pytest.mark.parametrize("threads", [0, -2])
def test_fewer_than_one_thread_raises(problem, threads):
    with pytest.raises(ValueError, match="threads"):
        run_sgd(problem, "lock-free", threads=threads)


def test_other_bad_arguments_raise(problem):
    with pytest.raises(ValueError, match="variant"):
        run_sgd(problem, "optimistic")
    with pytest.raises(ValueError, match="threads"):
        run_sgd(problem, "serial", threads=2)
    with pytest.raises(ValueError, match="decay"):
        run_sgd(problem, "serial", decay=0.0)
    with pytest.raises(ValueError, match="seed"):
        run_sgd(problem, "serial", seed=-1)
    with pytest.raises(TypeError, match="problem"):
        run_sgd(problem.to_scipy(), "serial")
    with pytest.raises(ValueError, match="w"):
        logistic_loss(problem, np.zeros(3))


@numba.njit(nogil=True)
def _count_under_lock(lock, counter, n):
    for _ in range(n):
        spinlock.acquire(lock)
        counter[0] += 1
        spinlock.release(lock)


def test_spin_lock_makes_increments_exact():
    # With the lock no increment can be lost, however the two threads interleave.
    lock = spinlock.new_lock()
    counter = np.zeros(1, dtype=np.int64)
    _count_under_lock(lock, counter, 1)
    counter[0] = 0
    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(_count_under_lock, lock, counter, 200_000) for _ in range(2)]:
            f.result()
    assert counter[0] == 400_000
    assert lock[0] == 0  # released


@numba.njit
def _cas_demo(a):
    first = spinlock.compare_and_swap(a, 0, 0, 5)  # succeeds: 0 -> 5
    second = spinlock.compare_and_swap(a, 0, 0, 7)  # fails: a[0] is 5, not 0
    spinlock.store_release(a, 1, np.int64(9))
    return first, second, spinlock.load_relaxed(a, 0), spinlock.load_relaxed(a, 1)


def test_atomic_primitives_semantics():
    a = np.zeros(2, dtype=np.int64)
    assert _cas_demo(a) == (0, 5, 5, 9)
    np.testing.assert_array_equal(a, [5, 9])


def test_worker_errors_reach_the_caller():
    def boom(k):
        if k == 1:
            raise RuntimeError("worker 1 failed")
        return k

    assert run_in_threads(lambda k: 2 * k, [(0,), (1,), (2,)]) == [0, 2, 4]
    with pytest.raises(RuntimeError, match="worker 1"):
        run_in_threads(boom, [(0,), (1,)])


@numba.njit(nogil=True)
def _meet(counter, parties):
    spinlock.arrive_and_wait(counter, parties)
    return spinlock.load_relaxed(counter, 0)


def test_barrier_releases_only_when_all_threads_arrived():
    counter = spinlock.new_lock()
    assert _meet(counter, 1) == 1
    counter[0] = 0
    # Each thread can only return after all three arrived, so each sees the full count.
    assert run_in_threads(_meet, [(counter, 3)] * 3) == [3, 3, 3]


def test_benchmark_family_reports_its_figures():
    from mlpar.benchmarks import hogwild as family

    figures = family.run(quick=True)
    assert set(figures["updates_per_second"]) == {"serial", "locked", "atomic", "lock-free"}
    assert figures["cas_retries_atomic"] >= 0 and "atomic / locked" in family.report(figures)
    assert figures["lock_free_over_locked"] > 0
    assert figures["loss_difference_vs_serial"] < 0.02  # convergence, not speed
    text = family.report(figures)
    assert "lock-free / locked throughput at 2 threads" in text and "target" in text


# --- Bad data is named as bad data, before any thread starts (issue 25 item 4) ---------------


def _with_bad_value(problem, where, value):
    import dataclasses

    data, y = problem.data.copy(), problem.y.copy()
    if where == "X":
        data[problem.indptr[17] + 1] = value  # row 17, its second nonzero
    else:
        y[17] = value
    return dataclasses.replace(problem, data=data, y=y)


@pytest.mark.parametrize("where, value, match", [
    ("X", np.nan, r"problem\.X: NaN at row 17, column \d+"),
    ("X", np.inf, r"problem\.X: infinity at row 17, column \d+"),
    ("y", np.nan, r"problem\.y: NaN at position 17"),
])
@pytest.mark.parametrize("variant, threads", [("serial", 1), ("locked", 2), ("lock-free", 2)])
def test_bad_data_is_named_before_any_thread_starts(problem, monkeypatch, where, value, match,
                                                     variant, threads):
    import threading

    from mlpar.algorithms.sgd import conflict_model, conflicts

    bad = _with_bad_value(problem, where, value)

    def no_threads(self):
        raise AssertionError("a thread was started before the data was checked")

    monkeypatch.setattr(threading.Thread, "start", no_threads)
    with pytest.raises(ValueError, match=match) as err:
        run_sgd(bad, variant, threads=threads, step=0.5)
    assert "diverged" not in str(err.value) and "step" not in str(err.value)
    with pytest.raises(ValueError, match=match):
        conflicts.count_conflicts(bad, threads=threads)
    with pytest.raises(ValueError, match=match):
        conflict_model.simulate(bad, threads)


def test_genuine_divergence_still_blames_the_step(problem):
    with pytest.raises(ValueError, match="step: training diverged"):
        run_sgd(problem, "lock-free", threads=2, step=1e300)


def test_atomic_subtract_never_loses_an_update_on_threads():
    # Two threads subtract 1 from the same 4 coordinates: the plain `-=` may lose some, the
    # compare-and-swap loop none, whatever the interleaving.
    w = np.zeros(4)
    n = 200_000
    retries = run_in_threads(_hammer, [(w, n), (w, n)])
    assert w.sum() == -2 * n
    assert all(r >= 0 for r in retries)


@numba.njit(nogil=True)
def _hammer(w, n):
    retries = 0
    for k in range(n):
        retries += spinlock.atomic_subtract(w, k % 4, 1.0)
    return retries


def test_compare_and_swap_float_compares_bits():
    @numba.njit
    def cas(w, expected, new):
        return spinlock.compare_and_swap_float(w, 0, expected, new)

    w = np.array([0.0])
    assert cas(w, 0.0, 5.0) == 1 and w[0] == 5.0
    assert cas(w, 1.0, 7.0) == 0 and w[0] == 5.0  # another value: no swap
    w[0] = -0.0
    assert cas(w, 0.0, 2.0) == 0  # +0.0 and -0.0 are equal numbers but different bits
    w[0] = np.nan
    assert cas(w, np.nan, 3.0) == 1 and w[0] == 3.0  # NaN's own bits match: no endless retry
