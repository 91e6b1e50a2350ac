import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.algorithms.distributed import house_prices, mapreduce
from mlpar.cluster import tasks
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.engines import SimulatedEngine
from mlpar.cluster.simulated_cluster import SimulatedCluster

matplotlib.use("Agg")


def test_hand_computed_round_with_a_straggler():
    # 1 s per message, 2 s of compute (10 s on worker 2): see the module docstring.
    cost = CostModel(alpha=1.0, beta=0.0, per_sample=1.0, straggler=2, slowdown=5.0)
    eng = SimulatedEngine(3, cost)
    jobs = [eng.submit(i, tasks.noop, samples=2, nbytes=0) for i in range(3)]
    eng.gather(jobs)
    assert eng.elapsed() == 14.0  # straggler starts at 3, computes 10, replies for 1
    b = eng.cluster.breakdown()
    np.testing.assert_array_equal(b.compute, [2, 2, 10, 0])
    np.testing.assert_array_equal(b.comm, [2, 2, 2, 6])
    np.testing.assert_array_equal(b.wait, [10, 10, 2, 8])
    assert b.makespan == 14.0


def test_replies_queue_first_come_first_served():
    # Worker 0 is submitted first but is slow: worker 1's reply must not wait behind it.
    cost = CostModel(alpha=1.0, beta=0.0, per_sample=1.0, straggler=0, slowdown=10.0)
    eng = SimulatedEngine(2, cost)
    eng.submit(0, tasks.noop, samples=1, nbytes=0)
    eng.submit(1, tasks.noop, samples=1, nbytes=0)
    first, _ = eng.wait_any()
    assert first.worker == 1 and eng.elapsed() == 4.0  # received at 2, computed to 3, reply 3→4
    assert eng.wait_any()[0].worker == 0 and eng.elapsed() == 12.0


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 12),
    message=st.floats(0.0, 5.0),
    compute=st.floats(0.0, 50.0),
)
def test_equal_workers_round_time_has_a_closed_form(m, message, compute):
    # Broadcast m messages, compute, m replies, all through the server's one link:
    # round = max((m + 1)·T + c, 2·m·T).
    cost = CostModel(alpha=message, beta=0.0, per_sample=compute)
    eng = SimulatedEngine(m, cost)
    for _ in range(3):
        eng.gather([eng.submit(i, tasks.noop, samples=1, nbytes=0) for i in range(m)])
    expected = max((m + 1) * message + compute, 2 * m * message)
    assert eng.elapsed() == pytest.approx(3 * expected, rel=1e-9, abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 16), jitter=st.floats(0.0, 2.0))
def test_deterministic_for_a_seed(seed, m, jitter):
    X, y = house_prices.load()
    cost = CostModel(alpha=1e-4, per_sample=1e-6, straggler=0, slowdown=3.0, jitter=jitter,
                     seed=seed)
    a = mapreduce.gradient_descent(X, y, n_workers=m, n_iter=3, cost=cost)
    b = mapreduce.gradient_descent(X, y, n_workers=m, n_iter=3, cost=cost)
    np.testing.assert_array_equal(a.times, b.times)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.cluster.segments == b.cluster.segments
    total = a.breakdown.compute + a.breakdown.comm + a.breakdown.wait
    np.testing.assert_allclose(total[:-1], a.breakdown.makespan)  # workers never overlap work


def test_a_different_seed_changes_only_the_clock():
    X, y = house_prices.load()
    runs = [
        mapreduce.gradient_descent(
            X, y, n_workers=8, n_iter=3, cost=CostModel(per_sample=1e-5, jitter=1.0, seed=s)
        )
        for s in (1, 2)
    ]
    assert runs[0].times[-1] != runs[1].times[-1]
    np.testing.assert_array_equal(runs[0].weights, runs[1].weights)


def test_event_queue_is_ordered_and_ties_are_fifo():
    c = SimulatedCluster(2)
    for t, item in [(2.0, "c"), (1.0, "a"), (1.0, "b")]:
        c.schedule(t, item)
    assert [c.pop()[1] for _ in range(3)] == ["a", "b", "c"]
    assert c.now == 2.0
    with pytest.raises(ValueError, match="time"):
        c.schedule(1.0, "late")
    with pytest.raises(IndexError):
        c.pop()


def test_bad_input():
    with pytest.raises(ValueError, match="n_workers"):
        SimulatedCluster(0)
    with pytest.raises(TypeError, match="cost"):
        SimulatedCluster(2, cost="fast")
    c = SimulatedCluster(2)
    with pytest.raises(ValueError, match="seconds"):
        c.compute(0, -1.0)
    with pytest.raises(ValueError, match="dst"):
        c.send(1, 1, 10)
    with pytest.raises(ValueError, match="node"):
        c.compute(5, 1.0)


def test_timeline_plot_and_breakdown_repr():
    X, y = house_prices.load()
    cost = CostModel(straggler=3, slowdown=4)
    r = mapreduce.gradient_descent(X, y, n_workers=20, n_iter=2, cost=cost)
    ax = r.cluster.plot_timeline(max_workers=5)
    assert len(ax.get_yticklabels()) == 6
    assert "waiting" in repr(r.breakdown)
    matplotlib.pyplot.close("all")
    with pytest.raises(ValueError, match="record"):
        SimulatedCluster(2, record=False).plot_timeline()


def test_peer_to_peer_messages_share_each_node_link():
    # A ring exchange without the server, as a gossip round would do it: every node's one link
    # carries its outgoing and its incoming message, so the three sends cannot all overlap.
    c = SimulatedCluster(3, CostModel(alpha=1.0, beta=0.0))
    arrivals = [c.send(i, (i + 1) % 3, 0, start=0.0) for i in range(3)]
    assert arrivals == [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(c.breakdown().comm, [2, 2, 2, 0])


def test_a_server_without_a_core_of_its_own_shares_the_last_workers():
    # 2 workers on 2 cores, α = 1 s, latency 0, compute 3 s each. Own core: w at 1 and 2,
    # done at 4 and 5, replies [4, 5] and [5, 6]: 6 s. Shared with worker 1: its compute
    # [2, 5] holds the server's link, so worker 0's reply waits until 5: [5, 6], then [6, 7].
    cost = CostModel(alpha=1.0, beta=0.0, per_sample=1.0)
    times = {}
    for cores in (None, 3, 2):
        eng = SimulatedEngine(2, cost, cores=cores)
        eng.gather([eng.submit(i, tasks.noop, samples=3, nbytes=0) for i in range(2)])
        times[cores] = eng.elapsed()
    assert times == {None: 6.0, 3: 6.0, 2: 7.0}
    assert SimulatedCluster(2, cost, cores=2).shares_core == 1
    assert SimulatedCluster(2, cost, cores=3).shares_core is None
    with pytest.raises(ValueError, match="cores"):
        SimulatedCluster(2, cost, cores=0)


def test_gradient_descent_on_shared_cores_is_never_faster_and_computes_the_same():
    X, y = house_prices.load(20_000)
    cost = CostModel(alpha=1e-4, beta=1e-9, per_sample=1e-8, latency=2e-5)
    own = mapreduce.gradient_descent(X, y, n_workers=2, n_iter=4, cost=cost)
    shared = mapreduce.gradient_descent(X, y, n_workers=2, n_iter=4, cost=cost, cores=2)
    assert shared.time_per_iteration > own.time_per_iteration
    np.testing.assert_array_equal(shared.weights, own.weights)
