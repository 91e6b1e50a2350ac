"""A SIMULATION of lock-free SGD on many threads: when do concurrent updates collide?

A laptop has 2 to 8 cores; the Hogwild question is what happens with 16 or 64. This module
does not run threads. It replays lock-free SGD on a *virtual clock*: ``P`` simulated
threads each take their chunk of one shuffled epoch and process it update by update. The
conflict model, one update of sample ``i`` with ``k_i`` nonzeros:

* it lasts ``D_i = 1 + k_i`` time units (a fixed overhead plus one unit per coordinate);
* it reads ``w_e`` at ``start + (1 - window) · D_i`` and writes ``w_e`` at ``start + D_i``,
  so ``window`` ∈ [0, 1] is the share of an update during which a write by someone else
  makes its gradient stale;
* the write of ``w_j`` is a read-modify-write that takes ``rmw`` time units: another
  thread's write of ``w_j`` less than ``rmw`` before ours is overwritten (a lost update).

Events are processed in time order (ties: lower thread first). At a write the model counts,
per coordinate, a *stale read* if another thread wrote ``w_j`` after this update read it,
and a *lost update* if that write was less than ``rmw`` ago (counted, not undone: the
model's weights apply every write): the same two events that
``mlpar.algorithms.sgd.conflicts.count_conflicts`` counts on real threads. Threads start at random phases
within one mean update, so they do not march in lock-step.

``window`` and ``rmw`` are not known in advance; ``calibrate`` chooses them so that the
simulation at 2 threads reproduces the stale-read and lost-update rates *measured* on real
threads for the same problem. Everything else (more threads) is extrapolation by the model,
and the notebook labels it so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from mlpar.algorithms.sgd.conflicts import RaceCounts
from mlpar.algorithms.sgd.sparse_data import SparseProblem
from mlpar.algorithms.sgd.sparse_logistic import check_training_data, minus_sigmoid_gradient
from mlpar.core import seeding, validation


@numba.njit(cache=True)
def _simulate(indptr, indices, data, y, n_features, order, bounds, phases, window, rmw, step):
    n_threads = bounds.size - 1
    w = np.zeros(n_features)
    last_write = np.empty(n_features)
    for j in range(n_features):
        last_write[j] = -np.inf
    # Per thread: position in its chunk, the time of its next event, whether that event is
    # the read (0) or the write (1) of the current update, when it read, its gradient scale.
    pos = np.empty(n_threads, dtype=np.int64)
    event = np.empty(n_threads)
    kind = np.zeros(n_threads, dtype=np.int64)
    read_at = np.zeros(n_threads)
    scale = np.zeros(n_threads)
    for t in range(n_threads):
        pos[t] = bounds[t]
        if pos[t] < bounds[t + 1]:
            i = order[pos[t]]
            event[t] = phases[t] + (1.0 - window) * (1 + indptr[i + 1] - indptr[i])
        else:
            event[t] = np.inf
    stale = 0
    lost = 0
    writes = 0
    finish = 0.0
    while True:
        t = 0
        for u in range(1, n_threads):  # the next event (ties: the lower thread)
            if event[u] < event[t]:
                t = u
        now = event[t]
        if now == np.inf:
            break
        finish = now
        i = order[pos[t]]
        a, b = indptr[i], indptr[i + 1]
        if kind[t] == 0:
            margin = 0.0
            for p in range(a, b):
                margin += data[p] * w[indices[p]]
            scale[t] = step * y[i] * minus_sigmoid_gradient(y[i] * margin)
            read_at[t] = now
            kind[t] = 1
            event[t] = now + window * (1 + b - a)
        else:
            for p in range(a, b):
                j = indices[p]
                if last_write[j] > read_at[t]:
                    stale += 1
                if last_write[j] > now - rmw:
                    lost += 1
                w[j] -= scale[t] * data[p]
                last_write[j] = now
                writes += 1
            pos[t] += 1
            kind[t] = 0
            if pos[t] < bounds[t + 1]:
                nxt = order[pos[t]]
                event[t] = now + (1.0 - window) * (1 + indptr[nxt + 1] - indptr[nxt])
            else:
                event[t] = np.inf
    return w, stale, lost, writes, finish


@dataclass(frozen=True)
class SimulatedRun(RaceCounts):
    """Result of one simulated epoch (a simulation, not a measurement)."""

    window: float = 1.0
    rmw: float = 0.0
    virtual_time: float = 0.0
    serial_time: float = 0.0
    w: np.ndarray | None = None

    @property
    def speedup(self) -> float:
        """Serial virtual time ÷ this run's virtual time (lock-free, no memory contention)."""
        return self.serial_time / self.virtual_time

    def __repr__(self) -> str:
        return (
            f"SimulatedRun(threads={self.threads}, stale rate={self.stale_rate:.4g}, "
            f"lost rate={self.lost_rate:.4g}, simulated speedup={self.speedup:.3g})"
        )


