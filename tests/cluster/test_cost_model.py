import numpy as np
import pytest

from mlpar.algorithms.distributed import house_prices
from mlpar.cluster.cost_model import CostModel, calibrate, measure_per_sample
from mlpar.cluster.engines import ProcessEngine


def test_message_time_is_alpha_plus_beta_bytes():
    cost = CostModel(alpha=2e-3, beta=1e-6)
    assert cost.message_time(0) == 2e-3
    assert cost.message_time(1000) == pytest.approx(3e-3)


def test_straggler_and_jitter():
    cost = CostModel(per_sample=1e-3, straggler=1, slowdown=4.0)
    assert cost.compute_time(0, 10) == pytest.approx(1e-2)
    assert cost.compute_time(1, 10) == pytest.approx(4e-2)
    noisy = cost.with_(jitter=0.5, seed=3)
    draws = [noisy.compute_time(0, 10, rng) for rng in noisy.worker_rngs(4)]
    again = [noisy.compute_time(0, 10, rng) for rng in noisy.worker_rngs(4)]
    assert draws == again  # seeded
    assert len(set(draws)) == 4  # each worker its own stream
    assert min(draws) >= 1e-2  # a slow-down never speeds a worker up


@pytest.mark.parametrize(
    "field, value",
    [("alpha", -1.0), ("beta", -1e-9), ("per_sample", -1e-9), ("slowdown", 0.5), ("jitter", -0.1),
     ("straggler", -1), ("seed", -2)],
)
def test_bad_costs_raise(field, value):
    with pytest.raises(ValueError, match=field):
        CostModel(**{field: value})


def test_jitter_needs_a_stream():
    with pytest.raises(ValueError, match="rng"):
        CostModel(jitter=0.1).compute_time(0, 10)


def test_calibration_on_real_processes_gives_a_usable_model():
    X, y = house_prices.load(2000)
    assert 0 < measure_per_sample(X, y, repeat=3) < 1e-5
    with ProcessEngine(1) as eng:
        eng.start()
        cost = calibrate(eng, X, y, repeat=3)
    assert cost.alpha > 0 and cost.beta >= 0 and np.isfinite(cost.beta)
    assert "CostModel(α=" in repr(cost)


def test_links_and_compute_measured_through_an_engine():
    from mlpar.cluster.cost_model import measure_compute, measure_links

    X, y = house_prices.load(4000)
    with ProcessEngine(2) as eng:
        eng.start()
        alpha, latency, beta = measure_links(eng, repeat=3)
        per_sample = measure_compute(eng, X, y, repeat=3)
    assert alpha >= 0 and latency >= 0 and beta >= 0 and alpha + latency > 0
    assert 0 < per_sample < 1e-5
    with pytest.raises(ValueError, match="sizes"):
        measure_links(eng, sizes=(8, 8))


def test_mpich_allreduces_against_tree_and_ring():
    cost = CostModel(alpha=1e-3, beta=1e-9, latency=2e-4)
    step = cost.transfer_time(40)
    assert cost.recursive_doubling_allreduce_time(1, 40) == 0.0
    assert cost.recursive_doubling_allreduce_time(256, 40) == pytest.approx(8 * step)
    assert cost.recursive_doubling_allreduce_time(256, 40) == pytest.approx(
        cost.tree_allreduce_time(256, 40) / 2)  # half the tree's steps
    M = 10**8
    for m in (2, 8, 64, 256):
        rabenseifner = cost.halving_doubling_allreduce_time(m, M)
        closed = 2 * np.log2(m) * (cost.alpha + cost.latency) + 2 * (m - 1) / m * M * cost.beta
        assert rabenseifner == pytest.approx(closed, rel=1e-6)
        assert rabenseifner <= cost.ring_allreduce_time(m, M)  # same bytes, fewer steps
    assert cost.halving_doubling_allreduce_time(2, M) == pytest.approx(cost.ring_allreduce_time(2, M))
    for bad in (3, 6, 100):
        with pytest.raises(ValueError, match="n_nodes: expected a power of two"):
            cost.halving_doubling_allreduce_time(bad, M)
        with pytest.raises(ValueError, match="n_nodes: expected a power of two"):
            cost.recursive_doubling_allreduce_time(bad, 40)
    with pytest.raises(TypeError, match="n_nodes"):
        cost.recursive_doubling_allreduce_time("8", 40)
