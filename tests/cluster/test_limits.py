"""Worker counts beyond the machine, bad input and interrupts: refused or cleaned up before
anything is left running."""

import numpy as np
import pytest

from mlpar.algorithms.distributed import house_prices, mapreduce, parameter_server
from mlpar.cluster.dask_cluster import dask_client
from mlpar.cluster.engines import DaskEngine, ProcessEngine, make_engine, planned_workers
from mlpar.core import limits


def test_the_cap_is_a_stated_multiple_of_the_cores():
    from mlpar.core import environment

    assert limits.max_workers() == limits.WORKERS_PER_CORE * environment.usable_cores()
    assert limits.workers("n_workers", 2) == 2
    with pytest.raises(ValueError, match=r"n_workers: expected at most \d+ \(8 per usable core"):
        limits.workers("n_workers", limits.max_workers() + 1)


@pytest.mark.parametrize("start", [
    lambda n: ProcessEngine(n),
    lambda n: DaskEngine(n),
    lambda n: make_engine("processes", n),
    lambda n: dask_client(n_workers=n).__enter__(),
])
def test_huge_worker_counts_are_refused_before_anything_starts(start, process_census):
    children, assert_no_new_children = process_census
    before = children()
    for n in (limits.max_workers() + 1, 10**12):
        with pytest.raises(ValueError, match="n_workers: expected at most"):
            start(n)
    assert_no_new_children(before, timeout=1.0)


def test_a_huge_address_is_a_type_error():
    with pytest.raises(TypeError, match="address"):
        with dask_client(10**12):
            pass


def test_the_simulated_engine_has_no_cap():
    assert planned_workers("simulated", 10_000) == 10_000


def test_too_many_workers_for_the_rows_refused_before_a_cluster_starts(monkeypatch):
    def must_not_start(*args, **kwargs):
        raise AssertionError("a cluster was started before the arguments were checked")

    import mlpar.cluster.engines as engines

    monkeypatch.setattr(engines, "make_engine", must_not_start)
    X, y = np.ones((5, 2)), np.ones(5)
    with pytest.raises(ValueError, match="n_workers: expected at most n_samples = 5"):
        mapreduce.gradient_descent(X, y, engine="dask", n_workers=6)
    with pytest.raises(ValueError, match="n_workers: expected at most n_samples = 5"):
        parameter_server.train(X, y, engine="processes", n_workers=6)
    with pytest.raises(ValueError, match="n_workers: expected at most n_samples = 5"):
        parameter_server.train_with_actors(X, y, n_workers=6)
    with pytest.raises(ValueError, match="message_bytes"):
        mapreduce.gradient_descent(X, y, engine="dask", message_bytes=-1)
    with pytest.raises(ValueError, match="multiple"):
        parameter_server.train(X, y, engine="dask", mode="sync", n_workers=2, n_updates=3)


def test_an_interrupt_during_dask_start_up_leaves_no_worker(monkeypatch, process_census):
    """The Stop button during start-up: KeyboardInterrupt once the workers are coming up."""
    from distributed import Client

    children, assert_no_new_children = process_census
    before = children()
    original = Client.wait_for_workers

    def interrupted(self, *args, **kwargs):
        original(self, *args, **kwargs)  # the workers are up: the worst moment to stop
        raise KeyboardInterrupt

    monkeypatch.setattr(Client, "wait_for_workers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        DaskEngine(2)
    assert_no_new_children(before)
    with pytest.raises(KeyboardInterrupt):
        with dask_client(n_workers=2):
            pass
    assert_no_new_children(before)


def test_an_interrupt_while_the_actors_are_made_leaves_no_worker(monkeypatch, process_census):
    from distributed import Client

    children, assert_no_new_children = process_census
    before = children()

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Client, "gather", interrupted)
    with pytest.raises(KeyboardInterrupt):
        DaskEngine(2)
    assert_no_new_children(before)


def test_data_too_small_for_the_calibration_is_refused():
    X, y = house_prices.load(2000)
    with pytest.raises(ValueError, match="n_workers"):
        mapreduce.gradient_descent(X[:1], y[:1], n_workers=2)
