"""A Dask cluster for the lessons: started by the code itself, or an existing one by address.

By default ``dask_client()`` starts a ``LocalCluster`` of worker *processes* on this machine,
bound to 127.0.0.1, and shuts it down when the ``with`` block ends. Give a scheduler address
(or set ``MLPAR_DASK_SCHEDULER``) to use a real multi-machine cluster instead; then only the
client is closed, the cluster keeps running.

    >>> with dask_client(n_workers=2) as client:
    ...     futures = client.map(square, range(10))

Every argument is checked before anything starts, and the workers are started inside the
``try`` that stops them: an interrupt (the notebook's Stop button) during start-up leaves no
worker process behind.

A cluster given by address is checked before any task is sent (``verify_workers``): every
worker must import mlpar, with this client's mlpar version and numpy major version. A worker
that cannot would otherwise fail to unpickle the first task that names an mlpar function, and
Dask, waiting for that worker, can wait for ever. An unreachable scheduler, a cluster without
workers or a worker that does not answer gives a ``ClusterError`` within a bounded time.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import platform
import types
from contextlib import contextmanager

from mlpar.core import limits, validation

SCHEDULER_VARIABLE = "MLPAR_DASK_SCHEDULER"  # a scheduler address: use that cluster instead
START_TIMEOUT = 60  # seconds for the workers to come up on a slow, busy laptop
# A scheduler given by address: seconds to reach it, for a first worker to be there, and for
# each worker to answer the version check. A busy department cluster answers in well under a
# second; these bound the wait when something is wrong, they are not expected durations.
CONNECT_TIMEOUT = 20
VERIFY_TIMEOUT = 20
MAX_TIMEOUT = 3600  # an hour: longer is a mistake (and overflows asyncio's clock if huge)


class ClusterError(RuntimeError):
    """A Dask cluster mlpar cannot use: unreachable, without workers, or with workers that
    cannot run mlpar's tasks (mlpar missing or another version, another numpy major version)."""


@contextmanager
def dask_client(
    address: str | None = None,
    *,
    n_workers: int = 2,
    threads_per_worker: int = 1,
    processes: bool = True,
):
    """Yield a ``distributed.Client``; close it (and the cluster it started) afterwards.

    ``n_workers`` is capped at ``limits.max_workers()`` for a cluster started here. With an
    ``address`` (or ``MLPAR_DASK_SCHEDULER``) the client of that cluster, once ``connect``
    has checked its workers; ``n_workers`` and the rest then do not apply.
    """
    if address is None:
        address = os.environ.get(SCHEDULER_VARIABLE) or None
    if address is not None and not isinstance(address, str):
        raise TypeError(f"address: expected a scheduler address string, got {address!r}")
    if address is None:
        n_workers = limits.workers("n_workers", n_workers)
        threads_per_worker = validation.positive_int("threads_per_worker", threads_per_worker)
        if not isinstance(processes, bool):
            raise TypeError(f"processes: expected True or False, got {processes!r}")
    from distributed import Client, LocalCluster

    if address is not None:
        with connect(address) as client:
            yield client
        return
    # The scheduler alone first (it lives in this process); the workers are started by
    # ``scale`` inside the try below, so whatever interrupts their start-up also stops them.
    # In-process workers (processes=False) need the TCP protocol named explicitly to bind to
    # 127.0.0.1. The dashboard gets a free port, so two clusters on one machine do not collide.
    cluster = LocalCluster(
        n_workers=0,
        threads_per_worker=threads_per_worker,
        processes=processes,
        host="127.0.0.1",
        protocol="tcp://",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    environ = dict(os.environ)
    try:
        # direct_to_workers: results and actor calls go straight to the worker that holds
        # them, instead of through the scheduler (on this machine, every worker is reachable).
        with Client(cluster, direct_to_workers=True) as client:
            cluster.scale(n_workers)
            client.wait_for_workers(n_workers, timeout=START_TIMEOUT)
            restore_environ(environ)
            yield client
    finally:
        cluster.close()
        restore_environ(environ)


def worker_addresses(client, *, timeout: float = START_TIMEOUT) -> list[str]:
    """The addresses of ``client``'s workers, sorted, asked of the scheduler now.

    A worker can be briefly gone: its nanny restarts it after a crash or a missed heartbeat
    on a busy machine. Wait up to ``timeout`` s for at least one, then ``ClusterError``,
    instead of handing the caller an empty list to divide by.
    """
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, asyncio.TimeoutError):
        raise ClusterError(f"the Dask scheduler at {client.scheduler.address} has had no worker "
                           f"for {timeout} s") from None
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:  # one left between the two questions
        raise ClusterError(f"the Dask scheduler at {client.scheduler.address} lost its last worker")
    return workers


