"""Data-parallel gradient descent as MapReduce rounds, on any engine (Dean & Ghemawat 2004).

Least squares (``least_squares``): split the rows of X into m shards, one per worker; since
Xᵀr = Σᵢ Xᵢᵀrᵢ, every round (``mapreduce_round``) is

    broadcast  the server sends w to every worker                    (m messages of d floats)
    map        worker i computes gᵢ = Xᵢᵀ(Xᵢw − yᵢ) on its own rows  (n/m samples each)
    reduce     the server sums g = Σᵢ gᵢ                             (m messages back)
    update     w ← w − η g / n

which is *exactly* serial gradient descent, up to the order of floating-point additions. It
is bulk synchronous: the update waits for the slowest worker. On the cost model's flat server
a round takes about m(α + β·8d) + latency + per_sample·n/m + m(α + β·8d) + latency, so adding
workers divides the computation but multiplies the messages through the server's one link.

That round is MapReduce with a single key. ``map_shuffle_reduce`` is the general key/value model
(map to pairs, shuffle by a hash of the key, reduce per key), and ``map_phase`` simulates the
paper's remedy for stragglers, backup copies of the last running tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.distributed import least_squares
from mlpar.algorithms.training import TrainingResult
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.engines import Engine, engine_scope, planned_workers
from mlpar.cluster.simulated_cluster import Breakdown, SimulatedCluster
from mlpar.core import limits, splits, validation

loss = least_squares.loss  # kept under its old name: lessons call mapreduce.loss


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class GDResult(TrainingResult):
    """Weights, the loss before each update and after the last, and the clock at each."""

    engine: str
    n_workers: int
    breakdown: Breakdown | None = None
    cluster: SimulatedCluster | None = None

    @property
    def time_per_iteration(self) -> float:
        return float((self.times[-1] - self.times[0]) / (len(self.times) - 1))

    def __repr__(self) -> str:
        return (
            f"GDResult({self.engine}, {self.n_workers} workers, {self.n_updates} iterations, "
            f"final loss {self.final_loss:.6g})"
        )


@dataclass(frozen=True)
class Shard:
    """A worker's rows, already placed on it: references to Xᵢ and yᵢ, and how many rows."""

    X: object
    y: object
    n_rows: int


def place_shards(eng, X: np.ndarray, y: np.ndarray) -> list[Shard]:
    """Split the rows into ``eng.n_workers`` contiguous shards and put shard i on worker i."""
    if not isinstance(eng, Engine):
        raise TypeError(f"eng: expected an open Engine (mlpar.cluster.engines.make_engine), "
                        f"got {type(eng).__name__}")
    X, y = _check_data(X, y)
    if len(y) < eng.n_workers:
        raise ValueError(f"X, y: expected at least one row per worker ({eng.n_workers}), "
                         f"got {len(y)}")
    parts = splits.shards(len(y), eng.n_workers)
    return [Shard(eng.put(i, X[s]), eng.put(i, y[s]), s.stop - s.start) for i, s in enumerate(parts)]


def mapreduce_round(eng, shards: list[Shard], w: np.ndarray, *, message_bytes: int | None = None):
    """Broadcast w, map on every shard, reduce: returns (Σᵢ Xᵢᵀ(Xᵢw − yᵢ), Σᵢ ‖Xᵢw − yᵢ‖²)."""
    jobs = [eng.submit(i, least_squares.partial_gradient, shard.X, shard.y, w,
                       samples=shard.n_rows, nbytes=message_bytes)
            for i, shard in enumerate(shards)]
    results = eng.gather(jobs)
    # Reduce in worker order, whatever order the replies came in: identical sums on every engine.
    g = results[0][0].copy()
    for gi, _ in results[1:]:
        g += gi
    return g, sum(sse for _, sse in results)


def _check_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    # Bad data is named as such (row and column of the first NaN), before any worker starts.
    validation.finite_data("X", X)
    validation.finite_data("y", y)
    return X, y


