"""What a distributed step costs: computation, messages (α + β·bytes, plus latency) and stragglers.

The model every simulation in the course uses, and that ``calibrate`` fits to this machine
(Hockney's α–β model of a message, 1994, with the latency that LogP separates from it):

* a message of ``b`` bytes *occupies* the sender's and the receiver's link for α + β·b seconds
  (α: the per-message overhead such as pickling and a system call; β: seconds per byte, the
  inverse of bandwidth), and arrives ``latency`` seconds after it leaves the link. Latency does
  not occupy the link: messages in flight overlap, so m messages sent at once take m(α + β·b)
  + latency, not m(α + β·b + latency);
* a gradient over ``n`` samples takes ``per_sample · n`` seconds on a worker,
* times ``slowdown`` on the one ``straggler`` worker (a node that is slower, e.g. shared or
  throttled),
* times a random factor 1 + E, E ~ Exponential(mean ``jitter``), drawn per task from each
  worker's own seeded stream (occasional hiccups: garbage collection, a noisy neighbour).

Collectives in closed form (Thakur, Rabenseifner and Gropp 2005), for ``M`` bytes per node:
``flat_reduce_time`` (everybody sends to one server, whose link serializes them),
``tree_reduce_time`` (⌈log₂ m⌉ levels of pairwise sends) and ``ring_allreduce_time``
(2(m − 1) steps of M/m bytes: each node sends 2(m − 1)/m · M bytes, bandwidth-optimal).
A reduce leaves the sum on one node, an all-reduce on every node: compare like with like,
with ``flat_allreduce_time`` and ``tree_allreduce_time`` (the reduce, then a broadcast back).
MPICH's own all-reduces, the strongest in this model: ``recursive_doubling_allreduce_time``
(short messages: log₂ m steps) and ``halving_doubling_allreduce_time`` (Rabenseifner's, long
messages: bandwidth-optimal in 2 log₂ m steps), both for a power-of-two number of nodes.
``mlpar.cluster.collectives`` runs the same schedules on the simulated cluster.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from mlpar.cluster import tasks
from mlpar.core import seeding, validation


@dataclass(frozen=True)
class CostModel:
    """Seconds per message (α), per byte (β), in flight (latency) and per sample; stragglers."""

    alpha: float = 1e-4
    beta: float = 1e-9
    per_sample: float = 1e-8
    straggler: int | None = None
    slowdown: float = 1.0
    jitter: float = 0.0
    seed: int = 0
    latency: float = 0.0

    def __post_init__(self):
        validation.non_negative("alpha", self.alpha)
        validation.non_negative("beta", self.beta)
        validation.non_negative("per_sample", self.per_sample)
        if self.straggler is not None:
            validation.integer("straggler", self.straggler, minimum=0)
        validation.number("slowdown", self.slowdown, low=1.0)
        validation.non_negative("jitter", self.jitter)
        validation.seed("seed", self.seed)
        validation.non_negative("latency", self.latency)

    def message_time(self, nbytes: int) -> float:
        """α + β·nbytes: how long one message holds a link (its latency comes on top)."""
        nbytes = validation.integer("nbytes", nbytes, minimum=0)
        return self.alpha + self.beta * nbytes

    def transfer_time(self, nbytes: int) -> float:
        """α + β·nbytes + latency: from the start of sending to the arrival of one message."""
        return self.message_time(nbytes) + self.latency

    def flat_reduce_time(self, n_workers: int, nbytes: int) -> float:
        """m workers send ``nbytes`` each to one server at once: its link takes them in turn."""
        m = validation.positive_int("n_workers", n_workers)
        return m * self.message_time(nbytes) + self.latency

    def tree_reduce_time(self, n_nodes: int, nbytes: int) -> float:
        """A binary-tree reduce of ``nbytes`` per node: ⌈log₂ m⌉ levels of disjoint pairs."""
        m = validation.positive_int("n_nodes", n_nodes)
        return math.ceil(math.log2(m)) * self.transfer_time(nbytes) if m > 1 else 0.0

    def flat_allreduce_time(self, n_workers: int, nbytes: int) -> float:
        """Flat reduce, then the server sends the sum back to every worker through its link."""
        return 2 * self.flat_reduce_time(n_workers, nbytes)

    def tree_allreduce_time(self, n_nodes: int, nbytes: int) -> float:
        """Tree reduce onto node 0, then a broadcast down the same tree: 2⌈log₂ m⌉ levels."""
        return 2 * self.tree_reduce_time(n_nodes, nbytes)

    def ring_allreduce_time(self, n_nodes: int, nbytes: int) -> float:
        """Ring all-reduce: 2(m − 1) steps, each node sending a block of nbytes/m to the next.

        Each node sends 2(m − 1) blocks, 2(m − 1)/m · nbytes when m divides nbytes (otherwise
        the blocks differ by a byte and the figure holds on average): under twice the data
        whatever m, bandwidth-optimal; the 2(m − 1) latencies are its price at small messages.
        """
        m = validation.positive_int("n_nodes", n_nodes)
        nbytes = validation.integer("nbytes", nbytes, minimum=0)
        return 2 * (m - 1) * self.transfer_time(-(-nbytes // m)) if m > 1 else 0.0

    def recursive_doubling_allreduce_time(self, n_nodes: int, nbytes: int) -> float:
        """Recursive doubling: in step k every node swaps its whole partial sum with the node
        2^k away and adds, full duplex; ⌈log₂ m⌉ steps of ``nbytes``, half a tree's, so the
        short-message all-reduce of MPICH (Thakur, Rabenseifner and Gropp 2005). ``n_nodes``
        must be a power of two (other counts need an extra step that this form leaves out)."""
        m = _power_of_two("n_nodes", n_nodes)
        nbytes = validation.integer("nbytes", nbytes, minimum=0)
        return int(math.log2(m)) * self.transfer_time(nbytes)

    def halving_doubling_allreduce_time(self, n_nodes: int, nbytes: int) -> float:
        """Rabenseifner's all-reduce: a reduce-scatter by recursive halving (steps of
        ⌈M/2⌉, ⌈M/4⌉, … bytes, each node keeping the half it will own), then an all-gather by
        recursive doubling (the same sizes back): 2 log₂ m steps, about 2(m − 1)/m · M bytes
        per node, so bandwidth-optimal like the ring with far fewer steps; MPICH's choice for
        long messages. ``n_nodes`` must be a power of two, as above."""
        m = _power_of_two("n_nodes", n_nodes)
        nbytes = validation.integer("nbytes", nbytes, minimum=0)
        steps = [self.transfer_time(-(-nbytes // 2**k)) for k in range(1, int(math.log2(m)) + 1)]
        return 2 * sum(steps)

    def worker_rngs(self, n_workers: int) -> list[np.random.Generator]:
        """One independent random stream per worker (``SeedSequence(seed).spawn``).

        Each worker draws its slow-downs in its own task order, so the draws do not depend on
        how the simulator interleaves workers: the run is reproducible for a seed.
        """
        n = validation.positive_int("n_workers", n_workers)
        return seeding.worker_rngs(n, seed=self.seed)

    def compute_time(self, worker: int, n_samples: int, rng: np.random.Generator | None = None):
        """Seconds for ``worker`` to process ``n_samples``; ``rng`` draws the jitter factor."""
        validation.integer("worker", worker, minimum=0)
        n = validation.integer("n_samples", n_samples, minimum=0)
        seconds = self.per_sample * n
        if worker == self.straggler:
            seconds *= self.slowdown
        if self.jitter > 0:
            if rng is None:
                raise ValueError("rng: expected a Generator when jitter > 0, got None")
            seconds *= 1.0 + rng.exponential(self.jitter)
        return seconds

    def with_(self, **changes) -> CostModel:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        from mlpar.core.timing import format_seconds

        text = f"CostModel(α={format_seconds(self.alpha)}"
        if self.latency:
            text += f", latency={format_seconds(self.latency)}"
        text += (f", β={self.beta * 1e9:.3g} ns/B (≈{_bandwidth(self.beta)}), "
                 f"compute={format_seconds(self.per_sample)}/sample")
        if self.straggler is not None and self.slowdown != 1.0:
            text += f", worker {self.straggler} ×{self.slowdown:g}"
        if self.jitter:
            text += f", jitter {self.jitter:g}"
        return text + ")"


def _power_of_two(name: str, value) -> int:
    m = validation.positive_int(name, value, maximum=1 << 30)
    if m & (m - 1):
        raise ValueError(f"{name}: expected a power of two (partners 1, 2, 4, … apart), got {m}")
    return m


def _bandwidth(beta: float) -> str:
    return "∞ GB/s" if beta == 0 else f"{1e-9 / beta:.3g} GB/s"


# ---------------------------------------------------------------------------------------------
# Calibration: fit α, latency, β and the per-sample time to real runs on this machine.


def measure_per_sample(X: np.ndarray, y: np.ndarray, repeat: int = 7, *, work=None) -> float:
    """Seconds per sample of ``work(X, y, w)`` in this process, one BLAS thread.

    ``work`` defaults to ``tasks.row_pass`` (Xᵀ(Xw − y)); an algorithm passes its own task.
    One thread, because each worker process of the real engines also runs single-threaded
    (the course gives every worker one core). The median of ``repeat`` timings, not the best:
    the prediction is compared with an average iteration, under the same machine load.
    """
    from threadpoolctl import threadpool_limits

    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1, finite=True)
    y = validation.array("y", y, ndim=1, dtype=np.float64, finite=True)
    validation.same_length("X", X, "y", y)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    work = tasks.row_pass if work is None else validation.callable_("work", work)
    w = np.zeros(X.shape[1])
    with threadpool_limits(limits=1):
        work(X, y, w)  # warm-up: page in, load BLAS
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            work(X, y, w)
            times.append(time.perf_counter() - start)
    return float(np.median(times)) / len(X)


def _check_engine(engine) -> None:
    # The cost model sits below the engines (they import it), so it checks what it needs.
    if not hasattr(engine, "submit") or not hasattr(engine, "put") or not hasattr(engine, "n_workers"):
        raise TypeError(f"engine: expected an open Engine (mlpar.cluster.engines.make_engine), "
                        f"got {type(engine).__name__}")


def _check_sizes(sizes) -> None:
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes: expected a sequence of message sizes in bytes, got "
                        f"{type(sizes).__name__}")


def measure_compute(engine, X: np.ndarray, y: np.ndarray, *, work=None, repeat: int = 7) -> float:
    """Seconds per sample of ``work(Xᵢ, yᵢ, w)`` timed on every worker of ``engine`` at once.

    Each worker gets a contiguous shard of the rows. Every repeat is one task per worker, all
    workers together, each timing a single call on the worker: the conditions of a real round,
    where a worker wakes up for one call while the others compute too (sharing cores and memory
    bandwidth). Timing many calls back to back inside one task reads faster than that (warm
    caches, a core that never idles), and the model then promised rounds the engine never
    ran. The slowest
    worker of each repeat counts, since a round waits for it; the median over repeats is
    returned. No message is timed.
    """
    from mlpar.core import splits

    _check_engine(engine)
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    work = tasks.row_pass if work is None else validation.callable_("work", work)
    parts = splits.shards(len(y), engine.n_workers)
    refs = [(engine.put(i, X[s]), engine.put(i, y[s])) for i, s in enumerate(parts)]
    w = np.zeros(X.shape[1])
    rows = np.array([s.stop - s.start for s in parts])
    per_sample = [max(np.array(engine.gather([engine.submit(i, tasks.timed_once, work, *refs[i], w)
                                              for i in range(engine.n_workers)])) / rows)
                  for _ in range(repeat + 1)][1:]  # the first is a warm-up: page in, load BLAS
    # A round waits for its slowest worker in *that* round: the median of each repeat's slowest,
    # not the slowest of each worker's median (which is smaller whenever they take turns).
    return float(np.median(per_sample))


def _round_trips(engine, payload, resident, workers: int, repeat: int,
                 pause: float = 0.0) -> float:
    """Median seconds for echoes of ``payload`` sent to ``workers`` workers at once, each
    after ``pause`` seconds of waiting (``measure_links``)."""
    run = [engine.submit(i, tasks.echo, payload, resident[i]) for i in range(workers)]
    engine.gather(run)  # warm-up for this size
    trips = []
    for _ in range(repeat):
        if pause:
            time.sleep(pause)
        start = time.perf_counter()
        engine.gather([engine.submit(i, tasks.echo, payload, resident[i]) for i in range(workers)])
        trips.append(time.perf_counter() - start)
    return float(np.median(trips))


_RESOLUTION = 1e-9  # below a nanosecond, a fitted time is the bisection's rounding: call it 0


def echo_round(n_workers: int, alpha: float, latency: float) -> float:
    """The model's time for empty echoes to ``n_workers`` workers at once (flat server)."""
    n_workers = validation.positive_int("n_workers", n_workers, maximum=1 << 20)
    alpha = validation.non_negative("alpha", alpha)
    latency = validation.non_negative("latency", latency)
    link = n_workers * alpha  # the broadcast holds the server's link until then
    for i in range(n_workers):  # replies are ready in broadcast order and queue for the link
        link = max(link, (i + 1) * alpha + latency) + alpha
    return link + latency


