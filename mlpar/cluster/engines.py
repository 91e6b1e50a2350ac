"""One interface, three engines: an algorithm is written once and runs anywhere.

A distributed algorithm in this course talks to its workers through five calls:

    ref  = engine.put(worker, array)               # place data on a worker once
    task = engine.submit(worker, func, *args, samples=n)   # send a task (args travel)
    task, result = engine.wait_any()               # the first task to come back
    results = engine.gather(tasks)                 # wait for these, in this order
    engine.elapsed()                               # seconds since start: virtual or real

The process that calls them plays the server (client–server, message passing). Engines:

* ``"simulated"``: :class:`~mlpar.cluster.simulated_cluster.SimulatedCluster`; the function really runs
  (in this process) but the clock is virtual, priced by a ``CostModel``;
* ``"processes"``: one single-process ``ProcessPoolExecutor`` (spawn) per worker, so a worker
  keeps its own data, as a machine would; real parallelism on this computer;
* ``"dask"``: ``dask.distributed`` workers, each holding a ``WorkerStore`` *actor* with its
  data; a task is a method call sent straight to that worker (see ``DaskEngine``). A
  ``LocalCluster`` on 127.0.0.1 started and closed here, or a scheduler address.

The real engines refuse more than ``limits.max_workers()`` workers before starting any.

All engines are context managers and close their pools or cluster on exit.
"""

from __future__ import annotations

import pickle
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.simulated_cluster import SimulatedCluster
from mlpar.cluster.tasks import Ref, WorkerStore, noop
from mlpar.core import limits, validation

ENGINES = ("simulated", "processes", "dask")
WATCH_INTERVAL = 5.0  # seconds between checks, while a Dask call is out, that its workers are there


@dataclass(frozen=True)
class Task:
    """A handle to a submitted task: its number (submission order) and its worker."""

    id: int
    worker: int


def payload_bytes(obj) -> int:
    """Bytes a message carrying ``obj`` moves: arrays count their data, refs count nothing."""
    if isinstance(obj, Ref) or type(obj).__name__ == "Future":
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(payload_bytes(o) for o in obj)
    if obj is None:
        return 0
    if isinstance(obj, (int, float, np.number)):
        return 8
    return len(pickle.dumps(obj))


class Engine:
    """Common bookkeeping; subclasses implement ``_put``, ``_submit``, ``_wait_any``."""

    name = "engine"
    _gather_futures = None

    def __init__(self, n_workers: int):
        self.n_workers = validation.positive_int("n_workers", n_workers)
        self._ids = 0
        self._pending: dict[Task, object] = {}
        self._early: dict[Task, object] = {}  # came back during a gather that did not ask for them
        self._t0 = time.perf_counter()

    def _worker(self, worker) -> int:
        return validation.integer("worker", worker, minimum=0, maximum=self.n_workers - 1)

    def put(self, worker: int, value):
        """Place ``value`` on ``worker`` (before the timing starts); returns a reference."""
        return self._put(self._worker(worker), value)

    def submit(self, worker: int, func, *args, samples: int = 0, nbytes: int | None = None):
        """Run ``func(*args)`` on ``worker``; ``samples`` prices the simulated compute and
        ``nbytes`` (simulated engine) overrides the message size in both directions."""
        worker = self._worker(worker)
        validation.callable_("func", func)
        samples = validation.integer("samples", samples, minimum=0)
        if nbytes is not None:
            nbytes = validation.integer("nbytes", nbytes, minimum=0)
        task = Task(self._ids, worker)
        self._ids += 1
        self._pending[task] = self._submit(task, func, args, samples, nbytes)
        return task

    def wait_any(self):
        """Block until a task has come back; return ``(task, result)``."""
        if self._early:
            task = min(self._early, key=lambda t: t.id)
            return task, self._early.pop(task)
        if not self._pending:
            raise RuntimeError("wait_any: no task is running; submit one first")
        return self._wait_any()

    def gather(self, tasks) -> list:
        """Results of ``tasks`` in the order given (waiting for all of them)."""
        tasks = list(tasks)
        got = {t: self._early.pop(t) for t in tasks if t in self._early}
        missing = [t for t in tasks if t not in got]
        if not all(t in self._pending for t in missing):
            raise RuntimeError("gather: expected tasks that are running, got one already collected")
        if self._gather_futures is not None:  # real engines wait on their own futures directly
            results = self._gather_futures([self._pending.pop(t) for t in missing])
            got.update(zip(missing, results, strict=True))
        wanted = set(missing)
        while wanted - set(got):
            task, result = self._wait_any()
            if task in wanted:
                got[task] = result
            else:  # another task finished first: keep it for a later wait_any
                self._early[task] = result
        return [got[t] for t in tasks]

    def start(self):
        """Start every worker now (and wait), so that start-up is not timed later."""
        return self

    def elapsed(self) -> float:
        """Seconds since the engine started (wall clock for real engines)."""
        return time.perf_counter() - self._t0

    def reset_clock(self) -> None:
        self._t0 = time.perf_counter()

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_workers={self.n_workers})"


