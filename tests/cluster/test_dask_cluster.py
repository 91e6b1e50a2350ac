import psutil
import pytest

from mlpar.cluster.dask_cluster import dask_client


def _children():
    # multiprocessing's resource tracker is started once per interpreter and stays by design
    return {
        p.pid
        for p in psutil.Process().children(recursive=True)
        if "resource_tracker" not in " ".join(p.cmdline())
    }


@pytest.mark.parametrize("processes", [True, False])
def test_local_cluster_runs_on_loopback_and_closes(processes):
    before = _children()
    with dask_client(n_workers=2, processes=processes) as client:
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        assert client.submit(sum, [1, 2, 3]).result() == 6
        assert len(client.scheduler_info()["workers"]) == 2
    assert client.status == "closed"
    # worker processes are gone once the block ends
    assert _children() - before == set()


def test_existing_scheduler_by_address():
    with dask_client(n_workers=1) as outer:
        with dask_client(outer.scheduler.address) as inner:
            assert inner.submit(len, "abc").result() == 3
        assert outer.submit(len, "ab").result() == 2


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_workers: expected a positive integer, got 0"):
        with dask_client(n_workers=0):
            pass
    with pytest.raises(TypeError, match="address: expected a scheduler address string"):
        with dask_client(8786):
            pass


def test_dask_leaves_this_process_environment_as_it_found_it():
    import os

    from mlpar.cluster.dask_cluster import dask_client

    before = dict(os.environ)
    with dask_client(n_workers=1):
        assert "MALLOC_TRIM_THRESHOLD_" not in os.environ or "MALLOC_TRIM_THRESHOLD_" in before
    assert dict(os.environ) == before


def test_a_cluster_that_cannot_start_in_time_is_stopped_and_explained(process_census):
    from mlpar.cluster.dask_cluster import ClusterError, command_line_cluster

    children, assert_no_new_children = process_census
    before = children()
    with pytest.raises(ClusterError, match=r"did not (start|join).*timeout 0.01 s"):
        with command_line_cluster(1, timeout=0.01):
            pass
    assert_no_new_children(before)


class _Scheduler:
    address = "tcp://127.0.0.1:1"


class _FakeClient:
    """Answers like a Client whose workers are (or are not) there."""

    scheduler = _Scheduler()

    def __init__(self, workers, *, arrive=True):
        self.workers, self.arrive = workers, arrive

    def wait_for_workers(self, n, timeout=None):
        if not self.arrive:
            raise TimeoutError(f"only 0 of {n} workers after {timeout} s")

    def scheduler_info(self):
        return {"workers": {w: {} for w in self.workers}}


def test_worker_addresses_are_sorted_and_never_an_empty_list():
    from mlpar.cluster.dask_cluster import ClusterError, worker_addresses

    assert worker_addresses(_FakeClient(["tcp://b:2", "tcp://a:1"])) == ["tcp://a:1", "tcp://b:2"]
    # The nanny is restarting the only worker, and it does not come back: said, not a modulo by 0.
    with pytest.raises(ClusterError, match="no worker for 0.5 s"):
        worker_addresses(_FakeClient([], arrive=False), timeout=0.5)
    # It came and went between the wait and the question.
    with pytest.raises(ClusterError, match="lost its last worker"):
        worker_addresses(_FakeClient([]))