def serial_gradient_descent(X, y, *, lr: float = 0.5, n_iter: int = 50) -> GDResult:
    """The reference: w ← w − η ∇f(w) from w = 0, in one process."""
    X, y = _check_data(X, y)
    lr = validation.positive("lr", lr)
    n_iter = limits.rounds("n_iter", n_iter)
    w = np.zeros(X.shape[1])
    losses = [loss(X, y, w)]
    for _ in range(n_iter):
        w = w - lr * least_squares.gradient(X, y, w)
        losses.append(loss(X, y, w))
        validation.finite_loss(losses, "lr", lr)
    return GDResult(label="serial", weights=w, losses=np.array(losses),
                    times=np.arange(n_iter + 1, dtype=float), engine="serial", n_workers=1)


def gradient_descent(
    X,
    y,
    *,
    n_workers: int | None = None,
    engine="simulated",
    lr: float = 0.5,
    n_iter: int = 50,
    cost: CostModel | None = None,
    message_bytes: int | None = None,
    address: str | None = None,
    cores: int | None = None,
) -> GDResult:
    """Parallel gradient descent by MapReduce rounds; same weights on every engine.

    ``engine`` is a name ('simulated', 'processes', 'dask') or an open ``Engine`` (reused,
    not closed: start a Dask cluster once for several runs); ``n_workers`` defaults to 2 with
    a name and to the engine's own count with an engine. ``cost`` prices the simulated
    engine; ``message_bytes`` pretends each message is that big (a larger model) there;
    ``cores``: the simulated workers and server share that many cores (``SimulatedCluster``).
    Every argument is checked before any worker starts.
    """
    X, y = _check_data(X, y)
    lr = validation.positive("lr", lr)
    n_iter = limits.rounds("n_iter", n_iter)
    if message_bytes is not None:
        message_bytes = validation.integer("message_bytes", message_bytes, minimum=0)
    if address is not None and not isinstance(address, str):
        raise TypeError(f"address: expected a scheduler address str, got {type(address).__name__}")
    splits.shards(len(y), planned_workers(engine, n_workers, address=address))  # fail before start
    with engine_scope(engine, n_workers, cost=cost, address=address, cores=cores) as eng:
        shards = place_shards(eng, X, y)  # each worker keeps its rows; only w and gᵢ travel
        eng.start()
        eng.reset_clock()
        w = np.zeros(X.shape[1])
        losses, times = [], [eng.elapsed()]
        for _ in range(n_iter):
            g, sse = mapreduce_round(eng, shards, w, message_bytes=message_bytes)
            losses.append(sse / (2 * len(y)))
            validation.finite_loss(losses, "lr", lr)
            w = w - lr * g / len(y)
            times.append(eng.elapsed())
        losses.append(loss(X, y, w))
        cluster = getattr(eng, "cluster", None)
        return GDResult(
            label=f"MapReduce, {eng.name}, {eng.n_workers} workers", weights=w,
            losses=np.array(losses), times=np.array(times),
            clock="virtual" if eng.name == "simulated" else "real", engine=eng.name,
            n_workers=eng.n_workers, breakdown=cluster.breakdown() if cluster is not None else None,
            cluster=cluster,
        )


@dataclass(frozen=True)
class Prediction:
    """A real engine's measured time per iteration beside the calibrated model's prediction."""

    engine: str
    n_workers: int
    measured: float
    predicted: float
    cost: CostModel
    per: str = "iteration"  # what one measured / predicted figure is the time of
    cores: int | None = None  # the cores the simulation gave workers and server (None: one each)
    #: (lowest, highest) measured/predicted over the rounds ``typical`` took this one from
    spread: tuple[float, float] | None = None

    @property
    def server_shares_a_core(self) -> bool:
        """True when the prediction folded the server onto a worker's core (too few cores)."""
        return self.cores is not None and self.cores < self.n_workers + 1

    @property
    def ratio(self) -> float:
        """measured / predicted: 1 is a perfect model, 2 means reality is twice as slow."""
        return self.measured / self.predicted

    @property
    def error(self) -> float:
        """How far off, as a factor ≥ 1 either way: max(ratio, 1/ratio)."""
        return max(self.ratio, 1 / self.ratio)

    def __repr__(self) -> str:
        spread = (f", {self.spread[0]:.2f}–{self.spread[1]:.2f} over the rounds"
                  if self.spread else "")
        return (
            f"Prediction({self.engine} ×{self.n_workers}: measured {self.measured * 1e3:.3g} ms, "
            f"model {self.predicted * 1e3:.3g} ms per {self.per}, ratio {self.ratio:.2f}{spread})"
        )


