"""A parameter server: synchronous, asynchronous and stale-synchronous SGD, on any engine.

The server holds the model w; each worker holds a shard of the data and repeats

    pull w  →  compute a minibatch gradient g on its shard  →  push g

and the server applies every pushed gradient as it arrives: w ← w − η g. What differs between
the three modes is only *when a worker may pull again*:

* ``"sync"``: in rounds. All m workers pull the same w, the server applies their m gradients,
  then the next round starts. Everybody waits for the slowest worker.
* ``"async"``: immediately. A fast worker never waits, but its gradient may be computed on a w
  that is several updates old by the time it is applied (Li et al., OSDI 2014).
* ``"ssp"`` with bound s (stale synchronous parallel, Ho et al., NIPS 2013): worker i may start
  its gradient number cᵢ only if cᵢ − minⱼ cⱼ ≤ s, i.e. it is at most s iterations ahead of
  the slowest worker. s = 0 is the synchronous schedule; s = ∞ is asynchronous.

Two measures of how old a gradient is are recorded for every update:

* **staleness** (what SSP bounds): cᵢ − minⱼ cⱼ when worker i pulled, how many iterations it
  was ahead of the slowest worker;
* **delay**: the number of updates the server applied between the pull and the push.

The process calling ``train`` is the server; the engine ('simulated', 'processes', 'dask')
carries the messages, so the same code runs on a virtual clock or for real.
``train_with_actors`` is the other classic layout, the one Ray uses: the server is an *actor*
(an object living in a worker process) and each worker runs its own pull → compute → push loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import tasks, validation
from .cost_model import CostModel
from .engines import engine_scope
from .mapreduce import loss, shards

MODES = ("sync", "async", "ssp")


@dataclass(frozen=True)
class PSResult:
    """Final weights; loss and clock after every update; per update: who, staleness, delay."""

    weights: np.ndarray
    losses: np.ndarray  # (n_updates + 1,): f(w) at the start and after every update
    times: np.ndarray  # (n_updates + 1,): elapsed seconds (virtual on the simulated engine)
    workers: np.ndarray  # (n_updates,): the worker whose gradient was applied
    staleness: np.ndarray  # (n_updates,): iterations ahead of the slowest worker at its pull
    delay: np.ndarray  # (n_updates,): updates applied between its pull and its push
    pulled: np.ndarray  # (n_updates,): the version of w the gradient was computed on
    mode: str
    bound: float
    engine: str
    n_workers: int
    cluster: object = None

    @property
    def label(self) -> str:
        return f"ssp, s={int(self.bound)}" if self.mode == "ssp" else self.mode

    def __repr__(self) -> str:
        return (
            f"PSResult({self.label}, {self.engine}, {self.n_workers} workers, "
            f"{len(self.workers)} updates in {self.times[-1]:.4g} s, final loss {self.losses[-1]:.6g}, "
            f"max staleness {self.staleness.max()}, max delay {self.delay.max()})"
        )

    def plot(self, ax=None, **style):
        """Loss against (virtual or real) time."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3))
        ax.semilogy(self.times, self.losses, label=style.pop("label", self.label), **style)
        ax.set_xlabel("seconds" + (" (virtual)" if self.engine == "simulated" else ""))
        ax.set_ylabel("loss f(w)")
        return ax


