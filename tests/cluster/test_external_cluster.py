"""The lessons' Dask code paths against a cluster mlpar did not start: by address only.

One module-scoped cluster (``dask_cluster.command_line_cluster``): ``dask scheduler`` and two
``dask worker`` programs, separate OS processes on 127.0.0.1 with ports the OS chose. Each
lesson's Dask path runs against it and must give what the lesson promises: the same scores
or weights as the LocalCluster and the numpy reference, exactly where the lesson says so.

Then what goes wrong on real clusters: a worker without mlpar, or with another version, or
one the scheduler cannot reach; a scheduler that is not there; a worker killed in the middle
of a run. Each must end in a clear error (or a correct result) within a bounded time, never
in a hang or a silently different answer.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mlpar
from mlpar.algorithms.distributed import (
    gossip,
    gossip_dask,
    mapreduce,
    parameter_server,
    topologies,
)
from mlpar.algorithms.model_selection import cross_validation as ms
from mlpar.algorithms.model_selection import search
from mlpar.cluster import dask_cluster
from mlpar.cluster.dask_cluster import ClusterError, connect, dask_client, verify_workers
from mlpar.cluster.engines import DaskEngine
from mlpar.core import splits

N_WORKERS = 2


@pytest.fixture(scope="module")
def address():
    with dask_cluster.command_line_cluster(N_WORKERS) as found:
        yield found


@pytest.fixture
def client(address):
    with dask_client(address) as c:
        yield c
        # a test that killed a worker leaves the cluster whole for the next one: the nanny
        # restarts the worker process (at a new port)
        c.wait_for_workers(N_WORKERS, timeout=60)


def data(n=240, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ np.arange(1.0, d + 1) + 0.1 * rng.normal(size=n)


def test_the_cluster_is_separate_processes_on_loopback(address, client):
    assert address.startswith("tcp://127.0.0.1:")
    found = verify_workers(client)
    assert len(found) == N_WORKERS
    pids = client.run(os.getpid)
    # none of them is this process or one of its threads: separate programs, reached by address
    assert os.getpid() not in pids.values() and len(set(pids.values())) == N_WORKERS
    for worker in found.values():
        assert worker["mlpar"] == mlpar.__version__


def test_lesson03_cross_validation_and_grid_search_equal_serial(client):
    X, y = ms.load_dataset("breast_cancer")
    X, y = X[:150], y[:150]
    model = ms.make_model("logistic")
    folds = splits.kfold(len(y), 3, seed=0)
    serial = ms.cross_validate(model, X, y, folds)
    on_cluster = ms.cross_validate(model, X, y, folds, backend="dask")
    assert np.array_equal(on_cluster.scores, serial.scores)
    grid = {"clf__C": [0.1, 1.0]}
    serial_search = search.grid_search(model, grid, X, y, folds)
    cluster_search = search.grid_search(model, grid, X, y, folds, backend="dask")
    assert np.array_equal(cluster_search.scores, serial_search.scores)


def test_lesson05_mapreduce_equals_localcluster_and_numpy(address, monkeypatch):
    monkeypatch.delenv(dask_cluster.SCHEDULER_VARIABLE, raising=False)  # local: a LocalCluster
    X, y = data()
    reference = mapreduce.serial_gradient_descent(X, y, lr=0.5, n_iter=15)
    external = mapreduce.gradient_descent(X, y, engine="dask", address=address, lr=0.5, n_iter=15)
    local = mapreduce.gradient_descent(X, y, engine="dask", lr=0.5, n_iter=15)
    # the lesson: the same weights on every engine (same shards, same order of summation)
    assert np.array_equal(external.weights, local.weights)
    np.testing.assert_allclose(external.weights, reference.weights, rtol=1e-12)


def test_lesson06_parameter_server_sync_async_ssp(address):
    X, y = data()
    options = dict(n_updates=40, lr=0.05, batch_size=16, seed=3)
    simulated = parameter_server.train(X, y, mode="sync", **options)
    external = parameter_server.train(X, y, mode="sync", engine="dask", address=address, **options)
    # sync: every round applies the same gradients whatever the clock; the order within a
    # round may differ (as the lesson and tests/algorithms say), so equal up to rounding
    np.testing.assert_allclose(external.weights, simulated.weights, rtol=1e-10)
    start = parameter_server.loss(X, y, np.zeros(X.shape[1]))
    for mode, bound in (("async", None), ("ssp", 2)):
        run = parameter_server.train(X, y, mode=mode, staleness_bound=bound, engine="dask",
                                     address=address, **options)
        assert len(run.workers) == options["n_updates"]
        assert run.final_loss < start / 10, f"{mode} did not converge on the cluster"
        if mode == "ssp":
            assert run.staleness.max() <= bound
    actors = parameter_server.train_with_actors(X, y, n_workers=2, n_updates=40, lr=0.05,
                                                batch_size=16, seed=3, address=address)
    assert actors.final_loss < start / 10


def test_lesson07_gossip_on_the_cluster_equals_the_simulation(client):
    X, y = data(n=200, d=4)
    W = topologies.topology_matrix("ring", 4)  # 4 nodes on 2 workers: round-robin
    with gossip_dask.gossip_nodes(client, X, y, W) as nodes:
        real = gossip_dask.gossip_rounds(nodes, n_rounds=8, lr=0.1)
        vectors = [np.arange(16.0) * (i + 1) for i in range(4)]  # exact in floating point
        reduced, _ = gossip_dask.allreduce(nodes, vectors)
    simulated = gossip.dpsgd(X, y, W, lr=0.1, n_rounds=8)
    np.testing.assert_allclose(real.models, simulated.models, rtol=1e-12)
    assert all(np.array_equal(r, np.sum(vectors, axis=0) / 4) for r in reduced)
    assert gossip_dask.actors_left(client) == 0


# --- what goes wrong on real clusters ----------------------------------------------------------
def extra_worker(address, prelude: str, *options: str) -> subprocess.Popen:
    """One more ``dask worker`` (no nanny) whose Python first runs ``prelude``."""
    code = (f"import sys\n{prelude}\nfrom distributed.cli.dask_worker import main\n"
            "sys.argv[0] = 'dask-worker'\nmain()")
    return subprocess.Popen(
        [sys.executable, "-c", code, address, "--no-nanny", "--nthreads", "1",
         "--host", "127.0.0.1", "--no-dashboard", "--death-timeout", "30", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")


def joined(client, n, timeout=60):
    client.wait_for_workers(n, timeout=timeout)
    return sorted(client.scheduler_info()["workers"])


def stop(processes, client):
    for process in processes:
        os.kill(process.pid, signal.SIGCONT)  # a frozen one must run to end
        process.terminate()
    for process in processes:
        process.wait(15)
    deadline = time.monotonic() + 15
    while len(client.scheduler_info()["workers"]) > N_WORKERS and time.monotonic() < deadline:
        time.sleep(0.1)


# name: (prelude, the words the error must say about that worker): one per way a worker can be
# unfit; "frozen" is stopped (SIGSTOP) once it has joined, as a machine that stopped answering.
UNFIT = {
    "no mlpar": ("sys.modules['mlpar'] = None", "cannot import mlpar"),
    "other mlpar": ("import mlpar; mlpar.__version__ = '0.0.1'", "mlpar 0.0.1, not "),
    "numpy 1": ("import distributed, numpy; numpy.__version__ = '1.26.4'",
                "numpy 1.26.4, not numpy"),
    "frozen": ("", "did not answer within {limit:g} s"),
}


def test_unfit_workers_are_named_before_any_task_is_sent(address, client):
    fit = set(client.scheduler_info()["workers"])
    # The fit workers' first answer imports mlpar and numpy, which on one busy core can take
    # longer than the frozen worker's time limit: warm them first, and give every worker a limit
    # well above what a warm probe takes here, so only the frozen one can miss it.
    verify_workers(client, timeout=60)
    started = time.monotonic()
    verify_workers(client, timeout=60)
    limit = max(3.0, 10 * (time.monotonic() - started))
    extra, where = {}, {}
    try:
        for i, (prelude, _) in enumerate(UNFIT.values()):  # all at once; named to tell apart
            extra[i] = extra_worker(address, prelude, "--name", f"unfit-{i}")
        joined(client, N_WORKERS + len(UNFIT))
        names = {info["name"]: a for a, info in client.scheduler_info()["workers"].items()}
        extra = {case: extra[i] for i, case in enumerate(UNFIT)}
        where = {case: names[f"unfit-{i}"] for i, case in enumerate(UNFIT)}
        os.kill(extra["frozen"].pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(ClusterError) as error:
            verify_workers(client, timeout=limit)
        assert time.monotonic() - started < limit + 17
        lines = str(error.value).splitlines()
        assert f"{len(UNFIT)} of {len(UNFIT) + N_WORKERS} workers" in lines[0]
        for case, (_, words) in UNFIT.items():
            (line,) = [x for x in lines if where[case] in x]
            assert words.format(limit=limit) in line, (case, line)
        assert not any(w in str(error.value) for w in fit), "a fit worker was blamed"
        # the lesson code path that used to hang: the same error, before any task is sent
        os.kill(extra["frozen"].pid, signal.SIGCONT)
        X, y = data()
        started = time.monotonic()
        with pytest.raises(ClusterError, match="no task was sent"):
            mapreduce.gradient_descent(X, y, n_workers=3, engine="dask", address=address)
        assert time.monotonic() - started < 30
    finally:
        stop(extra.values(), client)


def test_no_scheduler_at_the_address_is_a_clear_error_in_bounded_time():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ClusterError, match=f"could not reach a Dask scheduler at tcp://127.0.0.1:{port}"):
        connect(f"tcp://127.0.0.1:{port}", timeout=1)
    assert time.monotonic() - started < 15


def test_verify_workers_bad_arguments(client):
    with pytest.raises(TypeError, match="client: expected a dask.distributed.Client"):
        verify_workers("tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="timeout: expected a number in"):
        verify_workers(client, timeout=0)
    with pytest.raises(ValueError, match="address: expected a scheduler address"):
        connect("  ")


# --- a worker killed mid-run -------------------------------------------------------------------
def kill_worker_after(client, seconds):
    """SIGKILL the second worker's process (not its nanny) after ``seconds``, in a thread."""
    victim = sorted(client.scheduler_info()["workers"])[1]
    pid = client.run(os.getpid, workers=[victim])[victim]
    timer = threading.Timer(seconds, os.kill, (pid, signal.SIGKILL))
    timer.start()
    return timer


