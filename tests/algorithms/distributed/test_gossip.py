import time

import networkx as nx
import numpy as np
import pytest

from mlpar.algorithms.distributed import gossip as G
from mlpar.algorithms.distributed import house_prices, mapreduce
from mlpar.algorithms.distributed import topologies as T
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.peer_network import PeerNetwork


@pytest.mark.parametrize("topology, n", [("ring", 12), ("torus", 16), ("hypercube", 8), ("star", 7)])
def test_slowest_eigenvector_shrinks_by_exactly_rho(topology, n):
    W = T.topology_matrix(topology, n)
    lam, v = G.slowest_direction(W)
    errors = G.consensus_errors(W, v, 20)
    np.testing.assert_allclose(errors[1:] / errors[:-1], abs(lam), rtol=1e-10)
    assert abs(abs(lam) - T.rho(W)) < 1e-12


def test_random_start_decay_rate_tends_to_rho():
    W = T.topology_matrix("ring", 16)
    x0 = np.random.default_rng(0).standard_normal(16)
    errors = G.consensus_errors(W, x0, 300)
    assert abs(errors[300] / errors[299] - T.rho(W)) < 1e-6


def test_gossip_keeps_the_average_and_one_peer_is_exact():
    x0 = np.random.default_rng(1).standard_normal((9, 3))
    for W in (T.topology_matrix("torus", 9), T.exponential_matrix(9)):
        x = x0
        y = W @ W @ x
        np.testing.assert_allclose(y.mean(axis=0), x.mean(axis=0), atol=1e-14)
    errors = G.consensus_errors(T.one_peer_matrices(8), x0[:8], 3)
    assert errors[-1] < 1e-12 * errors[0]
    assert G.consensus_errors(T.one_peer_matrices(6), x0[:6], 3)[-1] > 1e-3


def test_pairwise_gossip_expectation_on_the_complete_graph():
    # E‖x_t − x̄‖² / ‖x_0 − x̄‖² = (1 − 1/(n−1))^t. Tolerance: 5 standard errors of the mean
    # over 2000 seeded runs (a normal approximation; the runs are fixed, so this cannot flake).
    n, t, runs = 8, 12, 2000
    g = nx.complete_graph(n)
    x0 = np.random.default_rng(5).standard_normal(n)
    ratios = np.array([G.pairwise_gossip(g, x0, t, seed=s).squared_errors for s in range(runs)])
    ratios = ratios / ratios[:, :1]
    mean, se = ratios.mean(axis=0), ratios.std(axis=0, ddof=1) / np.sqrt(runs)
    expected = (1 - 1 / (n - 1)) ** np.arange(t + 1)
    assert np.all(np.abs(mean - expected) <= 5 * se + 1e-15)
    wrong = (1 - 1 / n) ** np.arange(t + 1)  # the test has the power to reject a wrong rate
    assert np.any(np.abs(mean - wrong) > 5 * se)