#: the longest wait ``measure_links`` leaves before an echo (a round's compute is shorter)
MAX_PAUSE = 0.1
#: a compute shorter than this (0.1 ms) keeps the cores awake: ``calibrate`` then sends echoes
#: back to back, as lesson 06's minibatch updates send their messages
MIN_PAUSE = 1e-4


def measure_links(engine, sizes=(8, 1 << 20), repeat: int = 7, *,
                  pause: float = 0.0) -> tuple[float, float, float]:
    """α (link held per message), latency (in flight, overlapping) and β through ``engine``.

    Echoes of the smallest size to one worker take t₁ ≈ 2(α + latency); to all m workers at
    once, t_m: with overlap, only the α's queue on the server's link. ``echo_round`` gives the
    model's t_m for an α with latency = t₁/2 − α; it grows with α, so bisection finds the α
    that reproduces t_m. β comes from the largest size to one worker, as in
    ``measure_messages``. Values that noise makes negative are clipped to 0.
    Returns ``(alpha, latency, beta)``; with one worker, latency is 0 (nothing overlaps).

    ``pause``: seconds to wait before each timed echo. Echoes sent back to back find the
    server and the workers awake; in a round, the server waits idle while the workers compute,
    and its next messages pay for waking up again (an idle core, an idle virtual CPU on a
    cloud machine).
    ``calibrate`` waits as long as one worker's compute, so the echoes see what a round sees.
    """
    _check_engine(engine)
    _check_sizes(sizes)
    sizes = sorted(validation.integer("sizes", s, minimum=8, maximum=1 << 30) for s in sizes)
    if sizes[0] == sizes[-1]:
        raise ValueError(f"sizes: expected at least two different sizes, got {sizes}")
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    pause = validation.number("pause", pause, low=0, high=MAX_PAUSE)
    m = engine.n_workers
    resident = [engine.put(i, np.zeros(1)) for i in range(m)]
    small, large = np.ones(sizes[0] // 8), np.ones(sizes[-1] // 8)
    one = _round_trips(engine, small, resident, 1, repeat, pause)
    big = _round_trips(engine, large, resident, 1, repeat, pause)
    beta = max((big - one) / 2 / (sizes[-1] - sizes[0]), 0.0)
    one = max(one - 2 * beta * sizes[0], 0.0)
    if m == 1:
        return one / 2, 0.0, beta
    every = _round_trips(engine, small, resident, m, repeat, pause) - 2 * beta * sizes[0]
    low, high = 0.0, one / 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if echo_round(m, mid, one / 2 - mid) < every else (low, mid)
    alpha = (low + high) / 2
    latency = one / 2 - alpha
    return (alpha if alpha > _RESOLUTION else 0.0, latency if latency > _RESOLUTION else 0.0, beta)


def measure_messages(engine, sizes=(8, 1 << 20), repeat: int = 7):
    """α and β from round trips of a small and a large array to worker 0 (no overlap).

    An echo task sends b bytes to worker 0 and gets b bytes back: round trip ≈ 2(α + β·b).
    Like the algorithms' tasks, it refers to a small array placed on the worker beforehand.
    With the medians t_s, t_l of ``repeat`` trips of the smallest and largest size,
    β = (t_l − t_s) / 2(b_l − b_s) and α = t_s/2 − β·b_s: here α includes the latency, as if
    messages could not overlap (``measure_links`` separates the two). A negative value, noise
    on a busy machine, is clipped to 0. Returns ``(alpha, beta)``.
    """
    _check_engine(engine)
    _check_sizes(sizes)
    sizes = sorted(validation.integer("sizes", s, minimum=8, maximum=1 << 30) for s in sizes)
    if sizes[0] == sizes[-1]:
        raise ValueError(f"sizes: expected at least two different sizes, got {sizes}")
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    resident = [engine.put(0, np.zeros(1))]
    one_way = [_round_trips(engine, np.ones(b // 8), resident, 1, repeat) / 2 for b in sizes]
    beta = max((one_way[-1] - one_way[0]) / (sizes[-1] - sizes[0]), 0.0)
    return max(float(one_way[0] - beta * sizes[0]), 0.0), float(beta)


def calibrate(engine, X: np.ndarray, y: np.ndarray, *, repeat: int = 7, work=None) -> CostModel:
    """A ``CostModel`` measured through ``engine``: α, latency, β and compute on its workers.

    Compute first: ``measure_compute`` (``work``, default ``tasks.row_pass``, timed on every
    worker at once). Then messages: ``measure_links`` (echo round trips, one worker and all at
    once), each echo sent after a pause as long as one worker's compute, the server's idle wait
    in a round (capped at ``MAX_PAUSE``; none below ``MIN_PAUSE``). Nothing here times a whole
    round of an algorithm, so a model built from these figures *predicts* a round; comparing
    the prediction with a measured round tests the model.
    """
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1, finite=True)
    y = validation.array("y", y, ndim=1, dtype=np.float64, finite=True)
    validation.same_length("X", X, "y", y)
    _check_engine(engine)
    per_sample = measure_compute(engine, X, y, work=work, repeat=repeat)
    pause = min(per_sample * -(-len(y) // engine.n_workers), MAX_PAUSE)
    pause = pause if pause >= MIN_PAUSE else 0.0
    alpha, latency, beta = measure_links(engine, repeat=repeat, pause=pause)
    return CostModel(alpha=alpha, beta=beta, per_sample=per_sample, latency=latency)