class SimulatedEngine(Engine):
    """Runs tasks in this process, in virtual-time order, on a :class:`SimulatedCluster`."""

    name = "simulated"

    def __init__(self, n_workers: int, cost: CostModel | None = None, *, record: bool = True,
                 cores: int | None = None):
        super().__init__(n_workers)
        # cores: the machine the simulated nodes share (SimulatedCluster), None for one each
        self.cluster = SimulatedCluster(self.n_workers, cost, record=record, cores=cores)
        self._store: dict[int, object] = {}

    def _put(self, worker, value):
        self._store[len(self._store)] = value
        return Ref(len(self._store) - 1)

    def _submit(self, task, func, args, samples, nbytes):
        c = self.cluster
        size_in = payload_bytes(args) if nbytes is None else nbytes
        arrival = c.send(c.server, task.worker, size_in, start=c.now)
        done = c.work(task.worker, samples, start=arrival)
        result = func(*[self._store[a.key] if isinstance(a, Ref) else a for a in args])
        size_out = payload_bytes(result) if nbytes is None else nbytes
        c.schedule(done, ("computed", task, result, size_out))
        return None

    def _wait_any(self):
        c = self.cluster
        while True:
            now, (what, task, result, size) = c.pop()
            if what == "computed":  # the reply queues for the links now, first come first served
                arrival = c.send(task.worker, c.server, size, start=now)
                c.schedule(arrival, ("arrived", task, result, 0))
            else:
                del self._pending[task]
                return task, result

    def elapsed(self) -> float:
        return self.cluster.now

    def reset_clock(self) -> None:
        pass  # the virtual clock starts at 0 with the cluster


# -- real processes ---------------------------------------------------------------------------
_WORKER = WorkerStore()  # in a worker process: the data put there (the server never uses its own)
_BLAS_LIMIT = []


def _init_worker() -> None:
    """Runs once in each worker process: one BLAS thread, as each worker has one core."""
    from threadpoolctl import threadpool_limits

    _BLAS_LIMIT.append(threadpool_limits(limits=1))


def _store(key: int, value) -> None:
    """Runs on a worker: keep ``value`` in this process for later tasks (see ``Ref``)."""
    _WORKER.put(key, value)


def _run_task(func, args):
    return _WORKER.run(func, args)


class ProcessEngine(Engine):
    """Worker i = its own one-process ``ProcessPoolExecutor``, holding only the data put there."""

    name = "processes"

    def __init__(self, n_workers: int):
        super().__init__(limits.workers("n_workers", n_workers))
        self._pools: list[ProcessPoolExecutor | None] = [None] * self.n_workers
        self._keys = 0

    def _pool(self, worker: int) -> ProcessPoolExecutor:
        if self._pools[worker] is None:
            import multiprocessing

            self._pools[worker] = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
            )
        return self._pools[worker]

    def _put(self, worker, value):
        # Worker i is a pool of exactly one process, so this task runs where later tasks will.
        ref = Ref(self._keys)
        self._keys += 1
        self._pool(worker).submit(_store, ref.key, value).result()
        return ref

    def start(self) -> ProcessEngine:
        self.gather([self.submit(w, noop) for w in range(self.n_workers)])
        return self

    def _submit(self, task, func, args, samples, nbytes):
        return self._pool(task.worker).submit(_run_task, func, args)

    def _wait_any(self):
        futures = {f: t for t, f in self._pending.items()}
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        task = min((futures[f] for f in done), key=lambda t: t.id)
        return task, self._pending.pop(task).result()

    @staticmethod
    def _gather_futures(futures):
        return [f.result() for f in futures]

    def close(self) -> None:
        for i, pool in enumerate(self._pools):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
                self._pools[i] = None


