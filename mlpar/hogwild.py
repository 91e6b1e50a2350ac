"""Parallel SGD on one shared weight vector: serial, with a lock, and lock-free (Hogwild).

The model is sparse logistic regression, ``L(w) = (1/m) Σ_i log(1 + exp(-y_i x_i·w))``.
One SGD update on sample ``i`` touches only the coordinates ``e = nonzeros(x_i)``:

    margin = Σ_{j∈e} x_ij w_j                (read w_e)
    g      = -y_i σ(-y_i · margin)           (σ = logistic function)
    w_j   ← w_j - γ g x_ij   for j ∈ e       (write w_e)

Parallel strategy: ``threads`` Python threads share one ``w`` (a numpy array, no copies).
Each epoch draws one permutation of the samples (from ``seed``), starts ``threads`` threads,
gives thread ``t`` the ``t``-th contiguous chunk of it, and joins them; a spin barrier makes
the threads begin their chunks at the same moment. The per-chunk loop is a numba
``nogil=True`` function, so the threads really run at the same time, on different cores.
The variants differ only in what surrounds one update:

* ``serial``: one thread, no lock (the reference);
* ``locked``: a spin lock (``mlpar.spinlock``) around every update, so updates never
  overlap: correct by construction, but only one thread makes progress at a time;
* ``lock-free``: no lock at all (Hogwild). Two threads may read ``w_j`` while the other
  is writing it: a *stale read* (the gradient used an old value) or, more rarely, a *lost
  update* (two read-modify-writes of ``w_j`` interleave and one increment vanishes). On
  sparse data both are rare, and SGD's own noise swamps them.

With one thread the lock-free variant performs exactly the serial updates in the same
order, so it returns the very same weights: the tests check this bit for bit.

    >>> run = run_sgd(problem, "lock-free", threads=2, step=0.5, epochs=5, seed=0)
    >>> run.updates_per_second, run.final_loss
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numba
import numpy as np

# mlpar.threads first among ours: it picks numba's thread-safe layer before anything runs.
from . import threads as _threads  # noqa: F401
from . import validation
from .sparse_data import SparseProblem, make_sparse_problem
from .spinlock import acquire, arrive_and_wait, load_relaxed, new_lock, release

VARIANTS = ("serial", "locked", "lock-free")


@numba.njit(nogil=True, inline="always")
def _minus_sigmoid_gradient(z):
    # d/dz log(1 + exp(-z)) = -σ(-z), written so that exp never overflows.
    if z >= 0.0:
        e = np.exp(-z)
        return -e / (1.0 + e)
    return -1.0 / (1.0 + np.exp(z))


@numba.njit(nogil=True, inline="always")
def _update(indptr, indices, data, y, w, i, step):
    start, stop = indptr[i], indptr[i + 1]
    margin = 0.0
    for p in range(start, stop):
        margin += data[p] * w[indices[p]]
    scale = step * y[i] * _minus_sigmoid_gradient(y[i] * margin)
    for p in range(start, stop):
        w[indices[p]] -= scale * data[p]


@numba.njit(nogil=True, cache=True)
def _serial_epoch(indptr, indices, data, y, w, order, step):
    """The reference: one pass over ``order``, one update per sample."""
    for k in range(order.size):
        _update(indptr, indices, data, y, w, order[k], step)


@numba.njit(nogil=True, cache=True)
def _worker(
    indptr, indices, data, y, w, order, start, stop, step, lock, use_lock, barrier, parties
):
    """One thread's chunk ``order[start:stop]``; returns how often it found the lock taken."""
    arrive_and_wait(barrier, parties)  # all threads start their chunks together
    waits = 0
    for k in range(start, stop):
        if use_lock:
            waits += acquire(lock)
        _update(indptr, indices, data, y, w, order[k], step)
        if use_lock:
            release(lock)
    return waits


