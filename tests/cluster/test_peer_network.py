import numpy as np
import pytest

from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.peer_network import PeerNetwork


def test_send_copies_counts_and_prices():
    net = PeerNetwork(3, CostModel(alpha=1.0, beta=0.5))
    x = np.ones(2)
    got = net.send(0, 1, x, start=0.0)
    got[0] = 7.0
    assert x[0] == 1.0  # the receiver has its own copy
    assert net.bytes_sent.tolist() == [16, 0, 0] and net.bytes_received.tolist() == [0, 16, 0]
    assert net.elapsed() == 1.0 + 0.5 * 16
    # full duplex: 1 → 0 does not wait for 0 → 1; 0 → 2 waits for 0's out-link
    assert net.transfer(1, 0, 0, start=0.0) == 1.0
    assert net.transfer(0, 2, 0, start=0.0) == 9.0 + 1.0


def test_transfer_many_equals_one_by_one():
    cost = CostModel(alpha=1e-3, beta=1e-6)
    rng = np.random.default_rng(0)
    src = rng.integers(0, 6, 50)
    dst = (src + rng.integers(1, 6, 50)) % 6
    starts = rng.uniform(0, 0.01, 50)
    a, b = PeerNetwork(6, cost), PeerNetwork(6, cost)
    a.transfer_many(src, dst, 100, starts)
    for i, j, t in zip(src, dst, starts):
        b.transfer(int(i), int(j), 100, float(t))
    assert np.array_equal(a.ready, b.ready) and np.array_equal(a.bytes_sent, b.bytes_sent)
    assert a.elapsed() == b.elapsed()


def test_bad_input():
    with pytest.raises(ValueError, match="dst: expected a node other than src"):
        PeerNetwork(2).send(0, 0, np.zeros(1))
    with pytest.raises(ValueError, match="src: expected an integer <= 1"):
        PeerNetwork(2).transfer(2, 0, 8)
    with pytest.raises(TypeError, match="cost: expected a CostModel"):
        PeerNetwork(2, cost="fast")
    with pytest.raises(ValueError, match="sources, destinations"):
        PeerNetwork(2).transfer_many([0], [0], 8, [0.0])


def test_half_duplex_peers_send_and_receive_in_turn():
    # Two nodes message each other at t = 0: on full-duplex links both messages travel at once;
    # a half-duplex peer (one event loop) handles one, then the other.
    cost = CostModel(alpha=1e-3, beta=0.0)
    for duplex, last in ((True, 1e-3), (False, 2e-3)):
        net = PeerNetwork(2, cost, duplex=duplex)
        net.transfer_many([0, 1], [1, 0], 8, [0.0, 0.0])
        assert net.elapsed() == pytest.approx(last)
    with pytest.raises(TypeError, match="duplex"):
        PeerNetwork(2, cost, duplex="no")


def test_latency_delays_arrival_but_does_not_hold_the_link():
    # Issue 28: the peer network ignored CostModel.latency.
    net = PeerNetwork(3, CostModel(alpha=1.0, beta=0.0, latency=5.0))
    assert net.transfer(0, 1, 0, start=0.0) == 6.0  # held 1 s, then 5 s in flight
    assert net.transfer(0, 2, 0, start=0.0) == 7.0  # the out-link was free again at 1 s
    assert net.ready.tolist() == [0.0, 6.0, 7.0] and net.comm_time[0] == 2.0
    many = PeerNetwork(3, CostModel(alpha=1.0, beta=0.0, latency=5.0))
    many.transfer_many([0, 0], [1, 2], 0, [0.0, 0.0])
    assert many.ready.tolist() == net.ready.tolist()


def test_ring_allreduce_matches_the_cost_models_formula_with_latency():
    from mlpar.algorithms.distributed import gossip

    cost = CostModel(alpha=1e-4, beta=1e-9, latency=5e-3)
    net = PeerNetwork(8, cost)
    gossip.ring_allreduce(net, [np.ones(1024) for _ in range(8)])
    assert net.elapsed() == pytest.approx(cost.ring_allreduce_time(8, 8 * 1024), rel=1e-12)


def test_compute_many_equals_one_by_one():
    # straggler and per-node jitter streams included: the same end times, bit for bit
    cost = CostModel(alpha=1e-4, beta=1e-9, per_sample=1e-6, straggler=2, slowdown=3.0,
                     jitter=0.5, seed=7)
    one, many = PeerNetwork(5, cost), PeerNetwork(5, cost)
    sizes = np.array([10, 0, 7, 3, 12])
    for _ in range(3):
        ends = [one.compute(i, int(sizes[i])) for i in range(5)]
        one.transfer(0, 1, 64)
        assert np.array_equal(many.compute_many(np.arange(5), sizes), ends)
        many.transfer(0, 1, 64)
    assert np.array_equal(one.ready, many.ready) and one.elapsed() == many.elapsed()
    with pytest.raises(ValueError, match="nodes, n_samples"):
        many.compute_many([0, 5], [1, 1])
    with pytest.raises(ValueError, match="nodes, n_samples"):
        many.compute_many([0, 1], [1.5, 1])