class DaskEngine(Engine):
    """``dask.distributed`` workers, each holding its data in a ``WorkerStore`` actor.

    Why actors and not ``client.submit``: a submitted task goes client → scheduler → worker →
    scheduler → client, and Dask batches the client's messages to the scheduler (at most one
    batch per 10 ms, fixed in ``distributed``), so a round of one small task per worker cannot
    take less than about 10 ms. An actor's method call is one request to the worker that
    holds it and one reply: the scheduler is not on the path. Data is put once per worker
    (``put``) and tasks name it by ``Ref``; only ``w`` and the results travel per round.

    On a cluster given by address, Dask's default for a client is to send actor calls through
    the scheduler (one more hop, but it works when only the scheduler's port is reachable, as
    through an SSH tunnel); Dask's setting ``distributed.client.direct-to-workers``
    (``DASK_DISTRIBUTED__CLIENT__DIRECT_TO_WORKERS=True``) sends them straight to the workers,
    as on the LocalCluster. The cost model is calibrated on the path in use either way.
    """

    name = "dask"

    def __init__(self, n_workers: int, address: str | None = None):
        from mlpar.cluster.dask_cluster import (
            START_TIMEOUT,
            ClusterError,
            dask_client,
            worker_addresses,
        )

        if address is None:
            n_workers = limits.workers("n_workers", n_workers)
        super().__init__(n_workers)
        self.local = address is None  # a LocalCluster on this machine's cores
        self._scope = None
        self._keys = 0
        try:  # everything that starts something, inside the try that stops it
            self._scope = dask_client(address, n_workers=self.n_workers)
            self.client = self._scope.__enter__()
            addresses = worker_addresses(self.client)
            # On a smaller real cluster several logical workers share a machine, round-robin.
            self._address = [addresses[i % len(addresses)] for i in range(self.n_workers)]
            made = [self.client.submit(WorkerStore, actor=True, workers=[a], pure=False)
                    for a in self._address]
            # Each actor is pinned to its worker: if that worker dies now, Dask would keep the
            # task waiting for it for ever. Bounded, and said.
            import asyncio

            from distributed import wait as dask_wait

            try:  # distributed.wait raises TimeoutError at its limit rather than returning
                not_done = dask_wait(made, timeout=START_TIMEOUT, return_when="ALL_COMPLETED")
            except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
                not_done = None
            if not_done is None or not_done.not_done:
                raise ClusterError(
                    f"the workers' data stores did not start within {START_TIMEOUT} s on "
                    f"{self._lost_workers() or 'workers that are still listed'}")
            self._stores = self.client.gather(made)
        except BaseException:
            self.close()
            raise

    def _put(self, worker, value):
        ref = Ref(self._keys)
        self._keys += 1
        try:
            self._watched(self._stores[worker].put(ref.key, value))
        except (OSError, RuntimeError) as exc:
            if (lost := self._worker_lost(exc)) is None:
                raise
            raise lost from exc
        return ref

    def start(self) -> DaskEngine:
        self.gather([self.submit(w, noop) for w in range(self.n_workers)])
        return self

    def _submit(self, task, func, args, samples, nbytes):
        return self._stores[task.worker].run(func, args)  # an ActorFuture; the call is on its way

    def _wait_any(self):
        import asyncio

        async def first(futures):
            waiting = {asyncio.ensure_future(_awaited(f)): t for t, f in futures.items()}
            try:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:  # also when the watch interval runs out: stop waiting, the calls go on
                for w in waiting:
                    if not w.done():
                        w.cancel()
            for d in done:  # read every outcome (an error is raised below, by .result())
                d.exception()
            return min((waiting[d] for d in done), key=lambda t: t.id)

        try:
            while not any(f.done() for f in self._pending.values()):
                try:
                    task = self.client.sync(first, dict(self._pending),
                                            callback_timeout=WATCH_INTERVAL)
                    break
                except (TimeoutError, asyncio.TimeoutError):  # the same class from Python 3.11
                    self._check_workers()
            else:
                task = min((t for t, f in self._pending.items() if f.done()), key=lambda t: t.id)
            return task, self._pending.pop(task).result()
        except (OSError, RuntimeError) as exc:
            if (lost := self._worker_lost(exc)) is None:
                raise
            raise lost from exc

    def _gather_futures(self, futures):
        # The calls run concurrently on their workers already; collecting in order costs nothing.
        try:
            return [self._watched(f) for f in futures]
        except (OSError, RuntimeError) as exc:
            if (lost := self._worker_lost(exc)) is None:
                raise
            raise lost from exc

    def _watched(self, future):
        """``future.result()``, checking every ``WATCH_INTERVAL`` s that the workers are there.

        A worker killed outright closes its connections and the call fails at once; a
        machine that freezes or drops off the network closes nothing, and the call would wait
        for ever. The scheduler notices such a worker when its heartbeats stop (Dask's
        ``distributed.scheduler.worker-ttl``, 5 minutes by default) and removes it; the run
        then stops with a ``ClusterError`` instead of waiting on.
        """
        import asyncio

        while True:
            try:
                return future.result(timeout=WATCH_INTERVAL)
            except (TimeoutError, asyncio.TimeoutError):  # the same class from Python 3.11
                self._check_workers()

    def _check_workers(self) -> None:
        gone = self._lost_workers()
        if gone:
            raise self._worker_lost(TimeoutError(f"no answer, and the scheduler has removed {gone}"))

    def _lost_workers(self) -> str:
        """This engine's worker addresses that the scheduler no longer lists."""
        try:
            alive = set(self.client.scheduler_info()["workers"])
        except Exception:  # noqa: BLE001 - the scheduler itself may be gone
            alive = set()
        return ", ".join(sorted({a for a in self._address if a not in alive}))

    def _worker_lost(self, exc: BaseException):
        """The error for a worker that died mid-run (a SIGKILL, a machine gone); None when
        ``exc`` was something else (a ``RuntimeError`` raised by the task, say).

        Its shard and state lived in an actor on it: Dask reschedules ordinary tasks, but an
        actor dies with its worker (a nanny restarts the process empty). Going on with the
        other workers would silently change the result, so the run stops, saying why.
        """
        from mlpar.cluster.dask_cluster import ClusterError

        if isinstance(exc, ClusterError):  # already said
            return None
        gone = self._lost_workers()
        if not gone and not isinstance(exc, OSError):
            return None
        return ClusterError(
            f"a Dask worker stopped answering during the run ({type(exc).__name__}: {exc}); "
            f"gone from the cluster: {gone or 'none yet (the scheduler has not noticed)'}. The "
            f"data and state placed on it were lost with it, so this run cannot finish "
            f"correctly: run it again on the workers that are left.")

    def close(self) -> None:
        if self._scope is not None:
            scope, self._scope = self._scope, None
            self._pending.clear()
            self._stores = []
            scope.__exit__(None, None, None)