@pytest.mark.parametrize("n, heterogeneous", [(4, True), (7, True), (5, False)])
def test_dpsgd_with_averaging_matrix_is_gradient_descent(n, heterogeneous):
    X, y = house_prices.load()
    reference = mapreduce.gradient_descent(X, y, n_workers=n, lr=0.5, n_iter=40)
    run = G.dpsgd(X, y, np.full((n, n), 1 / n), lr=0.5, n_rounds=40, heterogeneous=heterogeneous)
    np.testing.assert_allclose(run.models, np.tile(reference.weights, (n, 1)), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(run.losses, reference.losses, rtol=1e-10)


def test_dpsgd_on_a_ring_keeps_the_mean_step_and_counts_bytes():
    X, y = house_prices.load()
    W = T.topology_matrix("ring", 8)
    run = G.dpsgd(X, y, W, lr=G.stable_lr(X, y, 8), n_rounds=30)
    assert run.network.bytes_sent.tolist() == [30 * 2 * 8 * X.shape[1]] * 8
    assert run.consensus[-1] > 0 and run.losses[-1] < run.losses[0]
    assert np.all(np.diff(run.times) > 0)


def test_dpsgd_256_nodes_is_fast():
    X, y = house_prices.load()
    start = time.perf_counter()
    G.dpsgd(X, y, T.topology_matrix("ring", 256), lr=0.03, n_rounds=100)
    assert time.perf_counter() - start < 10  # generous: a shared machine; the lesson reports it


@pytest.mark.parametrize("n, d", [(2, 8), (3, 12), (4, 16), (8, 24), (5, 7)])
def test_ring_allreduce_mean_and_bytes(n, d):
    vectors = [np.arange(d, dtype=float) * (i + 1) for i in range(n)]  # exact in floating point
    net = PeerNetwork(n)
    results = G.ring_allreduce(net, vectors)
    mean = np.sum(vectors, axis=0) / n
    for r in results:
        np.testing.assert_allclose(r, mean, rtol=1e-15)
    if d % n == 0:
        assert net.bytes_sent.tolist() == [2 * (n - 1) * 8 * d // n] * n
    net2 = PeerNetwork(n)
    G.gather_broadcast(net2, vectors)
    assert net2.bytes_sent[0] == (n - 1) * 8 * d


def test_ring_allreduce_time_follows_the_cost_model():
    cost = CostModel(alpha=1e-3, beta=1e-6)
    net = PeerNetwork(4, cost)
    G.ring_allreduce(net, [np.zeros(400)] * 4)
    assert abs(net.elapsed() - 6 * (1e-3 + 1e-6 * 800)) < 1e-12


def test_bad_input():
    X, y = house_prices.load()
    with pytest.raises(ValueError, match="W: expected a doubly stochastic"):
        G.dpsgd(X, y, np.array([[0.5, 0.5], [0.1, 0.9]]))
    with pytest.raises(ValueError, match="x0: expected shape"):
        G.consensus_errors(T.topology_matrix("ring", 4), np.zeros(5), 3)
    with pytest.raises(ValueError, match="vectors: expected one vector per node"):
        G.ring_allreduce(PeerNetwork(3), [np.zeros(3)] * 2)


@pytest.mark.parametrize("topology, n", [("complete", 6), ("complete", 2), ("ring", 8),
                                         ("hypercube", 8)])
def test_slowest_direction_is_a_unit_eigenvector_orthogonal_to_one(topology, n):
    # Issue 28: on the complete graph every direction ⊥ 1 has λ = 0, and the old code
    # returned e₁, which has a mean.
    W = T.topology_matrix(topology, n)
    lam, v = G.slowest_direction(W)
    assert abs(v.sum()) < 1e-12 and abs(np.linalg.norm(v) - 1) < 1e-12
    np.testing.assert_allclose(W @ v, lam * v, atol=1e-12)


def test_ring_allreduce_sends_two_n_minus_one_vectors_in_total_whatever_n():
    # 2(n−1)/n per node holds on average; per node only when n divides the length.
    n, d = 5, 12
    net = PeerNetwork(n)
    G.ring_allreduce(net, [np.ones(d) for _ in range(n)])
    assert net.bytes_sent.sum() == 2 * (n - 1) * 8 * d
    assert len(set(net.bytes_sent.tolist())) > 1  # 12 is not a multiple of 5: nodes differ


@pytest.mark.parametrize("heterogeneous", [True, False])
def test_nan_in_the_data_is_named_before_any_round(heterogeneous):
    # Issue 25 item 4: bad data is not reported as a diverging step size.
    X, y = house_prices.load()
    X = X.copy()
    X[17, 3] = np.nan
    W = T.topology_matrix("ring", 4)
    with pytest.raises(ValueError, match=r"X: NaN at row 17, column 3") as err:
        G.dpsgd(X, y, W, n_rounds=3, heterogeneous=heterogeneous)
    assert "diverged" not in str(err.value)


def test_nan_is_named_before_any_gossip_actor_starts(monkeypatch):
    from mlpar.algorithms.distributed import gossip_dask as GD

    class NoActors:
        def submit(self, *args, **kwargs):
            raise AssertionError("an actor was started before the data was checked")

    monkeypatch.setattr(GD, "check_client", lambda client: client)
    X, y = house_prices.load()
    y = y.copy()
    y[5] = np.nan
    with pytest.raises(ValueError, match=r"y: NaN at position 5"):
        with GD.gossip_nodes(NoActors(), X, y, T.topology_matrix("ring", 3)):
            pass
