"""Overlapping latency, and the flat / tree / ring schedules against their closed forms."""

import pytest

from mlpar.cluster import collectives
from mlpar.cluster.cost_model import CostModel, echo_round
from mlpar.cluster.simulated_cluster import SimulatedCluster

COST = CostModel(alpha=1e-3, beta=1e-8, latency=5e-3, per_sample=0.0)


def test_latency_overlaps_while_alpha_queues():
    c = SimulatedCluster(4, COST)
    arrivals = [c.send(c.server, i, 0, 0.0) for i in range(4)]
    # the link is held α per message; each message then spends the latency in flight
    assert arrivals == pytest.approx([(i + 1) * 1e-3 + 5e-3 for i in range(4)])
    assert c.breakdown().comm[c.server] == pytest.approx(4e-3)  # latency holds no link


def test_without_latency_the_old_model_is_unchanged():
    c = SimulatedCluster(2, CostModel(alpha=1.0, beta=0.0))
    assert c.send(c.server, 0, 0) == 1.0 and c.send(c.server, 1, 0) == 2.0


@pytest.mark.parametrize("m", [1, 2, 3, 8, 13, 64])
@pytest.mark.parametrize("nbytes", [40, 10**6])
def test_schedules_match_their_closed_forms(m, nbytes):
    flat = collectives.flat_reduce(SimulatedCluster(m, COST), nbytes)
    assert flat == pytest.approx(COST.flat_reduce_time(m, nbytes))
    tree = collectives.tree_reduce(SimulatedCluster(m, COST), nbytes)
    assert tree == pytest.approx(COST.tree_reduce_time(m, nbytes))
    ring = collectives.ring_allreduce(SimulatedCluster(m, COST, duplex=True), nbytes)
    assert ring == pytest.approx(COST.ring_allreduce_time(m, nbytes))


def test_ring_sends_at_most_twice_the_data_per_node():
    bandwidth_only = CostModel(alpha=0.0, beta=1e-9, latency=0.0)
    M = 10**8
    for m in (2, 16, 256):
        # 2(m − 1)/m · M bytes per node, at β seconds per byte
        assert bandwidth_only.ring_allreduce_time(m, M) <= 2 * M * 1e-9 * 1.0001
    assert bandwidth_only.flat_reduce_time(256, M) == pytest.approx(256 * M * 1e-9)


def test_half_duplex_links_serialize_a_ring():
    # With one link per node a worker cannot send and receive at once: the ring is slower.
    half = collectives.ring_allreduce(SimulatedCluster(8, COST), 10**6)
    assert half > COST.ring_allreduce_time(8, 10**6) * 1.5


def test_tree_adds_are_priced():
    plain = collectives.tree_reduce(SimulatedCluster(8, COST), 1000)
    adding = collectives.tree_reduce(SimulatedCluster(8, COST), 1000, add_per_byte=1e-6)
    assert adding == pytest.approx(plain + 3 * 1e-3)  # three levels, 1000 B × 1 µs each


def test_echo_round_model():
    assert echo_round(1, 1.0, 2.0) == 6.0  # 2α + 2·latency
    assert echo_round(2, 1.0, 2.0) == 7.0  # the second echo only adds one α
    assert echo_round(2, 1.0, 0.0) == 4.0  # nothing overlaps: 4 messages in turn


def test_bad_arguments():
    with pytest.raises(ValueError, match="latency"):
        CostModel(latency=-1.0)
    with pytest.raises(ValueError, match="n_nodes"):
        COST.ring_allreduce_time(0, 10)
    with pytest.raises(ValueError, match="nbytes"):
        collectives.tree_reduce(SimulatedCluster(2, COST), -1)
    with pytest.raises(TypeError, match="duplex"):
        SimulatedCluster(2, COST, duplex="yes")


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 13, 64])
@pytest.mark.parametrize("nbytes", [40, 10**6])
def test_all_reduces_match_their_closed_forms(m, nbytes):
    # Compare all-reduce with all-reduce (issue 28): the reduces leave the sum on one node only.
    flat = collectives.flat_allreduce(SimulatedCluster(m, COST), nbytes)
    assert flat == pytest.approx(COST.flat_allreduce_time(m, nbytes))
    tree = collectives.tree_allreduce(SimulatedCluster(m, COST), nbytes)
    assert tree == pytest.approx(COST.tree_allreduce_time(m, nbytes))
    assert flat > COST.flat_reduce_time(m, nbytes) and (m == 1 or tree > COST.tree_reduce_time(m, nbytes))


def test_tree_broadcast_reaches_every_worker_once():
    c = SimulatedCluster(6, CostModel(alpha=1.0, beta=0.0))
    collectives.tree_allreduce(c, 8)
    received = sorted(s.node for s in c.segments if s.kind == "comm")
    # reduce: 5 messages, broadcast: 5 messages, each counted at sender and receiver
    assert len(received) == 2 * (5 + 5)