async def _awaited(future):
    return await future


#: The most workers a simulated engine (or a remote Dask cluster) may be asked for.
MAX_SIMULATED_WORKERS = 100_000


def make_engine(engine: str, n_workers: int, *, cost: CostModel | None = None,
                address: str | None = None, record: bool = True,
                cores: int | None = None) -> Engine:
    """A new engine by name: 'simulated' (uses ``cost`` and ``cores``), 'processes' or 'dask'
    (``address``)."""
    validation.choice("engine", engine, ENGINES)
    n_workers = planned_workers(engine, validation.positive_int("n_workers", n_workers),
                                address=address)
    if engine == "simulated":
        return SimulatedEngine(n_workers, cost, record=record, cores=cores)
    if engine == "processes":
        return ProcessEngine(n_workers)
    return DaskEngine(n_workers, address)


def planned_workers(engine, n_workers: int | None = None, *, address: str | None = None) -> int:
    """The worker count ``engine_scope(engine, n_workers)`` will have, checked, starting nothing.

    Algorithms call it first, so that every argument (shards per worker included) is
    validated before a process or a cluster starts.
    """
    if isinstance(engine, Engine):
        if n_workers is not None and n_workers != engine.n_workers:
            raise ValueError(
                f"n_workers: expected {engine.n_workers} to match the engine given, got {n_workers}"
            )
        return engine.n_workers
    if not isinstance(engine, str):
        raise TypeError(
            f"engine: expected an Engine or one of {ENGINES}, got {type(engine).__name__}"
        )
    validation.choice("engine", engine, ENGINES)
    if address is not None and not isinstance(address, str):
        raise TypeError(f"address: expected a scheduler address str or None, got "
                        f"{type(address).__name__}")
    n = 2 if n_workers is None else n_workers
    if engine == "processes" or (engine == "dask" and address is None):
        return limits.workers("n_workers", n)
    # Simulated workers cost memory only; a real cluster's size is the cluster's business.
    return validation.positive_int("n_workers", n, maximum=MAX_SIMULATED_WORKERS)


@contextmanager
def engine_scope(engine, n_workers: int | None = None, **options):
    """Use an ``Engine`` as given (caller closes it), or make one from a name and close it.

    A name gets ``n_workers`` workers (2 when None) and the ``options`` of ``make_engine``, which
    uses ``cost`` only for 'simulated' and ``address`` only for 'dask'.
    """
    n = planned_workers(engine, n_workers, address=options.get("address"))
    if isinstance(engine, Engine):
        yield engine
        return
    with make_engine(engine, n, **options) as made:
        yield made