def restore_environ(saved: dict) -> None:
    """Put ``os.environ`` back as ``saved``.

    Dask's nanny sets its workers' settings (``MALLOC_TRIM_THRESHOLD_``, one BLAS/OpenMP
    thread) in *this* process's environment before it spawns a worker, and leaves them there.
    Every process started afterwards would inherit them: with ``MALLOC_TRIM_THRESHOLD_`` set,
    glibc stops adapting its mmap threshold, so each large numpy temporary is mapped and
    unmapped again (lesson 08's pipeline stages slowed down after a Dask lesson), and loky or
    ``ProcessEngine`` workers would be held to one BLAS thread.
    """
    for key in [k for k in os.environ if k not in saved]:
        del os.environ[key]
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def connect(address: str, *, timeout: float = CONNECT_TIMEOUT):
    """A ``Client`` of the scheduler at ``address`` whose workers passed ``verify_workers``.

    Raises ``ClusterError`` (and closes the client) if the scheduler cannot be reached, no
    worker joins within ``timeout`` seconds, or a worker fails the check.
    """
    address = validation.text("address", address)
    if not address.strip():
        raise ValueError("address: expected a scheduler address such as "
                         "'tcp://127.0.0.1:8786', got an empty string")
    timeout = validation.number("timeout", timeout, low=0, low_open=True, high=MAX_TIMEOUT)
    from distributed import Client

    try:
        client = Client(address, timeout=timeout)
    except OSError as exc:  # distributed raises OSError (a TimeoutError among them)
        raise ClusterError(
            f"could not reach a Dask scheduler at {address} within {timeout:g} s ({exc}); is "
            f"`dask scheduler` running there, and is its port reachable from here (firewall, "
            f"SSH tunnel)?") from exc
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError as exc:
            raise ClusterError(
                f"the Dask scheduler at {address} has no worker after {timeout:g} s; start "
                f"some with `dask worker {address}`") from exc
        verify_workers(client, timeout=timeout)
    except BaseException:
        client.close()
        raise
    return client