def typical(predictions) -> Prediction:
    """The prediction of median ratio among several rounds (calibrate, then measure, each
    time), carrying the spread of all their ratios: one round is one calibration and one set
    of timings, and a shared machine can move either; the median of interleaved rounds moves
    much less, and the spread says how much."""
    from dataclasses import replace

    if isinstance(predictions, Prediction):
        return predictions
    if (isinstance(predictions, (str, bytes)) or not hasattr(predictions, "__iter__")):
        raise TypeError(f"predictions: expected Predictions, got {type(predictions).__name__}")
    predictions = list(predictions)
    if not predictions or not all(isinstance(p, Prediction) for p in predictions):
        raise TypeError("predictions: expected a non-empty list of Predictions, got "
                        f"{[type(p).__name__ for p in predictions]}")
    ranked = sorted(predictions, key=lambda p: p.ratio)
    ratios = [p.ratio for p in ranked]
    return replace(ranked[(len(ranked) - 1) // 2], spread=(ratios[0], ratios[-1]))


def measure_and_predict(engine, X, y, *, n_iter: int = 20, repeat: int = 7) -> Prediction:
    """Calibrate a ``CostModel`` on a real ``engine``, then time MapReduce rounds on it.

    The prediction is the simulated engine's time per iteration with that model and the same
    data and worker count. Calibration never times a round (α, latency, β come from echo
    round trips, the compute from the map task timed on the workers), so agreement is a test
    of the model, not a fit to the answer.
    """
    from mlpar.cluster.cost_model import calibrate

    if not (hasattr(engine, "start") and hasattr(engine, "submit")):
        raise TypeError(f"engine: expected an open Engine (mlpar.cluster.engines.make_engine), "
                        f"got {type(engine).__name__}")
    X, y = _check_data(X, y)
    n_iter = limits.rounds("n_iter", n_iter)
    engine.start()
    cost = calibrate(engine, X, y, repeat=repeat, work=least_squares.partial_gradient)
    # Two runs; the first iteration of each is a warm-up (first transfers, caches). The median
    # iteration is robust to the odd one hit by another program on a shared machine.
    runs = [gradient_descent(X, y, engine=engine, n_iter=n_iter + 1) for _ in range(2)]
    measured = float(np.median(np.concatenate([np.diff(r.times)[1:] for r in runs])))
    # Workers on this machine (processes, a LocalCluster) share its cores with the server: the
    # simulation gets the same number of cores. A remote cluster's nodes are its own business.
    cores = local_cores(engine)
    simulated = gradient_descent(X, y, n_workers=engine.n_workers, n_iter=2, cost=cost,
                                 cores=cores)
    return Prediction(engine.name, engine.n_workers, measured, simulated.time_per_iteration, cost,
                      cores=cores)


def local_cores(engine) -> int | None:
    """The usable cores of this machine when ``engine``'s workers run on it, else None."""
    from mlpar.core import environment

    local = engine.name == "processes" or (engine.name == "dask" and getattr(engine, "local", False))
    return environment.usable_cores() if local else None


# -- The key/value model of Dean & Ghemawat, and backup tasks for stragglers --------------------


def map_shuffle_reduce(records, mapper, reducer, *, n_map: int = 4, n_reduce: int = 2) -> dict:
    """Key/value MapReduce in one process, phase by phase (Dean & Ghemawat 2004, section 2).

    ``records`` are cut into ``n_map`` contiguous splits (fewer if there are fewer records).
    **map**: ``mapper(record)`` yields ``(key, value)`` pairs. **shuffle**: every pair goes to
    reduce task ``crc32(repr(key)) mod n_reduce``, a hash partition that is the same in every
    process (unlike Python's ``hash`` of a str), where the values are grouped by key.
    **reduce**: ``reducer(key, values)`` per key. Returns ``{key: reducer(key, values)}`` in
    key order. Lesson 05's gradient is the case of one key whose reducer is a sum (the
    summation form of Chu et al. 2006).
    """
    import zlib

    if isinstance(records, (str, bytes, dict)) or not hasattr(records, "__iter__"):
        raise TypeError(f"records: expected a sequence of records (a list, an array), got "
                        f"{type(records).__name__}")
    if hasattr(records, "__len__"):
        limits.elements("records", len(records), itemsize=64)  # a Python object per record
    records = list(records)
    mapper = validation.callable_("mapper", mapper)
    reducer = validation.callable_("reducer", reducer)
    n_map = validation.positive_int("n_map", n_map, maximum=1 << 16)
    n_reduce = validation.positive_int("n_reduce", n_reduce, maximum=1 << 16)
    partitions: list[dict] = [{} for _ in range(n_reduce)]
    for split in splits.shards(len(records), min(n_map, len(records))) if records else []:
        for record in records[split]:  # one map task: its split's records
            for key, value in mapper(record):
                part = partitions[zlib.crc32(repr(key).encode()) % n_reduce]
                part.setdefault(key, []).append(value)  # the shuffle: group by key
    out = {}
    for part in partitions:  # one reduce task per partition
        for key in sorted(part):
            out[key] = reducer(key, part[key])
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class MapPhase:
    """A simulated map phase: when it ended, compute spent, and the backup copies."""

    makespan: float
    busy: float  # worker-seconds of compute, lost copies included (until they were stopped)
    backups: int  # backup copies started
    won: int  # tasks whose backup finished first


def map_phase(n_tasks: int, n_workers: int, cost: CostModel, *, samples_per_task: int = 1000,
              backups: bool = False) -> MapPhase:
    """Simulate ``n_tasks`` equal map tasks pulled by ``n_workers`` workers, each copy of a task
    priced by ``cost.compute_time`` on the worker that runs it (its straggler, its jitter).

    Workers take the next task as they become free. With ``backups`` (Dean & Ghemawat 2004,
    section 3.6), a worker that finds no task left starts a *backup* copy of the running task
    expected to finish last that has no copy yet; the task is done when either copy is, and the
    other copy is stopped then. Messages are not priced: the phase is compute only, so the
    effect of backups is seen alone. Until the last task is handed out, a run with backups is
    the run without them, draw for draw (each worker draws from its own seeded stream).
    """
    import heapq

    n_tasks = validation.positive_int("n_tasks", n_tasks, maximum=1 << 20)
    n_workers = validation.positive_int("n_workers", n_workers, maximum=1 << 16)
    if not isinstance(cost, CostModel):
        raise TypeError(f"cost: expected a CostModel, got {type(cost).__name__}")
    samples = validation.positive_int("samples_per_task", samples_per_task)
    backups = validation.flag("backups", backups)
    rngs = cost.worker_rngs(n_workers)
    done = [np.inf] * n_tasks
    copies: dict[int, list] = {}  # task -> [(worker, start, end, ticket)] of running copies
    live: set[int] = set()  # tickets of events still valid (a stopped copy's event is not)
    events = [(0.0, ticket, w, -1) for ticket, w in enumerate(range(n_workers))]
    heapq.heapify(events)
    live.update(range(n_workers))
    ticket, next_task, busy, started, won = n_workers, 0, 0.0, 0, 0
    while events:
        t, token, w, task = heapq.heappop(events)
        if token not in live:
            continue
        live.discard(token)
        if task >= 0:  # a copy of ``task`` finished on w: the task is done, stop its other copy
            running = copies.pop(task)
            won += int(running[0][0] != w)  # the first copy is the original
            done[task] = t
            for worker, _begin, end, other in running:
                if worker == w:
                    continue
                live.discard(other)
                busy -= end - t  # the stopped copy ran only until now
                heapq.heappush(events, (t, ticket, worker, -1))  # that worker is free now
                live.add(ticket)
                ticket += 1
        if next_task < n_tasks:
            task, next_task = next_task, next_task + 1
        elif backups:
            single = [k for k, c in copies.items() if len(c) == 1]
            if not single:
                continue
            task = max(single, key=lambda k: copies[k][0][2])
            started += 1
        else:
            continue
        seconds = cost.compute_time(w, samples, rngs[w])
        busy += seconds
        copies.setdefault(task, []).append((w, t, t + seconds, ticket))
        heapq.heappush(events, (t + seconds, ticket, w, task))
        live.add(ticket)
        ticket += 1
    return MapPhase(float(max(done)), float(busy), started, won)
