import numpy as np
import pytest

from mlpar.algorithms.distributed import gossip as G
from mlpar.algorithms.distributed import gossip_dask as GD
from mlpar.algorithms.distributed import house_prices
from mlpar.algorithms.distributed import topologies as T
from mlpar.cluster.dask_cluster import dask_client


def test_actors_gossip_directly_count_bytes_and_leave_nothing(process_census):
    children, assert_no_new_children = process_census
    before = children()
    X, y = house_prices.load()
    n, d = 3, X.shape[1]
    W = T.topology_matrix("ring", n)
    with dask_client(n_workers=n) as client:
        with GD.gossip_nodes(client, X, y, W) as nodes:
            run = GD.gossip_rounds(nodes, n_rounds=5, lr=0.1)
            vectors = [np.arange(12.0) * (i + 1) for i in range(n)]
            results, sent = GD.allreduce(nodes, vectors)
        assert GD.actors_left(client) == 0
    assert_no_new_children(before)
    sim = G.dpsgd(X, y, W, lr=0.1, n_rounds=5)
    np.testing.assert_allclose(run.models, sim.models, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.models.mean(axis=0), sim.weights, rtol=1e-12)  # mean kept
    degree = 2
    assert run.data_bytes.tolist() == [degree * 8 * d] * n
    assert run.wire_bytes.tolist() == [degree * (8 * d + GD.PICKLE_OVERHEAD)] * n
    for r in results:
        np.testing.assert_array_equal(r, np.sum(vectors, axis=0) / n)
    assert sent["data_bytes"].tolist() == [2 * (n - 1) * 8 * 12 // n] * n


def test_bad_input_is_refused_before_any_actor_starts():
    X, y = house_prices.load()
    ring = T.topology_matrix("ring", 3)
    not_stochastic = ring.copy()
    not_stochastic[0, 0] += 0.1
    for call, error, words in (
        (lambda: GD.check_client(None), TypeError, "client: expected a dask.distributed.Client"),
        (lambda: GD.check_nodes("abc"), TypeError, "nodes: expected the list"),
        (lambda: GD.check_nodes([1, 2]), TypeError, "nodes: expected the list"),
        (lambda: GD.check_nodes([]), ValueError, "at least 2"),
        (lambda: GD.measure_and_predict(None, X, y), TypeError, "client"),
    ):
        with pytest.raises(error, match=words):
            call()
    with dask_client(n_workers=1) as client:
        with pytest.raises(ValueError, match="W"):
            with GD.gossip_nodes(client, X, y, not_stochastic):
                pass
        with pytest.raises(ValueError, match="topology"):
            GD.measure_and_predict(client, X, y, "moebius")
        with pytest.raises(ValueError, match="n_nodes"):
            GD.measure_and_predict(client, X, y, "ring", 1)
        with pytest.raises(ValueError, match="n_rounds"):
            GD.measure_and_predict(client, X, y, "ring", 3, n_rounds=0)
        with pytest.raises(ValueError, match="repeats"):
            GD.measure_and_predict(client, X, y, "ring", 3, repeats=0)
        with GD.gossip_nodes(client, X, y, ring) as nodes:
            with pytest.raises(ValueError, match="n_rounds"):
                GD.gossip_rounds(nodes, n_rounds=10**9, lr=0.1)
            with pytest.raises(ValueError, match="vectors: expected one per node"):
                GD.allreduce(nodes, [np.ones(3)])
            with pytest.raises(ValueError, match="vectors"):
                GD.allreduce(nodes, [np.ones(3), np.ones(3), np.array([np.nan, 1.0, 1.0])])
            with pytest.raises(TypeError, match="sizes"):
                GD.calibrate_links(nodes, sizes=8)
        assert GD.actors_left(client) == 0