def _probe() -> dict:
    """Runs on a worker: its Python, and whether and in which version it imports numpy, mlpar.

    It is sent by value (see ``verify_workers``), so it can import nothing at module level.
    """
    import platform
    import sys

    found = {"python": platform.python_version(), "executable": sys.executable}
    for name in ("numpy", "mlpar"):
        try:
            module = __import__(name)
            found[name] = str(getattr(module, "__version__", "unknown"))
        except Exception as exc:  # noqa: BLE001 - any failure to import is the answer
            found[name] = None
            found[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
    return found


# The probe's code without its module: pickled by reference (the default for a function of an
# importable module) it would make the worker import mlpar just to unpickle it, and a worker
# without mlpar would fail before it could say so. A function of no module is sent by value.
_PROBE = types.FunctionType(_probe.__code__, {"__builtins__": builtins}, "_probe")


def _major(version) -> str | None:
    return None if version is None else str(version).split(".")[0]


def verify_workers(client, *, timeout: float = VERIFY_TIMEOUT) -> dict[str, dict]:
    """Check that every worker of ``client`` can run mlpar's tasks; return what each reported.

    Each worker is asked (concurrently, each within ``timeout`` seconds) to import mlpar and
    numpy. It passes when it has this client's mlpar version and numpy major version (arrays
    pickled by numpy 2 do not load in numpy 1). Otherwise one ``ClusterError`` names every
    failing worker, what it has and what this client has; no task has been sent.

    Returns ``{worker address: {"python", "executable", "numpy", "mlpar"}}``.
    """
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client: expected a dask.distributed.Client (as dask_client yields), "
                        f"got {type(client).__name__}")
    timeout = validation.number("timeout", timeout, low=0, low_open=True, high=MAX_TIMEOUT)
    import numpy

    import mlpar

    want = {"mlpar": mlpar.__version__, "numpy": numpy.__version__}
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise ClusterError(f"the Dask scheduler at {client.scheduler.address} has no worker; "
                           f"start some with `dask worker {client.scheduler.address}`")

    async def ask(worker):
        try:
            answer = await client.run(_PROBE, workers=[worker], on_error="return",
                                      asynchronous=True, callback_timeout=timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return {"error": f"did not answer within {timeout:g} s (unreachable from the "
                             f"scheduler, or busy)"}
        answer = answer.get(worker)
        if isinstance(answer, BaseException) or not isinstance(answer, dict):
            # e.g. a worker on another Python version cannot load the check's code
            return {"error": f"could not run the check ({type(answer).__name__}: {answer}); "
                             f"another Python version there?"}
        return answer

    async def ask_all():
        return await asyncio.gather(*(ask(w) for w in workers))

    # The outer limit only guards the gathering itself: each worker has its own timeout.
    answers = dict(zip(workers, client.sync(ask_all, callback_timeout=timeout + 10),
                       strict=True))
    problems = []
    for worker, found in answers.items():
        if "error" in found:
            problems.append(f"{worker}: {found['error']}")
        elif found.get("mlpar") is None:
            problems.append(f"{worker}: cannot import mlpar ({found.get('mlpar_error')}) "
                            f"in {found.get('executable')}")
        elif found["mlpar"] != want["mlpar"]:
            problems.append(f"{worker}: mlpar {found['mlpar']}, not {want['mlpar']}")
        elif _major(found.get("numpy")) != _major(want["numpy"]):
            problems.append(f"{worker}: numpy {found.get('numpy')}, not numpy "
                            f"{_major(want['numpy'])}.x like this client ({want['numpy']})")
    if problems:
        raise ClusterError(
            f"{len(problems)} of {len(workers)} workers of the Dask scheduler at "
            f"{client.scheduler.address} cannot run mlpar's tasks (this client: mlpar "
            f"{want['mlpar']}, numpy {want['numpy']}, Python {platform.python_version()}):\n  "
            + "\n  ".join(problems)
            + "\nInstall the same mlpar version on every worker (docs/cluster.md, "
              "Several machines), or stop those workers; no task was sent.")
    return answers


@contextmanager
def command_line_cluster(n_workers: int = 2, *, timeout: float = START_TIMEOUT):
    """Start ``dask scheduler`` and ``n_workers`` × ``dask worker`` as separate programs on
    127.0.0.1, as one would by hand on a real cluster; yield the scheduler's address; stop them.

    Unlike ``dask_client()``'s ``LocalCluster``, nothing here lives in this process: the
    scheduler and every worker (each under its nanny, which restarts it if it dies) are OS
    processes of their own, reached only by address. Ports are chosen free by the OS (the
    scheduler writes its address to a file the workers read). Used by the tests with an
    external cluster and by ``scripts/cluster_notebooks.py``; every process is stopped when
    the block ends, whatever happens inside it.
    """
    n_workers = limits.workers("n_workers", n_workers)
    timeout = validation.number("timeout", timeout, low=0, low_open=True, high=MAX_TIMEOUT)
    import subprocess
    import sys
    import tempfile
    import time

    with tempfile.TemporaryDirectory(prefix="mlpar-dask-") as folder:
        scheduler_file = os.path.join(folder, "scheduler.json")
        env = {k: v for k, v in os.environ.items() if k != SCHEDULER_VARIABLE}
        processes: list[subprocess.Popen] = []

        def start(name: str, *arguments: str) -> subprocess.Popen:
            log = open(os.path.join(folder, f"{name}.log"), "wb")  # noqa: SIM115 - closed below
            try:
                return subprocess.Popen([sys.executable, "-m", "dask", *arguments], cwd=folder,
                                        env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
            finally:
                log.close()  # the child holds its own copy

        def fail(what: str) -> ClusterError:
            logs = "".join(
                f"\n--- {name}:\n" + _tail(os.path.join(folder, name))
                for name in sorted(os.listdir(folder)) if name.endswith(".log"))
            return ClusterError(f"{what} (timeout {timeout:g} s){logs}")

        try:
            processes.append(start("scheduler", "scheduler", "--host", "127.0.0.1",
                                   "--port", "0", "--no-dashboard",
                                   "--scheduler-file", scheduler_file))
            deadline = time.monotonic() + timeout
            while not os.path.exists(scheduler_file):
                if processes[0].poll() is not None or time.monotonic() > deadline:
                    raise fail("the Dask scheduler did not start")
                time.sleep(0.1)
            address = _read_address(scheduler_file, deadline)
            for i in range(n_workers):
                processes.append(start(
                    f"worker-{i}", "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                    "--name", f"worker-{i}", "--no-dashboard", "--local-directory", folder,
                    "--death-timeout", f"{max(timeout, 1.0):g}"))
            from distributed import Client

            with Client(address, timeout=timeout, set_as_default=False) as client:
                try:
                    client.wait_for_workers(n_workers, timeout=timeout)
                except TimeoutError:
                    raise fail(f"{n_workers} Dask workers did not join {address}") from None
            yield address
        finally:
            _stop(processes[1:])  # workers (and the processes their nannies started) first
            _stop(processes[:1])


def _read_address(path: str, deadline: float) -> str:
    import json
    import time

    while True:  # the file may be seen before it is completely written
        try:
            with open(path) as f:
                return json.load(f)["address"]
        except (ValueError, KeyError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _tail(path: str, n: int = 1500) -> str:
    with open(path, "rb") as f:
        return f.read()[-n:].decode(errors="replace")


def _stop(processes, grace: float = 10.0) -> None:
    """Ask each process to stop (SIGTERM), wait, then kill it and whatever it started."""
    import subprocess

    import psutil

    family = []
    for p in processes:
        try:
            family += psutil.Process(p.pid).children(recursive=True)
        except psutil.Error:
            pass
        if p.poll() is None:
            p.terminate()
    for p in processes:
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    _, alive = psutil.wait_procs(family, timeout=grace)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace)