def train(
    X,
    y,
    *,
    mode: str = "async",
    staleness_bound: int | None = None,
    n_workers: int | None = None,
    engine="simulated",
    lr: float = 0.05,
    batch_size: int = 16,
    n_updates: int = 400,
    cost: CostModel | None = None,
    seed: int = 0,
    address: str | None = None,
) -> PSResult:
    """Minibatch SGD on least squares through a parameter server; see the module docstring.

    ``n_updates`` gradients are applied in all (for 'sync', a multiple of the worker count).
    Worker i draws its minibatches (with replacement, ``batch_size`` rows of its shard) from its
    own stream ``SeedSequence(seed).spawn(m)[i]``, so a run is reproducible on every engine.
    """
    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64, finite=True)
    validation.same_length("X", X, "y", y)
    validation.choice("mode", mode, MODES)
    if mode == "ssp":
        bound = validation.integer("staleness_bound", staleness_bound, minimum=0)
    elif staleness_bound is not None:
        raise ValueError(f"staleness_bound: only used with mode='ssp', got {staleness_bound!r}")
    else:
        bound = 0 if mode == "sync" else np.inf
    lr = validation.positive("lr", lr)
    batch_size = validation.positive_int("batch_size", batch_size)
    n_updates = validation.positive_int("n_updates", n_updates)
    seed = validation.seed("seed", seed)
    with engine_scope(engine, n_workers, cost=cost, address=address) as eng:
        m = eng.n_workers
        if mode == "sync" and n_updates % m:
            raise ValueError(f"n_updates: expected a multiple of the {m} workers for sync, got {n_updates}")
        parts = shards(len(y), m)
        data = [(eng.put(i, X[s]), eng.put(i, y[s])) for i, s in enumerate(parts)]
        streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(m)]
        eng.start()
        eng.reset_clock()

        w = np.zeros(X.shape[1])
        clock = np.zeros(m, dtype=int)  # gradients applied so far, per worker
        pulled_version = np.zeros(m, dtype=int)
        pulled_staleness = np.zeros(m, dtype=int)
        log = {"loss": [loss(X, y, w)], "time": [eng.elapsed()], "worker": [], "staleness": [],
               "delay": [], "pulled": []}
        sent = 0

        def send(i):  # worker i pulls the current w and starts its next gradient
            nonlocal sent
            pulled_version[i] = len(log["worker"])
            pulled_staleness[i] = clock[i] - clock.min()
            rows = streams[i].integers(0, parts[i].stop - parts[i].start, size=batch_size)
            eng.submit(i, tasks.minibatch_gradient, *data[i], w, rows, samples=batch_size)
            sent += 1

        def apply(task, g):  # the server applies a pushed gradient as soon as it arrives
            nonlocal w
            i = task.worker
            w = w - lr * g
            log["delay"].append(len(log["worker"]) - pulled_version[i])
            log["pulled"].append(pulled_version[i])
            log["worker"].append(i)
            log["staleness"].append(pulled_staleness[i])
            clock[i] += 1
            log["loss"].append(loss(X, y, w))
            log["time"].append(eng.elapsed())

        if mode == "sync":
            for _ in range(n_updates // m):
                for i in range(m):
                    send(i)
                for _ in range(m):  # nobody pulls before the round's last gradient is in
                    apply(*eng.wait_any())
        else:
            for i in range(m):
                send(i)
            idle = []  # workers that pushed and may not pull yet
            while sent < n_updates or len(log["worker"]) < sent:
                task, g = eng.wait_any()
                apply(task, g)
                idle.append(task.worker)
                for i in sorted(idle):  # the bound: at most s iterations ahead of the slowest
                    if sent < n_updates and clock[i] - clock.min() <= bound:
                        idle.remove(i)
                        send(i)
        cluster = getattr(eng, "cluster", None)
        return PSResult(
            w, np.array(log["loss"]), np.array(log["time"]), np.array(log["worker"]),
            np.array(log["staleness"]), np.array(log["delay"]), np.array(log["pulled"]),
            mode, bound, eng.name, m, cluster,
        )


def serial_sgd(X, y, *, lr: float = 0.05, batch_size: int = 16, n_updates: int = 400,
               seed: int = 0) -> np.ndarray:
    """The reference: one process drawing minibatches like the only worker of ``train``."""
    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64, finite=True)
    validation.same_length("X", X, "y", y)
    lr = validation.positive("lr", lr)
    batch_size = validation.positive_int("batch_size", batch_size)
    rng = np.random.default_rng(np.random.SeedSequence(validation.seed("seed", seed)).spawn(1)[0])
    w = np.zeros(X.shape[1])
    for _ in range(validation.positive_int("n_updates", n_updates)):
        w = w - lr * tasks.minibatch_gradient(X, y, w, rng.integers(0, len(y), size=batch_size))
    return w