@numba.njit(nogil=True, cache=True)
def _instrumented_worker(
    indptr, indices, data, y, w, hits, seen, order, start, stop, step, barrier, parties
):
    """A lock-free chunk that also counts stale reads; ``hits`` counts lost updates.

    Stale read: the value of ``w_j`` used for the margin differs from the value found just
    before writing ``w_j`` (another thread wrote it in between). Lost update: every write
    to ``w_j`` also does ``hits[j] += 1`` with the same unsynchronised read-modify-write;
    increments that vanish (``Σ hits`` < writes made) were overwritten by another thread.
    The barrier makes all ``parties`` threads start together, so they overlap in time.
    """
    arrive_and_wait(barrier, parties)
    stale = 0
    for k in range(start, stop):
        i = order[k]
        a, b = indptr[i], indptr[i + 1]
        margin = 0.0
        for p in range(a, b):
            seen[p - a] = load_relaxed(w, indices[p])
            margin += data[p] * seen[p - a]
        scale = step * y[i] * _minus_sigmoid_gradient(y[i] * margin)
        for p in range(a, b):
            j = indices[p]
            now = load_relaxed(w, j)
            if now != seen[p - a]:
                stale += 1
            w[j] = now - scale * data[p]
            hits[j] += 1
    return stale


@numba.njit(nogil=True, cache=True)
def _mean_logistic_loss(indptr, indices, data, y, w):
    total = 0.0
    for i in range(indptr.size - 1):
        margin = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            margin += data[p] * w[indices[p]]
        z = y[i] * margin
        total += np.log1p(np.exp(-z)) if z > 0.0 else -z + np.log1p(np.exp(z))
    return total / (indptr.size - 1)


def _in_threads(func, arg_lists) -> list:
    """Run ``func(*args)`` on one new thread per ``args``, join them all, return the results.

    Plain threads rather than a pool: a pool may hand two tasks to one thread, which would
    quietly run "2 threads" one after the other (and deadlock on the start barrier).
    """
    results = [None] * len(arg_lists)
    errors = []

    def body(k, args):
        try:
            results[k] = func(*args)
        except BaseException as exc:  # re-raised on the calling thread below
            errors.append(exc)

    # Daemon threads: if the caller is interrupted while starting them, a thread left spinning
    # at the start barrier must not keep the interpreter from exiting.
    workers = [
        threading.Thread(target=body, args=(k, a), daemon=True) for k, a in enumerate(arg_lists)
    ]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    if errors:
        raise errors[0]
    return results


def _check_problem(problem) -> SparseProblem:
    if not isinstance(problem, SparseProblem):
        raise TypeError(
            f"problem: expected a SparseProblem (mlpar.sparse_data.make_sparse_problem), "
            f"got {type(problem).__name__}"
        )
    return problem


def logistic_loss(problem: SparseProblem, w: np.ndarray) -> float:
    """Mean logistic loss ``(1/m) Σ log(1 + exp(-y_i x_i·w))`` of weights ``w``."""
    problem = _check_problem(problem)
    w = validation.array("w", w, ndim=1, dtype=np.float64, finite=True)
    if w.size != problem.n_features:
        raise ValueError(f"w: expected {problem.n_features} weights, got {w.size}")
    return float(_mean_logistic_loss(problem.indptr, problem.indices, problem.data, problem.y, w))


@dataclass(frozen=True, repr=False)
class SGDRun:
    """One SGD run: loss after each epoch against the wall time spent updating.

    ``seconds[e]`` and ``losses[e]`` are taken after epoch ``e`` (index 0 = before the
    first epoch); loss evaluation is not counted in ``seconds``.
    """

    variant: str
    threads: int
    updates: int
    seconds: tuple[float, ...]
    losses: tuple[float, ...]
    w: np.ndarray
    lock_waits: int

    @property
    def final_loss(self) -> float:
        return self.losses[-1]

    @property
    def updates_per_second(self) -> float:
        return self.updates / self.seconds[-1]

    @property
    def label(self) -> str:
        return f"{self.variant}, {self.threads} thread{'s' if self.threads > 1 else ''}"

    def __repr__(self) -> str:
        return (
            f"SGDRun({self.label}: {self.updates} updates in {self.seconds[-1]:.3g} s, "
            f"{self.updates_per_second:.3g} updates/s, final loss {self.final_loss:.6f})"
        )


