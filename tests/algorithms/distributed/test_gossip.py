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


# -- the two orders of D-PSGD (review 07-08, finding 1) ---------------------------------------------


def test_lian_order_differs_from_atc_and_needs_the_smaller_step():
    X, y = house_prices.load()
    opt = mapreduce.loss(X, y, np.linalg.lstsq(X, y, rcond=None)[0])
    J = np.full((8, 8), 1 / 8)
    reference = mapreduce.gradient_descent(X, y, n_workers=8, lr=0.5, n_iter=30)
    atc = G.dpsgd(X, y, J, lr=0.5, n_rounds=30, order="atc")
    lian = G.dpsgd(X, y, J, lr=0.5, n_rounds=30, order="lian")
    assert np.allclose(atc.models, reference.weights, rtol=1e-10, atol=1e-9)
    assert not np.allclose(lian.models, reference.weights, rtol=1e-3)  # not gradient descent
    W = T.topology_matrix("torus", 64)
    lam_n = np.linalg.eigvalsh(W).min()
    assert abs(lam_n + 0.6) < 1e-12
    lr = G.stable_lr(X, y, 64)  # 1/L: under ATC's 2/L, above Lian's (1 + λ_n)/L = 0.4/L
    assert G.dpsgd(X, y, W, lr=lr, n_rounds=400, order="lian").losses[-1] > 10 * opt
    assert G.dpsgd(X, y, W, lr=lr, n_rounds=200, order="atc").losses[-1] < 1.2 * opt
    lazy = (np.eye(64) + W) / 2  # eigenvalues ≥ 0.2: Lian's rule then allows 1.2/L
    assert G.dpsgd(X, y, lazy, lr=lr, n_rounds=200, order="lian").losses[-1] < 1.5 * opt


def test_lian_order_overlaps_compute_with_the_sends():
    X, y = house_prices.load()
    cost = CostModel(alpha=50e-6, beta=1e-9, per_sample=1e-6)
    W = T.topology_matrix("ring", 8)
    atc = G.dpsgd(X, y, W, lr=0.01, n_rounds=10, cost=cost, order="atc")
    lian = G.dpsgd(X, y, W, lr=0.01, n_rounds=10, cost=cost, order="lian")
    compute = cost.per_sample * len(y) / 8  # 500 µs, longer than a round's two sends
    sends = 2 * cost.message_time(8 * X.shape[1])
    assert sends < compute
    saved = (atc.times[-1] - lian.times[-1]) / 10
    assert saved == pytest.approx(sends, rel=1e-6)  # the sends hide behind the gradient
    with pytest.raises(ValueError, match="order"):
        G.dpsgd(X, y, W, order="awc")


# -- exact all-reduces beside gossip (review 07-08, finding 5) ---------------------------------------


