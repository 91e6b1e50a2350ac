"""A parameter server: synchronous, asynchronous and stale-synchronous SGD, on any engine.

The server (``Server``) holds the model w; each worker holds a shard of the data and repeats

    pull w  →  compute a minibatch gradient g on its shard  →  push g

and the server applies every pushed gradient as it arrives: w ← w − η g (Li et al., OSDI
2014). What differs between the three modes is only *when a worker may pull again*
(``Server.may_pull``):

* ``"sync"``: in rounds. All m workers pull the same w, the server applies their m gradients,
  then the next round starts. Everybody waits for the slowest worker.
* ``"async"``: immediately. A fast worker never waits, but its gradient may be computed on a w
  that is several updates old by the time it is applied.
* ``"ssp"`` with bound s (stale synchronous parallel, Ho et al., NIPS 2013): worker i may start
  its gradient number cᵢ only if cᵢ − minⱼ cⱼ ≤ s, i.e. it is at most s iterations ahead of
  the slowest worker. s = 0 is the synchronous schedule; s = ∞ is asynchronous.

Two measures of how old a gradient is are recorded for every update:

* **staleness** (what SSP bounds): cᵢ − minⱼ cⱼ when worker i pulled;
* **delay**: the number of updates the server applied between the pull and the push (what
  most of the asynchronous-SGD literature calls staleness, τ).

``delay_scaled=True`` divides each step by 1 + its delay, η/(1 + τ): the older the gradient,
the smaller its step. With m busy workers the delays are about m − 1, so this is about a
constant η/m; it differs from that where delays differ (a straggler's gradients get smaller
steps than the others').

``train``: the process calling it runs the ``Server`` and ``serve`` (the loop that hands out
work); the engine ('simulated', 'processes', 'dask') carries the messages, so the same code
runs on a virtual clock or for real. ``train_with_actors`` is the layout of Ray: the same
``Server`` lives in a Dask worker as an *actor* and each worker runs its own loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.distributed import least_squares
from mlpar.algorithms.distributed.mapreduce import Prediction, loss, place_shards
from mlpar.algorithms.training import TrainingResult
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.engines import engine_scope, planned_workers
from mlpar.core import limits, seeding, splits, validation

MODES = ("sync", "async", "ssp")


class Server:
    """The model, every worker's clock, and the update: the one place the server's rule lives.

    ``clock[i]``: gradients of worker i applied so far. ``version``: updates applied in all
    (w after v updates is version v). Per update it records who pushed, the version that
    worker had pulled, and its staleness then.
    """

    def __init__(self, n_features: int, n_workers: int, *, lr: float, bound: float = np.inf,
                 delay_scaled: bool = False):
        self.w = np.zeros(n_features)
        self.lr, self.bound, self.delay_scaled = lr, bound, delay_scaled
        self.clock = np.zeros(n_workers, dtype=int)
        self.version = 0
        self.at_pull = np.zeros((n_workers, 2), dtype=int)  # (version, staleness) at last pull
        self.workers, self.pulled, self.staleness = [], [], []

    def may_pull(self, worker: int) -> bool:
        """The SSP gate: at most ``bound`` iterations ahead of the slowest worker."""
        return self.clock[worker] - self.clock.min() <= self.bound

    def pull(self, worker: int) -> np.ndarray:
        self.at_pull[worker] = self.version, self.clock[worker] - self.clock.min()
        return self.w

    def step_size(self, delay: int) -> float:
        """η, or η/(1 + delay) with ``delay_scaled``: a stale gradient takes a smaller step."""
        return self.lr / (1 + delay) if self.delay_scaled else self.lr

    def push(self, worker: int, g: np.ndarray) -> None:
        version, staleness = self.at_pull[worker]
        self.w = self.w - self.step_size(self.version - int(version)) * g
        self.workers.append(worker)
        self.pulled.append(int(version))
        self.staleness.append(int(staleness))
        self.clock[worker] += 1
        self.version += 1


def serve(eng, server: Server, send, n_updates: int, *, rounds: bool, after_push) -> None:
    """Hand out gradients until ``n_updates`` are applied; ``send(i)``: worker i pulls and starts.

    ``rounds``: synchronous rounds (everybody pulls the same w). Otherwise each push lets the
    waiting workers that the gate allows pull again (async: the bound is infinite).
    """
    m = eng.n_workers
    if rounds:
        for _ in range(n_updates // m):
            for i in range(m):
                send(i)
            for _ in range(m):  # nobody pulls before the round's last gradient is in
                task, g = eng.wait_any()
                server.push(task.worker, g)
                after_push()
        return
    sent = min(m, n_updates)
    for i in range(sent):
        send(i)
    idle = []  # workers that pushed and may not pull yet
    while server.version < sent:
        task, g = eng.wait_any()
        server.push(task.worker, g)
        after_push()
        idle.append(task.worker)
        for i in sorted(idle):
            if sent < n_updates and server.may_pull(i):
                idle.remove(i)
                send(i)
                sent += 1


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class PSResult(TrainingResult):
    """Loss and clock after every update; per update: who, staleness, delay, version pulled."""

    workers: np.ndarray  # (n_updates,): the worker whose gradient was applied
    staleness: np.ndarray  # (n_updates,): iterations ahead of the slowest worker at its pull
    delay: np.ndarray  # (n_updates,): updates applied between its pull and its push
    pulled: np.ndarray  # (n_updates,): the version of w the gradient was computed on
    mode: str
    bound: float
    engine: str
    n_workers: int
    cluster: object = None

    def __repr__(self) -> str:
        return (
            f"PSResult({self.label}, {self.engine}, {self.n_workers} workers, "
            f"{len(self.workers)} updates in {self.times[-1]:.4g} s, final loss {self.final_loss:.6g}, "
            f"max staleness {self.staleness.max()}, max delay {self.delay.max()})"
        )


def _label(mode: str, bound: float, delay_scaled: bool = False) -> str:
    label = f"ssp, s={int(bound)}" if mode == "ssp" else mode
    return label + ", η/(1+delay)" if delay_scaled else label


def _check(X, y, lr, batch_size, n_updates, seed):
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    # bad data named as such (X: NaN at row 17, column 3), before any worker starts
    validation.finite_data("X", X)
    validation.finite_data("y", y)
    batch_size = validation.positive_int("batch_size", batch_size)
    limits.elements("batch_size", batch_size * X.shape[1])
    return (X, y, validation.positive("lr", lr), batch_size,
            limits.rounds("n_updates", n_updates), validation.seed("seed", seed))


def train(X, y, *, mode: str = "async", staleness_bound: int | None = None,
          n_workers: int | None = None, engine="simulated", lr: float = 0.05, batch_size: int = 16,
          n_updates: int = 400, cost: CostModel | None = None, seed: int = 0,
          address: str | None = None, delay_scaled: bool = False) -> PSResult:
    """Minibatch SGD on least squares through a parameter server; see the module docstring.

    ``n_updates`` gradients are applied in all (for 'sync', a multiple of the worker count).
    Worker i draws its minibatches (with replacement, ``batch_size`` rows of its shard) from its
    own stream ``seeding.worker_rngs(m, seed=seed)[i]``, so a run is reproducible on every
    engine. ``delay_scaled``: each step is η/(1 + its delay) (``Server.step_size``). Every
    argument is checked before any worker starts.
    """
    X, y, lr, batch_size, n_updates, seed = _check(X, y, lr, batch_size, n_updates, seed)
    validation.choice("mode", mode, MODES)
    delay_scaled = validation.flag("delay_scaled", delay_scaled)
    if mode == "ssp":
        bound = validation.integer("staleness_bound", staleness_bound, minimum=0)
    elif staleness_bound is not None:
        raise ValueError(f"staleness_bound: only used with mode='ssp', got {staleness_bound!r}")
    else:
        bound = 0 if mode == "sync" else np.inf
    if address is not None and not isinstance(address, str):
        raise TypeError(f"address: expected a scheduler address str, got {type(address).__name__}")
    m = planned_workers(engine, n_workers, address=address)
    parts = splits.shards(len(y), m)  # fails before anything starts
    if mode == "sync" and n_updates % m:
        raise ValueError(f"n_updates: expected a multiple of the {m} workers for sync, got {n_updates}")
    with engine_scope(engine, n_workers, cost=cost, address=address) as eng:
        shards = place_shards(eng, X, y)
        streams = seeding.worker_rngs(m, seed=seed)
        eng.start()
        eng.reset_clock()
        server = Server(X.shape[1], m, lr=lr, bound=bound, delay_scaled=delay_scaled)
        losses, times = [loss(X, y, server.w)], [eng.elapsed()]

        def send(i):  # worker i pulls the current w and starts its next gradient
            rows = streams[i].integers(0, parts[i].stop - parts[i].start, size=batch_size)
            eng.submit(i, least_squares.minibatch_gradient, shards[i].X, shards[i].y,
                       server.pull(i), rows, samples=batch_size)

        def after_push():
            losses.append(loss(X, y, server.w))
            validation.finite_loss(losses, "lr", lr)
            times.append(eng.elapsed())

        serve(eng, server, send, n_updates, rounds=mode == "sync", after_push=after_push)
        pulled = np.array(server.pulled)
        return PSResult(
            label=_label(mode, bound, delay_scaled), weights=server.w, losses=np.array(losses),
            times=np.array(times), clock="virtual" if eng.name == "simulated" else "real",
            workers=np.array(server.workers), staleness=np.array(server.staleness),
            delay=np.arange(len(pulled)) - pulled, pulled=pulled, mode=mode, bound=bound,
            engine=eng.name, n_workers=m, cluster=getattr(eng, "cluster", None),
        )


def serial_sgd(X, y, *, lr: float = 0.05, batch_size: int = 16, n_updates: int = 400,
               seed: int = 0) -> np.ndarray:
    """The reference: one process drawing minibatches like the only worker of ``train``."""
    X, y, lr, batch_size, n_updates, seed = _check(X, y, lr, batch_size, n_updates, seed)
    (rng,) = seeding.worker_rngs(1, seed=seed)
    w = np.zeros(X.shape[1])
    for _ in range(n_updates):
        rows = rng.integers(0, len(y), size=batch_size)
        w = w - lr * least_squares.minibatch_gradient(X, y, w, rows)
    return w


def delayed_sgd(X, y, *, delay: int, lr: float = 0.05, batch_size: int = 16,
                n_updates: int = 400, seed: int = 0) -> np.ndarray:
    """Serial minibatch SGD whose gradient k is taken at w_{k − delay}: the delay and nothing else.

    The same minibatches (``serial_sgd``'s stream) and the same step for every ``delay``, no
    cluster, no workers: only the age of the w each gradient sees changes (the first ``delay``
    gradients see w₀). ``delay = 0`` is ``serial_sgd``. Returns the loss after every update
    (n_updates + 1 values); a run whose loss leaves the rails stops with a ``ValueError``
    naming ``lr``, as ``train`` does.
    """
    X, y, lr, batch_size, n_updates, seed = _check(X, y, lr, batch_size, n_updates, seed)
    delay = validation.integer("delay", delay, minimum=0, maximum=n_updates)
    (rng,) = seeding.worker_rngs(1, seed=seed)
    history = [np.zeros(X.shape[1])]  # w₀ … w_k; gradient k reads history[max(k − delay, 0)]
    losses = [loss(X, y, history[0])]
    for k in range(n_updates):
        rows = rng.integers(0, len(y), size=batch_size)
        g = least_squares.minibatch_gradient(X, y, history[max(k - delay, 0)], rows)
        history.append(history[-1] - lr * g)
        losses.append(loss(X, y, history[-1]))
        validation.finite_loss(losses, "lr", lr)
    return np.array(losses)


def measure_and_predict(engine, X, y, *, mode: str = "async", n_updates: int = 80,
                        lr: float = 0.05, batch_size: int = 16, seed: int = 0,
                        repeat: int = 7) -> Prediction:
    """Seconds per update of ``train`` on a real ``engine`` beside a calibrated simulation.

    The cost model is calibrated on the same engine (``cost_model.calibrate``: echo round
    trips, and a minibatch gradient timed on every worker at once), then the simulated run
    with the same arguments predicts the time per update. Two real runs; the faster counts
    (the other programs on a shared machine only ever slow a run down).
    """
    from mlpar.cluster.cost_model import calibrate

    if not (hasattr(engine, "start") and hasattr(engine, "submit")):
        raise TypeError(f"engine: expected an open Engine (mlpar.cluster.engines.make_engine), "
                        f"got {type(engine).__name__}")
    validation.choice("mode", mode, MODES)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    X, y, lr, batch_size, n_updates, seed = _check(X, y, lr, batch_size, n_updates, seed)
    m = engine.n_workers
    engine.start()
    rows = min(len(y), m * batch_size)
    cost = calibrate(engine, X[:rows], y[:rows], repeat=repeat, work=least_squares.batch_gradient)
    options = dict(mode=mode, n_updates=n_updates, lr=lr, batch_size=batch_size, seed=seed)
    real = min(train(X, y, engine=engine, **options).times[-1] for _ in range(2))
    simulated = train(X, y, n_workers=m, cost=cost, **options).times[-1]
    return Prediction(engine.name, m, real / n_updates, simulated / n_updates, cost, per="update")


# -- The same server as an actor: the layout of Ray (and of Dask's actors) --------------------


class ServerActor(Server):
    """``Server`` living in one Dask worker; every method call is a message to it.

    An actor handles one call at a time, so ``push`` needs no lock: the order in which messages
    arrive *is* the order of the updates. It also keeps what a ``PSResult`` needs: w and the
    time after every update, on the actor's clock, which starts at the first pull (the
    cluster's and the actor's start-up are not training).

    A worker does not wait for its push to arrive before it pulls again (as in the Ray
    sketch), so its next pull may overtake its push: each pull therefore hands out its version
    and staleness, and the push brings them back (``pull_versioned``, ``push_versioned``).
    """

    def __init__(self, n_features: int, lr: float, n_workers: int):
        super().__init__(n_features, n_workers, lr=lr)
        self.start = None
        self.ws, self.times = [self.w], [0.0]
        self.arrived = set()

    def arrive(self, worker: int) -> bool:
        """Worker ``worker``'s loop is running; True once every worker's is (a start barrier:
        Dask may start one worker's long task well after the other's)."""
        self.arrived.add(worker)
        return len(self.arrived) == len(self.clock)

    def pull_versioned(self, worker: int) -> tuple:
        """``(w, version, staleness)``: the current w, and what the push must report back."""
        if self.start is None:
            self.start = time.perf_counter()
        w = self.pull(worker)
        version, staleness = self.at_pull[worker]
        return w, int(version), int(staleness)

    def push_versioned(self, worker: int, g: np.ndarray, version: int, staleness: int) -> None:
        """Apply ``g``, computed on ``version`` (pulled at ``staleness``)."""
        self.at_pull[worker] = version, staleness
        self.push(worker, g)

    def push(self, worker: int, g: np.ndarray) -> None:
        super().push(worker, g)
        self.ws.append(self.w)
        self.times.append(time.perf_counter() - self.start)

    def history(self) -> dict:
        return {"w": self.ws, "time": self.times, "worker": self.workers,
                "staleness": self.staleness, "pulled": self.pulled}


def _actor_worker(server, X, y, steps, seed, batch_size, worker):
    """A worker's own loop: pull, compute, push, ``steps`` times (runs as one Dask task).

    One round trip per update: the pull is awaited (the gradient needs w), the push is not
    (fire and forget, as ``server.push.remote(g)`` in Ray). The pushes are awaited only at the
    end, so that the task ends after the server has applied all of them.
    """
    rng = np.random.default_rng(seed)
    while not server.arrive(worker).result():  # start together: time updates, not start-up
        time.sleep(1e-3)
    pushes = []
    for _ in range(steps):
        w, version, staleness = server.pull_versioned(worker).result()
        rows = rng.integers(0, len(y), size=batch_size)
        g = least_squares.minibatch_gradient(X, y, w, rows)
        pushes.append(server.push_versioned(worker, g, version, staleness))
    for push in pushes:
        push.result()
    return steps


def train_with_actors(X, y, *, n_workers: int = 2, lr: float = 0.05, batch_size: int = 16,
                      n_updates: int = 400, seed: int = 0, address: str | None = None) -> PSResult:
    """Asynchronous SGD with the server as a Dask actor and one long-running task per worker.

    No per-step scheduling: after start-up, workers and server exchange messages directly.
    Times are seconds since the first pull, on the actor's clock.
    """
    from mlpar.cluster.dask_cluster import dask_client, worker_addresses

    X, y, lr, batch_size, n_updates, seed = _check(X, y, lr, batch_size, n_updates, seed)
    m = planned_workers("dask", n_workers, address=address)
    parts = splits.shards(len(y), m)  # fails before anything starts
    seeds = seeding.worker_seeds(m, seed=seed)
    steps = [n_updates // m + (i < n_updates % m) for i in range(m)]
    with dask_client(address, n_workers=m) as client:
        hosts = worker_addresses(client)
        where = [[hosts[i % len(hosts)]] for i in range(m)]
        server = client.submit(ServerActor, X.shape[1], lr, m, actor=True, workers=where[0]).result()
        loops = [client.submit(_actor_worker, server, X[s], y[s], steps[i], seeds[i], batch_size, i,
                               workers=where[i], pure=False) for i, s in enumerate(parts)]
        client.gather(loops)
        log = server.history().result()
    losses = [loss(X, y, w) for w in log["w"]]
    validation.finite_loss(losses, "lr", lr)
    pulled = np.array(log["pulled"])
    return PSResult(
        label="async (actor)", weights=log["w"][-1],
        losses=np.array(losses), times=np.array(log["time"]),
        workers=np.array(log["worker"]), staleness=np.array(log["staleness"]),
        delay=np.arange(len(pulled)) - pulled, pulled=pulled, mode="async", bound=np.inf,
        engine="dask actors", n_workers=m,
    )


def compare_layouts(tasks: PSResult, actors: PSResult) -> str:
    """Which layout applied updates faster, the notebook sending tasks or the Dask actor, and
    the likely reason, read from the two runs (printed by lesson 06 whichever way it goes)."""
    for name, run in (("tasks", tasks), ("actors", actors)):
        if not isinstance(run, PSResult) or len(run.workers) < 2:
            raise TypeError(f"{name}: expected a PSResult with at least 2 updates, got "
                            f"{type(run).__name__}")
    per_task = float(tasks.times[-1]) / len(tasks.workers)
    per_actor = float(actors.times[-1]) / len(actors.workers)
    # when each actor worker applied its last update: unequal paces leave one worker alone
    ends = {int(w): float(actors.times[1 + int(np.flatnonzero(actors.workers == w)[-1])])
            for w in np.unique(actors.workers)}
    pace = ", ".join(f"worker {w} at {t * 1e3:.1f} ms" for w, t in sorted(ends.items()))
    late = f" The actor's workers finished their shares: {pace}"
    if max(ends.values()) > 1.3 * min(ends.values()):
        first = min(ends, key=ends.get)
        why = (" (train_with_actors puts the actor in worker 0's process, which likely reaches it "
               "without the network)") if first == 0 else ""
        late += (f"; they did not keep the same pace{why}, so for the rest of the run worker "
                 f"{max(ends, key=ends.get)} computed alone.")
    else:
        late += "."
    head = (f"time per update: tasks {per_task * 1e3:.2f} ms, actor {per_actor * 1e3:.2f} ms. ")
    if per_actor < per_task:
        return head + (f"The actor layout was {per_task / per_actor:.2f}× faster here: each "
                       "update is one round trip from a worker to the actor (the push is not "
                       "awaited), while each task travels notebook → scheduler → worker and "
                       "back." + late)
    return head + (f"The actor layout was {per_actor / per_task:.2f}× slower here. The actor "
                   "lives in one of the worker processes and serves every pull and push of "
                   "both workers there, one at a time, between that worker's own gradients, "
                   "and each call from another process is a message through Dask's comms. "
                   "Where the messages cost "
                   "far more than the gradient, skipping the scheduler does not make up for "
                   "that." + late)