def _validate_run(problem, variant, threads, step, epochs, decay, seed):
    problem = _check_problem(problem)
    variant = validation.choice("variant", variant, VARIANTS)
    threads = validation.positive_int("threads", threads)
    step = validation.positive("step", step)
    epochs = validation.positive_int("epochs", epochs)
    decay = validation.number("decay", decay, low=0.0, high=1.0, low_open=True)
    seed = validation.seed("seed", seed)
    if variant == "serial" and threads != 1:
        raise ValueError(f"threads: the serial variant runs on 1 thread, got {threads}")
    return problem, variant, threads, step, epochs, decay, seed


def run_sgd(
    problem: SparseProblem,
    variant: str,
    *,
    threads: int = 1,
    step: float = 0.5,
    epochs: int = 5,
    decay: float = 0.9,
    seed: int = 0,
) -> SGDRun:
    """Train from ``w = 0`` for ``epochs`` passes; epoch ``e`` uses step ``step · decay**e``.

    ``variant`` is 'serial', 'locked' or 'lock-free'; the shuffles depend on ``seed`` only,
    so every variant sees the same samples in the same epochs.
    """
    problem, variant, threads, step, epochs, decay, seed = _validate_run(
        problem, variant, threads, step, epochs, decay, seed
    )
    p = problem
    rng = np.random.default_rng(seed)
    w = np.zeros(p.n_features)
    lock = new_lock()
    use_lock = variant == "locked"
    # Compile (or load from cache) on this thread, before any worker thread can race to it.
    empty = np.zeros(0, dtype=np.int64)
    _serial_epoch(p.indptr, p.indices, p.data, p.y, w, empty, step)
    barrier = new_lock()
    _worker(p.indptr, p.indices, p.data, p.y, w, empty, 0, 0, step, lock, use_lock, barrier, 1)

    losses = [logistic_loss(p, w)]
    seconds = [0.0]
    waits = 0
    for epoch in range(epochs):
        order = rng.permutation(p.n_samples)
        bounds = np.linspace(0, p.n_samples, threads + 1).astype(np.int64)
        gamma = step * decay**epoch
        barrier[0] = 0
        # The clock includes starting and joining the threads: a real cost of each epoch.
        t0 = time.perf_counter()
        if variant == "serial":
            _serial_epoch(p.indptr, p.indices, p.data, p.y, w, order, gamma)
        else:
            args = [
                (p.indptr, p.indices, p.data, p.y, w, order, bounds[t], bounds[t + 1], gamma,
                 lock, use_lock, barrier, threads)
                for t in range(threads)
            ]
            waits += sum(int(r) for r in _in_threads(_worker, args))
        seconds.append(seconds[-1] + time.perf_counter() - t0)
        losses.append(logistic_loss(p, w))
    return SGDRun(variant, threads, epochs * p.n_samples, tuple(seconds), tuple(losses), w, waits)


@dataclass(frozen=True)
class ConflictCount:
    """Races seen in one instrumented lock-free run (``writes`` = coordinate writes made)."""

    threads: int
    density: float
    writes: int
    stale_reads: int
    lost_updates: int

    @property
    def stale_rate(self) -> float:
        return self.stale_reads / self.writes

    @property
    def lost_rate(self) -> float:
        return self.lost_updates / self.writes