def outcome_within(run, seconds):
    """``run()`` in a thread: its result or exception, or a failure if it is still going."""
    box = {}

    def target():
        try:
            box["result"] = run()
        except BaseException as exc:  # noqa: BLE001 - the outcome is what is tested
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no result and no error after {seconds} s: a hang"
    return box


@pytest.mark.parametrize("lesson", ["mapreduce", "parameter server"])
def test_a_worker_killed_mid_run_gives_a_clear_error_or_the_right_answer(address, client, lesson):
    X, y = data(n=2000)
    if lesson == "mapreduce":
        def run(**where):
            return mapreduce.gradient_descent(X, y, lr=0.5, n_iter=4000, **where).weights
    else:
        def run(**where):
            return parameter_server.train(X, y, mode="sync", n_updates=8000, lr=0.05,
                                          batch_size=16, seed=1, **where).weights
    timer = kill_worker_after(client, 1.0)
    try:
        box = outcome_within(lambda: run(engine="dask", address=address), 90)
    finally:
        timer.cancel()
    if "error" in box:
        assert isinstance(box["error"], ClusterError), repr(box["error"])
        # killed mid-run, or (on a slow, busy machine) while its data store was still starting
        assert any(words in str(box["error"]) for words in (
            "stopped answering during the run", "data stores did not start within")), box["error"]
        return
    # finished before the kill (a very fast machine): then right. The reference (the simulated
    # engine, 1 to 2 s here) is computed only in that case, after the cluster's run.
    reference = run()
    if lesson == "mapreduce":
        assert np.array_equal(box["result"], reference)
    else:  # sync rounds: the same up to the order of the sums within a round
        np.testing.assert_allclose(box["result"], reference, rtol=1e-10)


