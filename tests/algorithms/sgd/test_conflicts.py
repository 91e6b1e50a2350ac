"""Tests for mlpar.algorithms.sgd.conflicts: race counts of lock-free SGD on real threads."""

import numpy as np
import pytest

from mlpar.algorithms.sgd.conflicts import (
    ConflictCount,
    RaceCounts,
    conflict_sweep,
    count_conflicts,
)
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem


@pytest.fixture(scope="module")
def problem():
    return make_sparse_problem(4000, 300, 0.03, seed=0)


def test_one_thread_has_no_conflicts(problem):
    c = count_conflicts(problem, threads=1, epochs=2, seed=0)
    assert isinstance(c, ConflictCount)
    assert (c.stale_reads, c.lost_updates, c.concurrent_writes) == (0, 0, 0)
    assert np.isnan(c.stale_rate_concurrent)
    assert c.writes == 2 * problem.nnz


def test_two_thread_counts_are_consistent(problem):
    # Whatever the interleaving: every write is counted and no rate exceeds 1.
    c = count_conflicts(problem, threads=2, epochs=1, seed=0)
    assert c.writes == problem.nnz
    assert 0 <= c.stale_reads <= c.writes and 0 <= c.lost_updates <= c.writes
    assert 0.0 <= c.stale_rate <= 1.0 and 0.0 <= c.lost_rate <= 1.0


def test_conflict_sweep_has_one_point_per_density_and_the_same_updates():
    sweep = conflict_sweep([0.01, 0.5], n_features=100, n_samples=500, epochs=2,
                           work_per_update=10, threads=1, seed=0)
    np.testing.assert_array_equal(sweep.densities, [0.01, 0.5])
    assert all(c.stale_reads == 0 and c.lost_updates == 0 for c in sweep.counts)
    assert all(c.work_per_update == 10 for c in sweep.counts)
    # same number of updates per density, so the denser problem makes more writes
    assert sweep.counts[0].writes < sweep.counts[1].writes


def test_padding_does_not_change_the_one_thread_result(problem):
    # The work between read and write must not alter the update it delays.
    plain = count_conflicts(problem, threads=1, seed=3)
    padded = count_conflicts(problem, threads=1, seed=3, work_per_update=50)
    assert plain.writes == padded.writes and padded.stale_reads == 0


def test_fully_dense_rows_race_on_two_threads_at_fixed_time_per_update():
    # At density 1 every update writes every coordinate: whenever the two threads overlap at
    # all, stale reads must be counted. They start together at a barrier each epoch.
    dense = make_sparse_problem(400, 20, 1.0, seed=0)
    c = count_conflicts(dense, threads=2, epochs=3, seed=0, work_per_update=2000)
    assert 0 <= c.concurrent_writes <= c.writes
    if c.concurrent_writes >= 10 * dense.n_features:  # the scheduler let them run together
        assert c.stale_reads > 0


def test_plot_draws_both_rates_and_the_floor():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = conflict_sweep([0.1], n_features=50, n_samples=200, work_per_update=0, threads=1,
                           seed=0)
    left, right = sweep.plot()
    assert len(left.lines) == 3  # two rates and the model line
    assert len(right.patches) == 1  # one overlap bar per density
    assert "overlap" in repr(sweep)
    plt.close("all")


def test_bad_arguments_raise(problem):
    with pytest.raises(ValueError, match="densities"):
        conflict_sweep([0.1, 1.2])
    with pytest.raises(ValueError, match="epochs"):
        count_conflicts(problem, epochs=0)
    with pytest.raises(ValueError, match="work_per_update"):
        count_conflicts(problem, work_per_update=-1)
    for threads in (0, -2):
        with pytest.raises(ValueError, match="threads"):
            count_conflicts(problem, threads=threads)
    with pytest.raises(TypeError, match="problem"):
        count_conflicts(problem.to_scipy())


def test_simulated_and_measured_counts_share_one_record(problem):
    from mlpar.algorithms.sgd.conflict_model import simulate

    sim = simulate(problem, 2, seed=0)
    real = count_conflicts(problem, threads=1, seed=0)
    assert isinstance(sim, RaceCounts) and isinstance(real, RaceCounts)
    assert RaceCounts(2, 10, 3, 1).stale_rate == 0.3 and RaceCounts(2, 10, 3, 1).lost_rate == 0.1


def test_the_stale_rate_model():
    from mlpar.algorithms.sgd.conflicts import stale_rate_model

    assert stale_rate_model(0.3, 2) == pytest.approx(0.3)  # 2 threads: the density itself
    assert stale_rate_model(0.5, 1) == 0.0  # nobody to race with
    assert stale_rate_model(0.1, 4) == pytest.approx(1 - 0.9**3)
    assert stale_rate_model(1.0, 8) == 1.0
    with pytest.raises(ValueError, match="density"):
        stale_rate_model(1.5, 2)
    with pytest.raises(ValueError, match="threads"):
        stale_rate_model(0.1, 0)


def test_counts_and_sweeps_carry_the_actual_density():
    # every row has at least one of 200 features, so "0.001" is really about 1/200
    sparse = make_sparse_problem(400, 200, 0.001, seed=0)
    assert sparse.actual_density == sparse.nnz / (400 * 200) >= 1 / 200
    c = count_conflicts(sparse, threads=1, seed=0)
    assert c.actual_density == sparse.actual_density and c.density == 0.001
    sweep = conflict_sweep([0.001, 0.5], n_features=200, n_samples=100, epochs=1,
                           work_per_update=0, threads=1, seed=0)
    assert sweep.actual_densities[0] >= 1 / 200 > sweep.densities[0]
    assert "actual" in repr(sweep)


def test_runs_of_days_are_refused_before_they_start(problem):
    with pytest.raises(ValueError, match="epochs"):
        count_conflicts(problem, epochs=10**12)
    with pytest.raises(ValueError, match="work_per_update"):
        count_conflicts(problem, work_per_update=10**12)
    with pytest.raises(ValueError, match="threads"):
        count_conflicts(problem, threads=10**9)
    with pytest.raises(ValueError, match="epochs"):
        conflict_sweep([0.1], epochs=10**12)