# -- The same asynchronous server as an actor: the layout of Ray (and of Dask's actors) -------


class ServerActor:
    """The server as an object living in one Dask worker; every method call is a message.

    An actor handles one call at a time, so ``push`` needs no lock: the order in which messages
    arrive *is* the order of the updates. It also keeps the log a ``PSResult`` needs.
    """

    def __init__(self, n_features: int, lr: float, n_workers: int):
        self.w, self.lr = np.zeros(n_features), lr
        self.clock = np.zeros(n_workers, dtype=int)
        self.pulled = np.zeros((n_workers, 2), dtype=int)  # (version, staleness) at each pull
        self.log = {"w": [self.w], "time": [0.0], "worker": [], "staleness": [], "pulled": []}
        self.start = time.perf_counter()

    def pull(self, worker: int):
        version = len(self.log["worker"])
        self.pulled[worker] = version, self.clock[worker] - self.clock.min()
        return self.w

    def push(self, worker: int, g: np.ndarray) -> None:
        self.w = self.w - self.lr * g
        self.clock[worker] += 1
        for key, value in (("worker", worker), ("pulled", self.pulled[worker, 0]),
                           ("staleness", self.pulled[worker, 1]), ("w", self.w),
                           ("time", time.perf_counter() - self.start)):
            self.log[key].append(value)

    def history(self) -> dict:
        return self.log


def _actor_worker(server, X, y, steps, seed, batch_size, worker):
    """A worker's own loop: pull, compute, push, ``steps`` times (runs as one Dask task)."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        w = server.pull(worker).result()
        rows = rng.integers(0, len(y), size=batch_size)
        server.push(worker, tasks.minibatch_gradient(X, y, w, rows)).result()
    return steps


def train_with_actors(X, y, *, n_workers: int = 2, lr: float = 0.05, batch_size: int = 16,
                      n_updates: int = 400, seed: int = 0, address: str | None = None) -> PSResult:
    """Asynchronous SGD with the server as a Dask actor and one long-running task per worker.

    No per-step scheduling: after start-up, workers and server exchange messages directly.
    Times are seconds since the actor started, on the actor's clock.
    """
    from .dask_cluster import dask_client

    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64, finite=True)
    validation.same_length("X", X, "y", y)
    lr = validation.positive("lr", lr)
    batch_size = validation.positive_int("batch_size", batch_size)
    n_updates = validation.positive_int("n_updates", n_updates)
    parts = shards(len(y), n_workers)  # validates n_workers
    seeds = np.random.SeedSequence(validation.seed("seed", seed)).spawn(len(parts))
    steps = [n_updates // len(parts) + (i < n_updates % len(parts)) for i in range(len(parts))]
    with dask_client(address, n_workers=len(parts)) as client:
        client.wait_for_workers(1 if address else len(parts), timeout=60)
        hosts = sorted(client.scheduler_info()["workers"])
        where = [[hosts[i % len(hosts)]] for i in range(len(parts))]
        server = client.submit(ServerActor, X.shape[1], lr, len(parts), actor=True,
                               workers=where[0]).result()
        loops = [client.submit(_actor_worker, server, X[s], y[s], steps[i], seeds[i], batch_size, i,
                               workers=where[i], pure=False) for i, s in enumerate(parts)]
        client.gather(loops)
        log = server.history().result()
    pulled = np.array(log["pulled"])
    return PSResult(
        log["w"][-1], np.array([loss(X, y, w) for w in log["w"]]), np.array(log["time"]),
        np.array(log["worker"]), np.array(log["staleness"]), np.arange(len(pulled)) - pulled,
        pulled, "async", np.inf, "dask actors", len(parts),
    )