def test_a_worker_dead_before_the_run_starts_is_named(address, client):
    X, y = data()
    with DaskEngine(2, address) as engine:
        engine.start()
        victim = engine._address[1]
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        box = outcome_within(lambda: mapreduce.gradient_descent(X, y, engine=engine), 60)
    assert isinstance(box.get("error"), ClusterError), box
    assert victim in str(box["error"])


def test_the_lessons_find_the_cluster_through_the_environment(address, client, monkeypatch):
    # what `make notebooks-cluster` relies on: no address in the lesson's code, only the variable
    monkeypatch.setenv(dask_cluster.SCHEDULER_VARIABLE, address)
    with dask_client(n_workers=2) as found:
        assert found.scheduler.address == address
    with DaskEngine(2) as engine:
        assert engine.client.scheduler.address == address
        assert set(engine._address) == set(client.scheduler_info()["workers"])


def test_grading_with_a_scheduler_runs_on_the_cluster(address, tmp_path):
    import json

    from mlpar.course.grading import grade

    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"mlpar": {"lesson": "00_index"}},
          "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "def usable_threads(affinity, quota):\n    return 1"}]}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ann.ipynb").write_text(json.dumps(nb))
    rows = grade.grade(tmp_path / "sub", tmp_path / "g.csv", scheduler=address,
                       options=grade.Options(timeout=120, memory_mb=3072, seed=3),
                       echo=lambda *_: None)
    by_exercise = {r["exercise"]: r for r in rows}
    assert by_exercise["usable_threads"]["passed"] == 0  # a wrong answer, graded on a worker
    assert "returned 1, expected" in by_exercise["usable_threads"]["message"]


