import numpy as np
import pytest

from mlpar.algorithms.distributed import least_squares
from mlpar.cluster import tasks
from mlpar.cluster.engines import Ref, engine_scope, make_engine, payload_bytes


def test_put_submit_wait_any_and_gather(engine_factory):
    eng = engine_factory(2)
    # Worker i holds X = (i+1)·ones(4, 3), y = ones(4); at w = ones(3) every residual is 3a − 1.
    refs = [(eng.put(i, np.full((4, 3), i + 1.0)), eng.put(i, np.ones(4))) for i in range(2)]
    eng.start()
    w = np.ones(3)
    jobs = [eng.submit(i, least_squares.partial_gradient, *refs[i], w, samples=4) for i in range(2)]
    assert [j.worker for j in jobs] == [0, 1]
    results = eng.gather(jobs)
    for i, (g, sse) in enumerate(results):
        a = i + 1.0
        np.testing.assert_allclose(g, 4 * a * (3 * a - 1) * np.ones(3))
        assert sse == pytest.approx(4 * (3 * a - 1) ** 2)
    job = eng.submit(1, tasks.echo, "hello")
    assert eng.wait_any() == (job, "hello")
    with pytest.raises(RuntimeError, match="no task"):
        eng.wait_any()
    assert eng.elapsed() >= 0


def test_bad_input():
    with pytest.raises(ValueError, match="engine: expected one of 'simulated', 'processes'"):
        make_engine("mpi", 2)
    with pytest.raises(ValueError, match="n_workers"):
        make_engine("simulated", 0)
    eng = make_engine("simulated", 2)
    with pytest.raises(ValueError, match="worker"):
        eng.submit(2, tasks.noop)
    with pytest.raises(TypeError, match="func"):
        eng.submit(0, "not a function")
    with pytest.raises(ValueError, match="n_workers"):
        with engine_scope(eng, 3):
            pass
    with pytest.raises(TypeError, match="engine"):
        with engine_scope(3.5, 2):
            pass


def test_payload_bytes():
    assert payload_bytes((Ref(0), np.zeros(5), 1.5)) == 48
    assert payload_bytes(None) == 0


def test_gather_keeps_other_results_for_wait_any():
    from mlpar.cluster.cost_model import CostModel

    eng = make_engine("simulated", 2, cost=CostModel(alpha=1.0, beta=0.0, per_sample=1.0))
    slow = eng.submit(0, tasks.echo, "slow", samples=10, nbytes=0)
    fast = eng.submit(1, tasks.echo, "fast", samples=1, nbytes=0)
    assert eng.gather([slow]) == ["slow"]  # "fast" came back first, during this gather
    assert eng.wait_any() == (fast, "fast")
    with pytest.raises(RuntimeError, match="already collected"):
        eng.gather([slow])


def test_data_stores_that_never_start_give_a_cluster_error_not_a_bare_timeout(monkeypatch):
    # A worker killed while its store starts leaves distributed.wait to raise TimeoutError at
    # its limit (seen under load); the engine must turn that into its own clear error, closed.
    import distributed

    from mlpar.cluster.dask_cluster import ClusterError
    from mlpar.cluster.engines import DaskEngine

    def never_done(futures, timeout=None, return_when=None):
        raise TimeoutError()

    monkeypatch.setattr(distributed, "wait", never_done)
    with pytest.raises(ClusterError, match="data stores did not start within"):
        DaskEngine(1)
