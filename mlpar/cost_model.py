"""What a distributed step costs: computation, messages (α + β·bytes) and stragglers.

The model every simulation in the course uses, and that ``calibrate`` fits to this machine:

* a message of ``b`` bytes occupies the sender's and the receiver's link for α + β·b seconds
  (α: latency plus per-message overhead such as pickling and waking a process; β: seconds per
  byte, the inverse of bandwidth);
* a gradient over ``n`` samples takes ``per_sample · n`` seconds on a worker,
* times ``slowdown`` on the one ``straggler`` worker (a node that is slower, e.g. shared or
  throttled),
* times a random factor 1 + E, E ~ Exponential(mean ``jitter``), drawn per task from each
  worker's own seeded stream (occasional hiccups: garbage collection, a noisy neighbour).

With all factors 1 the time of a MapReduce round on m workers follows by hand (see
``simulated_cluster``); calibrated on a real engine, the model predicts that engine's
per-iteration time, which is how the lessons check it before trusting it at 256 workers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from . import tasks, validation


@dataclass(frozen=True)
class CostModel:
    """Seconds per message (α), per byte (β) and per sample; one straggler; random slow-downs."""

    alpha: float = 1e-4
    beta: float = 1e-9
    per_sample: float = 1e-8
    straggler: int | None = None
    slowdown: float = 1.0
    jitter: float = 0.0
    seed: int = 0

    def __post_init__(self):
        validation.non_negative("alpha", self.alpha)
        validation.non_negative("beta", self.beta)
        validation.non_negative("per_sample", self.per_sample)
        if self.straggler is not None:
            validation.integer("straggler", self.straggler, minimum=0)
        validation.number("slowdown", self.slowdown, low=1.0)
        validation.non_negative("jitter", self.jitter)
        validation.seed("seed", self.seed)

    def message_time(self, nbytes: int) -> float:
        """α + β·nbytes: how long one message holds a link."""
        nbytes = validation.integer("nbytes", nbytes, minimum=0)
        return self.alpha + self.beta * nbytes

    def worker_rngs(self, n_workers: int) -> list[np.random.Generator]:
        """One independent random stream per worker (``SeedSequence(seed).spawn``).

        Each worker draws its slow-downs in its own task order, so the draws do not depend on
        how the simulator interleaves workers: the run is reproducible for a seed.
        """
        n = validation.positive_int("n_workers", n_workers)
        return [np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(n)]

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
        from .timing import format_seconds

        text = (
            f"CostModel(α={format_seconds(self.alpha)}, β={self.beta * 1e9:.3g} ns/B "
            f"(≈{_bandwidth(self.beta)}), compute={format_seconds(self.per_sample)}/sample"
        )
        if self.straggler is not None and self.slowdown != 1.0:
            text += f", worker {self.straggler} ×{self.slowdown:g}"
        if self.jitter:
            text += f", jitter {self.jitter:g}"
        return text + ")"


def _bandwidth(beta: float) -> str:
    return "∞ GB/s" if beta == 0 else f"{1e-9 / beta:.3g} GB/s"


# ---------------------------------------------------------------------------------------------
# Calibration: fit α, β and the per-sample time to real runs on this machine.


def measure_per_sample(X: np.ndarray, y: np.ndarray, repeat: int = 7) -> float:
    """Seconds per sample of ``tasks.partial_gradient`` in this process, one BLAS thread.

    One thread, because each worker process of the real engines also runs single-threaded
    (the course gives every worker one core). The median of ``repeat`` timings, not the best:
    the prediction is compared with an average iteration, under the same machine load.
    """
    from threadpoolctl import threadpool_limits

    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    repeat = validation.positive_int("repeat", repeat)
    w = np.zeros(X.shape[1])
    with threadpool_limits(limits=1):
        tasks.partial_gradient(X, y, w)  # warm-up: page in, load BLAS
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            tasks.partial_gradient(X, y, w)
            times.append(time.perf_counter() - start)
    return float(np.median(times)) / len(X)


def measure_messages(engine, sizes=(8, 1 << 20), repeat: int = 7):
    """Measure α and β with round trips of a small and a large array through a real ``engine``.

    An echo task sends b bytes to worker 0 and gets b bytes back: round trip ≈ 2(α + β·b).
    Like the algorithms' tasks, it refers to a small array placed on the worker beforehand.
    With the medians t_s, t_l of ``repeat`` trips of the smallest and largest size,
    β = (t_l − t_s) / 2(b_l − b_s) and α = t_s/2 − β·b_s. (A least-squares line through
    several sizes is dominated by the large messages, and its intercept, α, drowns in their
    noise.) A negative value, noise on a busy machine, is clipped to 0. Returns ``(alpha, beta)``.
    """
    sizes = sorted(validation.integer("sizes", s, minimum=8) for s in sizes)
    if sizes[0] == sizes[-1]:
        raise ValueError(f"sizes: expected at least two different sizes, got {sizes}")
    repeat = validation.positive_int("repeat", repeat)
    one_way = []
    resident = engine.put(0, np.zeros(1))
    for nbytes in sizes:
        payload = np.ones(nbytes // 8)
        engine.gather([engine.submit(0, tasks.echo, payload, resident)])  # warm-up for this size
        trips = []
        for _ in range(repeat):
            start = time.perf_counter()
            engine.gather([engine.submit(0, tasks.echo, payload, resident)])
            trips.append(time.perf_counter() - start)
        one_way.append(np.median(trips) / 2)
    beta = max((one_way[-1] - one_way[0]) / (sizes[-1] - sizes[0]), 0.0)
    return max(float(one_way[0] - beta * sizes[0]), 0.0), float(beta)


def calibrate(engine, X: np.ndarray, y: np.ndarray, *, repeat: int = 7) -> CostModel:
    """A ``CostModel`` measured on this machine: α, β through ``engine``, compute locally."""
    alpha, beta = measure_messages(engine, repeat=repeat)
    return CostModel(alpha=alpha, beta=beta, per_sample=measure_per_sample(X, y, repeat=repeat))