def count_conflicts(
    problem: SparseProblem,
    *,
    threads: int = 2,
    step: float = 0.5,
    epochs: int = 1,
    seed: int = 0,
) -> ConflictCount:
    """Run lock-free SGD with counters and report its stale reads and lost updates.

    Counting without atomics: a stale read is found by comparing the value read for the
    margin with a fresh read just before the write; a lost update by conservation, since
    every write also increments a shared counter ``hits[j]`` with a plain (non-atomic)
    ``+= 1`` and the threads count their own writes privately. With one thread both are 0.
    """
    problem, _, threads, step, epochs, _, seed = _validate_run(
        problem, "lock-free", threads, step, epochs, 1.0, seed
    )
    p = problem
    rng = np.random.default_rng(seed)
    w = np.zeros(p.n_features)
    hits = np.zeros(p.n_features, dtype=np.int64)
    row_sizes = np.diff(p.indptr)
    seen = [np.empty(int(row_sizes.max()), dtype=np.float64) for _ in range(threads)]
    empty = np.zeros(0, dtype=np.int64)
    barrier = new_lock()
    _instrumented_worker(
        p.indptr, p.indices, p.data, p.y, w, hits, seen[0], empty, 0, 0, step, barrier, 1
    )
    stale = 0
    writes = 0
    for _ in range(epochs):
        order = rng.permutation(p.n_samples)
        bounds = np.linspace(0, p.n_samples, threads + 1).astype(np.int64)
        barrier[0] = 0
        args = [
            (p.indptr, p.indices, p.data, p.y, w, hits, seen[t], order, bounds[t],
             bounds[t + 1], step, barrier, threads)
            for t in range(threads)
        ]
        stale += sum(int(r) for r in _in_threads(_instrumented_worker, args))
        writes += int(row_sizes.sum())
    lost = writes - int(hits.sum())
    return ConflictCount(threads, p.density, writes, stale, lost)


@dataclass(frozen=True)
class ConflictSweep:
    """Measured stale-read and lost-update rates of lock-free SGD against density."""

    threads: int
    counts: tuple[ConflictCount, ...]

    @property
    def densities(self) -> np.ndarray:
        return np.array([c.density for c in self.counts])

    def plot(self, ax=None):
        """Both rates against density, log-log; zero counts are drawn at the axis floor."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
        floor = 0.5 / max(c.writes for c in self.counts)
        ax.axhline(floor, color="gray", ls=":", lw=1, label="none counted (drawn here)")
        for attr, label, marker in (
            ("stale_rate", "stale reads", "o"),
            ("lost_rate", "lost updates", "s"),
        ):
            rates = np.array([getattr(c, attr) for c in self.counts])
            ax.plot(self.densities, np.maximum(rates, floor), marker=marker, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("density (share of nonzero features per sample)")
        ax.set_ylabel("events per coordinate write")
        ax.set_title(f"lock-free SGD, {self.threads} threads (measured)")
        ax.legend()
        return ax


def conflict_sweep(
    densities,
    *,
    n_features: int = 1000,
    writes: int = 1_000_000,
    threads: int = 2,
    seed: int = 0,
) -> ConflictSweep:
    """``count_conflicts`` on one problem per density, each with about ``writes`` writes.

    The number of samples is ``writes`` divided by the expected row size
    ``E[max(1, Binomial(n, density))] = n · density + (1 - density)**n``, so every point
    costs about the same time whatever its density.
    """
    densities = [
        validation.number(f"densities[{k}]", d, low=0.0, high=1.0, low_open=True)
        for k, d in enumerate(densities)
    ]
    if not densities:
        raise ValueError("densities: expected at least one density, got none")
    n_features = validation.positive_int("n_features", n_features)
    writes = validation.positive_int("writes", writes)
    threads = validation.positive_int("threads", threads)
    seed = validation.seed("seed", seed)
    counts = []
    for k, density in enumerate(densities):
        row_size = n_features * density + (1.0 - density) ** n_features
        n_samples = max(2 * threads, round(writes / row_size))
        problem = make_sparse_problem(n_samples, n_features, density, seed=seed + k)
        counts.append(count_conflicts(problem, threads=threads, seed=seed))
    return ConflictSweep(threads, tuple(counts))


def plot_runs(runs, ax=None):
    """Loss against wall time (seconds spent updating) for several ``SGDRun``s."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    for run in runs:
        if not isinstance(run, SGDRun):
            raise TypeError(f"runs: expected SGDRun items, got {type(run).__name__}")
        ax.plot(run.seconds, run.losses, marker=".", label=run.label)
    ax.set_xlabel("wall time spent updating [s]")
    ax.set_ylabel("mean logistic loss")
    ax.legend()
    return ax
