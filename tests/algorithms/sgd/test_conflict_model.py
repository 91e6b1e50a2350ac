"""Tests for mlpar.algorithms.sgd.conflict_model, the virtual-clock simulation of lock-free SGD."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.algorithms.sgd.conflict_model import fit_to_measurement, simulate
from mlpar.algorithms.sgd.hogwild import run_sgd
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem


@pytest.fixture(scope="module")
def problem():
    return make_sparse_problem(1500, 200, 0.03, seed=0)


def test_one_thread_replays_serial_sgd_exactly(problem):
    sim = simulate(problem, 1, window=0.7, rmw=0.5, step=0.5, seed=3)
    serial = run_sgd(problem, "serial", step=0.5, epochs=1, seed=3)
    np.testing.assert_array_equal(sim.w, serial.weights)
    assert (sim.stale_reads, sim.lost_updates) == (0, 0)
    assert sim.writes == problem.nnz
    assert sim.speedup == pytest.approx(1.0)


@settings(max_examples=10, deadline=None)
@given(threads=st.integers(2, 16), seed=st.integers(0, 1000))
def test_zero_window_and_zero_rmw_never_conflict(problem, threads, seed):
    sim = simulate(problem, threads, window=0.0, rmw=0.0, seed=seed)
    assert (sim.stale_reads, sim.lost_updates) == (0, 0)


def test_dense_problem_with_full_window_is_almost_always_stale():
    # Every update writes every coordinate and lasts the same time, so during any update the
    # other thread writes everything once: all reads are stale except the first update's.
    dense = make_sparse_problem(400, 20, 1.0, seed=0)
    sim = simulate(dense, 2, window=1.0, seed=0)
    assert sim.stale_rate >= 0.99


def test_more_threads_more_conflicts(problem):
    rates = [simulate(problem, p, window=0.5, rmw=0.5, seed=0) for p in (2, 8, 32)]
    stale = [r.stale_rate for r in rates]
    lost = [r.lost_rate for r in rates]
    assert stale == sorted(stale) and stale[0] > 0
    assert lost == sorted(lost) and lost[-1] > 0
    # Without memory contention in the model, lock-free threads run side by side.
    assert rates[1].speedup == pytest.approx(8, rel=0.1)


def test_calibration_reproduces_the_target_rates(problem):
    target = simulate(problem, 2, window=0.4, rmw=0.3, seed=1)
    window, rmw = fit_to_measurement(problem, target.stale_rate, target.lost_rate, threads=2, seed=1)
    again = simulate(problem, 2, window=window, rmw=rmw, seed=1)
    assert again.stale_rate == pytest.approx(target.stale_rate, abs=2 / problem.nnz)
    assert again.lost_rate == pytest.approx(target.lost_rate, abs=2 / problem.nnz)


def test_calibration_of_zero_rates_is_zero(problem):
    assert fit_to_measurement(problem, 0.0, 0.0) == (0.0, 0.0)


def test_calibration_caps_impossible_rates(problem):
    window, _ = fit_to_measurement(problem, 1.0, 0.0)
    assert window == 1.0


def test_bad_arguments_raise(problem):
    with pytest.raises(ValueError, match="threads"):
        simulate(problem, 0)
    with pytest.raises(ValueError, match="threads"):
        simulate(problem, problem.n_samples + 1)
    with pytest.raises(ValueError, match="window"):
        simulate(problem, 2, window=1.5)
    with pytest.raises(ValueError, match="rmw"):
        simulate(problem, 2, rmw=-1.0)
    with pytest.raises(ValueError, match="step"):
        simulate(problem, 2, step=0.0)
    with pytest.raises(TypeError, match="problem"):
        simulate(None, 2)
    with pytest.raises(ValueError, match="threads"):
        fit_to_measurement(problem, 0.1, 0.0, threads=1)
    with pytest.raises(ValueError, match="stale_rate"):
        fit_to_measurement(problem, 1.5, 0.0)