def test_a_task_s_own_runtime_error_is_not_blamed_on_a_worker(address, client):
    import asyncio

    with DaskEngine(2, address) as engine:
        # run in an actor's thread, where no event loop runs: the task itself raises
        task = engine.submit(0, asyncio.get_running_loop)
        with pytest.raises(RuntimeError, match="no running event loop") as error:
            engine.gather([task])
    assert not isinstance(error.value, ClusterError)


def _forget_on_scheduler():
    """``forget(address)``, run on the scheduler: drop a worker, as it does when its heartbeats
    stop for ``distributed.scheduler.worker-ttl`` (5 minutes by default, too long for a test).
    Built here without a module, so that it travels by value to the scheduler's process."""
    namespace = {}
    exec("async def forget(address, dask_scheduler=None):\n"
         "    return await dask_scheduler.remove_worker(address, stimulus_id='test-frozen')",
         namespace)
    return namespace["forget"]


@pytest.mark.parametrize("direct", [False, True], ids=["through the scheduler", "direct"])
def test_a_worker_that_freezes_mid_run_ends_it_once_the_scheduler_drops_it(address, client,
                                                                           monkeypatch, direct):
    import dask

    from mlpar.cluster import engines

    monkeypatch.setattr(engines, "WATCH_INTERVAL", 0.5)
    X, y = data(n=2000)
    # direct: calls go straight to the frozen worker, whose connection stays open: only the
    # engine's watch of the scheduler's worker list ends the wait
    with dask.config.set({"distributed.client.direct-to-workers": direct}), \
            DaskEngine(2, address) as engine:
        engine.start()
        victim = engine._address[1]
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGSTOP)  # a machine that stops answering, connections still open
        forget = threading.Timer(2.0, client.run_on_scheduler, (_forget_on_scheduler(), victim))
        forget.start()
        try:
            started = time.monotonic()
            box = outcome_within(
                lambda: mapreduce.gradient_descent(X, y, engine=engine, n_iter=50), 60)
        finally:
            forget.join()
            os.kill(pid, signal.SIGKILL)  # its nanny starts a fresh worker for the next test
    assert isinstance(box.get("error"), ClusterError), box
    assert victim in str(box["error"]) and time.monotonic() - started < 30