def test_latency_optimal_allreduces_in_the_comparison():
    X, y = house_prices.load()
    opt = mapreduce.loss(X, y, np.linalg.lstsq(X, y, rcond=None)[0])
    cluster = CostModel(alpha=50e-6, beta=1e-9, per_sample=100e-6 / 125)
    rows = {r["design"]: r for r in G.compare_designs(X, y, 32, cluster, target=1.05 * opt,
                                                       n_rounds=150, graphs=("exponential",))}
    ring, doubling = rows["all-reduce, ring"], rows["all-reduce, recursive doubling"]
    # small model: α per step; ring 2(n−1) = 62 steps, recursive doubling log₂ n = 5
    assert ring["round_s"] == pytest.approx(100e-6 + 62 * (50e-6 + 1e-9 * 40 // 32 * 8 / 8),
                                            rel=0.02)
    assert doubling["round_s"] == pytest.approx(100e-6 + 5 * (50e-6 + 40e-9), rel=0.01)
    assert doubling["round_s"] <= rows["gossip (ATC), exponential"]["round_s"] * 1.01
    steps = G._allreduce_steps("halving-doubling", 8, 800)
    assert [b for _, b in steps] == [400, 200, 100, 100, 200, 400]  # 2(n−1)M/n = 1400 bytes
    with pytest.raises(ValueError, match="power of two"):
        G._allreduce_steps("recursive doubling", 12, 80)


# -- the lesson's widget through every option its text suggests (issue 31 §4) ----------------------


def test_widget_every_topology_rule_and_size():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown, drawn = 0, {}
    for topology in T.TOPOLOGIES:
        for rule in T.RULES:
            for n in (2, 9, 16):
                try:
                    view = G.explore_consensus(topology, n, rule)
                except ValueError as error:  # the widget prints it: a size the topology lacks
                    assert topology in ("torus", "hypercube") and "n:" in str(error)
                    continue
                assert np.all(np.isfinite(view.errors)) and view.errors[0] == 1.0
                shown += 1
                # Drawing is what costs here (66 figures took 6 s), and the panels differ only
                # by these: every topology's graph once, and every combination of the plot's
                # branches (arrows, a cycle of matrices, a floor or a rate line, an exact round,
                # the smallest size) once.
                branches = (nx.is_directed(view.graph), len(view.matrices) > 1,
                            view.floor > 1e-9, view.connected, view.exact_at is None, n == 2)
                for key in (topology, branches):
                    drawn.setdefault(key, view)
    assert shown >= 50
    assert len(drawn) >= len(T.TOPOLOGIES) + 8, sorted(map(str, drawn))
    for view in {id(v): v for v in drawn.values()}.values():
        fig, axes = plt.subplots(1, 3)
        G.plot_consensus_view(view, axes)
        plt.close(fig)
    # The prompt's experiment: equal_neighbour on a star agrees, on the wrong value: a plateau.
    star = G.explore_consensus("star", 16, "equal_neighbour")
    assert star.floor > 0.05 and abs(star.errors[-1] - star.floor) < 1e-6
    assert any("not on the average" in note for note in star.notes)
    assert G.explore_consensus("star", 16, "metropolis").errors[-1] < 0.01
    # The one-peer graph cycles through its τ matrices: exact at τ when n = 2^τ (§4).
    for n, tau in ((16, 4), (64, 6)):
        view = G.explore_consensus("one_peer_exponential", n)
        assert len(view.matrices) == tau and view.exact_at == tau
        assert view.errors[tau] < 1e-12 and view.errors[tau - 1] > 1e-3
    assert G.explore_consensus("one_peer_exponential", 12).exact_at is None
    # A disconnected random graph: components keep their own averages.
    er = G.explore_consensus("erdos_renyi", 16, "metropolis", p=0.12)
    assert not er.connected and er.floor > 0.01


def test_gradient_tracking_removes_the_constant_step_stall():
    X, y = house_prices.load()
    opt = mapreduce.loss(X, y, np.linalg.lstsq(X, y, rcond=None)[0])
    W = T.topology_matrix("torus", 64)
    lr = G.stable_lr(X, y, 64)
    plain = G.dpsgd(X, y, W, lr=lr, n_rounds=300)
    tracked = G.gradient_tracking(X, y, W, lr=lr, n_rounds=300)
    assert tracked.consensus[-1] < 1e-2 * plain.consensus[-1]
    assert tracked.losses[-1] < plain.losses[-1] and tracked.losses[-1] < 1.01 * opt
    # twice the bytes of a gossip round: x and the gradient estimate
    assert tracked.network.bytes_sent.sum() == 2 * plain.network.bytes_sent.sum()
    # the mean of the trackers is the mean gradient: with W = 11ᵀ/n it is gradient descent
    J = np.full((8, 8), 1 / 8)
    reference = mapreduce.gradient_descent(X, y, n_workers=8, lr=0.5, n_iter=20)
    np.testing.assert_allclose(G.gradient_tracking(X, y, J, lr=0.5, n_rounds=20).weights,
                               reference.weights, rtol=1e-9)


def test_push_sum_reaches_the_average_on_an_irregular_digraph():
    g = nx.DiGraph([(i, (i + 1) % 16) for i in range(16)] + [(0, 5), (0, 9), (3, 12), (7, 1)])
    x0 = np.random.default_rng(0).standard_normal(16)
    errors = G.push_sum(g, x0, 300)
    assert errors[0] == 1.0 and errors[-1] < 1e-10
    receive = np.eye(16) + nx.to_numpy_array(g, nodelist=range(16)).T
    agreed = np.linalg.matrix_power(receive / receive.sum(axis=1, keepdims=True), 2000) @ x0
    assert np.ptp(agreed) < 1e-9 and abs(agreed[0] - x0.mean()) > 1e-3  # agrees, wrongly
    with pytest.raises(ValueError, match="x0"):
        G.push_sum(g, x0[:5], 3)


@pytest.mark.parametrize("name", ["ring", "torus", "exponential"])
def test_a_round_never_beats_its_messages_on_one_link(name):
    # Lesson 07 §8 prints the round beside 2d message times: a half-duplex node sends d and
    # receives d messages on one link, so no round is shorter; full duplex, d for the
    # circulant graphs, whose nearest-neighbour-first order has no waits.
    X, y = house_prices.load()
    n = 64
    W = T.exponential_matrix(n) if name == "exponential" else T.topology_matrix(name, n)
    d = int(((W > 0).sum(axis=0) - 1).max())
    cost = CostModel(alpha=1.0, beta=0.0, per_sample=0.0)
    half = G.dpsgd(X, y, W, lr=0.01, n_rounds=10, cost=cost, duplex=False)
    assert half.times[-1] / 10 >= 2 * d - 1e-9
    full = G.dpsgd(X, y, W, lr=0.01, n_rounds=10, cost=cost)
    assert full.times[-1] / 10 >= d - 1e-9
    if name != "torus":
        assert full.times[-1] / 10 == pytest.approx(d)