def simulate(
    problem: SparseProblem,
    threads: int,
    *,
    window: float = 1.0,
    rmw: float = 0.0,
    step: float = 0.5,
    seed: int = 0,
) -> SimulatedRun:
    """Simulate one lock-free epoch on ``threads`` virtual threads (see the module docstring).

    The epoch's shuffle is the one ``mlpar.algorithms.sgd.hogwild.run_sgd`` draws for its first epoch with
    the same ``seed``, and thread ``t`` takes the ``t``-th chunk of it, so with one thread
    the simulation performs exactly serial SGD's first epoch. The start phases come from an
    independent child seed.
    """
    problem = check_training_data(problem)
    threads = validation.positive_int("threads", threads)
    window = validation.number("window", window, low=0.0, high=1.0)
    rmw = validation.non_negative("rmw", rmw)
    step = validation.positive("step", step)
    seed = validation.seed("seed", seed)
    if threads > problem.n_samples:
        raise ValueError(
            f"threads: expected at most one thread per sample ({problem.n_samples}), got {threads}"
        )
    order = np.random.default_rng(seed).permutation(problem.n_samples)
    (phase_seed,) = seeding.worker_seeds(1, seed=seed)
    durations = 1.0 + np.diff(problem.indptr)
    phases = np.random.default_rng(phase_seed).random(threads) * durations.mean()
    bounds = np.linspace(0, problem.n_samples, threads + 1).astype(np.int64)
    p = problem
    w, stale, lost, writes, end = _simulate(
        p.indptr, p.indices, p.data, p.y, p.n_features, order, bounds, phases, window, rmw, step
    )
    # One thread needs Σ D_i; the first phase offset is not work, so leave it out.
    serial = float(durations.sum())
    return SimulatedRun(
        threads, int(writes), int(stale), int(lost), window, rmw, end - phases.min(), serial, w
    )


def _solve(rate_of, target: float, high: float, iterations: int = 40) -> float:
    # Bisection on a non-decreasing function of one parameter on [0, high].
    if target <= 0.0:
        return 0.0
    lo, hi = 0.0, high
    if rate_of(hi) <= target:
        return hi
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if rate_of(mid) < target:
            lo = mid
        else:
            hi = mid
    # The simulated rate is a step function (it counts events), so return the smallest
    # parameter found that reaches the target rather than a midpoint that may fall short.
    return hi


def fit_to_measurement(
    problem: SparseProblem,
    stale_rate: float,
    lost_rate: float,
    *,
    threads: int = 2,
    seed: int = 0,
) -> tuple[float, float]:
    """``(window, rmw)`` that make the simulation reproduce measured rates at ``threads``.

    ``window`` is found first (``rmw`` does not change stale reads), then ``rmw`` with that
    window, each by bisection; a rate above what the model can produce gives the largest
    parameter tried (``window = 1``; ``rmw`` = one mean update).
    """
    stale_rate = validation.number("stale_rate", stale_rate, low=0.0, high=1.0)
    lost_rate = validation.number("lost_rate", lost_rate, low=0.0, high=1.0)
    threads = validation.integer("threads", threads, minimum=2)
    window = _solve(
        lambda x: simulate(problem, threads, window=x, seed=seed).stale_rate, stale_rate, 1.0
    )
    mean_duration = float(1.0 + np.diff(problem.indptr).mean())
    rmw = _solve(
        lambda x: simulate(problem, threads, window=window, rmw=x, seed=seed).lost_rate,
        lost_rate,
        mean_duration,
    )
    return window, rmw
