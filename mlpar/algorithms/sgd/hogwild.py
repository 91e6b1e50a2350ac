"""Parallel SGD on one shared weight vector: serial, with a lock, and lock-free (Hogwild).

The model and its one-sample update are in ``mlpar.algorithms.sgd.sparse_logistic``.

Parallel strategy: ``threads`` Python threads share one ``w`` (a numpy array, no copies).
Each epoch draws one permutation of the samples (from ``seed``), starts ``threads`` threads,
gives thread ``t`` the ``t``-th contiguous chunk of it, and joins them; a spin barrier makes
the threads begin their chunks at the same moment. The per-chunk loop is a numba
``nogil=True`` function, so the threads really run at the same time, on different cores.
The variants differ only in what surrounds one update:

* ``serial``: one thread, no lock (the reference);
* ``locked``: a spin lock (``mlpar.cpu.spinlock``) around every update, so updates never
  overlap: correct by construction, but only one thread makes progress at a time;
* ``atomic``: no lock, but every coordinate's ``w[j] -= ...`` is one atomic
  compare-and-swap loop (``spinlock.atomic_subtract``): reads may be stale, no update is
  ever lost. This is the model the Hogwild paper's theorem assumes;
* ``lock-free``: no lock at all (Hogwild: Niu, Recht, Ré and Wright, 2011). Two threads may
  read ``w_j`` while the other is writing it: a *stale read* (the gradient used an old value)
  or, more rarely, a *lost update* (two read-modify-writes of ``w_j`` interleave and one
  increment vanishes). ``mlpar.algorithms.sgd.conflicts`` counts both.

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

from mlpar.algorithms.sgd.sparse_data import SparseProblem
from mlpar.algorithms.sgd.sparse_logistic import (
    check_training_data,
    logistic_loss,
    minus_sigmoid_gradient,
    sgd_update,
)
from mlpar.algorithms.training import TrainingResult
from mlpar.core import limits, validation

# mlpar.core.threads first among ours: it picks numba's thread-safe layer before anything runs.
from mlpar.core import threads as _threads  # noqa: F401
from mlpar.cpu.spinlock import acquire, arrive_and_wait, atomic_subtract, new_lock, release

VARIANTS = ("serial", "locked", "atomic", "lock-free")
# what surrounds one update in _worker (numba compiles one function for all three)
LOCK_FREE, LOCKED, ATOMIC = 0, 1, 2
_MODES = {"lock-free": LOCK_FREE, "locked": LOCKED, "atomic": ATOMIC, "serial": LOCK_FREE}
NO_ROWS = np.zeros(0, dtype=np.int64)  # an empty order: compiles a kernel without running it


@numba.njit(nogil=True, cache=True)
def _serial_epoch(indptr, indices, data, y, w, order, step):
    """The reference: one pass over ``order``, one update per sample."""
    for k in range(order.size):
        sgd_update(indptr, indices, data, y, w, order[k], step)


@numba.njit(nogil=True, inline="always")
def sgd_update_atomic(indptr, indices, data, y, w, i, step):
    """``sgd_update`` whose writes are atomic subtractions; returns the retries they needed."""
    start, stop = indptr[i], indptr[i + 1]
    margin = 0.0
    for p in range(start, stop):
        margin += data[p] * w[indices[p]]
    scale = step * y[i] * minus_sigmoid_gradient(y[i] * margin)
    retries = 0
    for p in range(start, stop):
        retries += atomic_subtract(w, indices[p], scale * data[p])
    return retries


@numba.njit(nogil=True, cache=True)
def _worker(indptr, indices, data, y, w, order, start, stop, step, lock, mode, barrier, parties):
    """One thread's chunk ``order[start:stop]``; returns the spins it waited for the lock
    (``LOCKED``) or the compare-and-swaps it retried (``ATOMIC``)."""
    arrive_and_wait(barrier, parties)  # all threads start their chunks together
    waits = 0
    for k in range(start, stop):
        if mode == LOCKED:
            waits += acquire(lock)
            sgd_update(indptr, indices, data, y, w, order[k], step)
            release(lock)
        elif mode == ATOMIC:
            waits += sgd_update_atomic(indptr, indices, data, y, w, order[k], step)
        else:
            sgd_update(indptr, indices, data, y, w, order[k], step)
    return waits


def run_in_threads(func, arg_lists) -> list:
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


def chunk_bounds(n_samples: int, threads: int) -> np.ndarray:
    """``threads + 1`` boundaries cutting one epoch's order into contiguous chunks."""
    n_samples = validation.positive_int("n_samples", n_samples)
    threads = limits.workers("threads", threads)
    return np.linspace(0, n_samples, threads + 1).astype(np.int64)


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class SGDRun(TrainingResult):
    """One SGD run: ``losses[e]`` after epoch ``e`` (index 0: before the first) against
    ``times[e]``, the wall time spent updating (loss evaluation is not counted).

    ``updates`` is the number of sample updates made; ``lock_waits`` the spins the locked
    variant's threads made waiting for the lock; ``cas_retries`` the compare-and-swaps the
    atomic variant had to repeat because another thread wrote the coordinate in between.
    """

    variant: str
    threads: int
    updates: int
    lock_waits: int
    cas_retries: int = 0

    @property
    def updates_per_second(self) -> float:
        return self.updates / float(self.times[-1])

    def __repr__(self) -> str:
        return (
            f"SGDRun({self.label}: {self.updates} updates in {self.times[-1]:.3g} s, "
            f"{self.updates_per_second:.3g} updates/s, final loss {self.final_loss:.6f})"
        )


def run_label(variant: str, threads: int) -> str:
    """'lock-free, 2 threads': how a run is named in tables and legends."""
    variant = validation.choice("variant", variant, VARIANTS)
    threads = validation.positive_int("threads", threads)
    return f"{variant}, {threads} thread{'s' if threads > 1 else ''}"


def _validate_run(problem, variant, threads, step, epochs, decay, seed):
    problem = check_training_data(problem)
    variant = validation.choice("variant", variant, VARIANTS)
    threads = limits.workers("threads", threads)
    step = validation.positive("step", step)
    epochs = validation.positive_int("epochs", epochs, maximum=10_000)
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

    ``variant`` is 'serial', 'locked', 'atomic' or 'lock-free'; the shuffles depend on ``seed`` only,
    so every variant sees the same samples in the same epochs.
    """
    problem, variant, threads, step, epochs, decay, seed = _validate_run(
        problem, variant, threads, step, epochs, decay, seed
    )
    p = problem
    rng = np.random.default_rng(seed)
    w = np.zeros(p.n_features)
    lock = new_lock()
    mode = _MODES[variant]
    # Compile (or load from cache) on this thread, before any worker thread can race to it.
    _serial_epoch(p.indptr, p.indices, p.data, p.y, w, NO_ROWS, step)
    barrier = new_lock()
    _worker(p.indptr, p.indices, p.data, p.y, w, NO_ROWS, 0, 0, step, lock, mode, barrier, 1)

    losses = [logistic_loss(p, w)]
    seconds = [0.0]
    waits = 0
    for epoch in range(epochs):
        order = rng.permutation(p.n_samples)
        bounds = chunk_bounds(p.n_samples, threads)
        gamma = step * decay**epoch
        barrier[0] = 0
        # The clock includes starting and joining the threads: a real cost of each epoch.
        t0 = time.perf_counter()
        if variant == "serial":
            _serial_epoch(p.indptr, p.indices, p.data, p.y, w, order, gamma)
        else:
            args = [
                (p.indptr, p.indices, p.data, p.y, w, order, bounds[t], bounds[t + 1], gamma,
                 lock, mode, barrier, threads)
                for t in range(threads)
            ]
            waits += sum(int(r) for r in run_in_threads(_worker, args))
        seconds.append(seconds[-1] + time.perf_counter() - t0)
        losses.append(logistic_loss(p, w) if np.all(np.isfinite(w)) else np.inf)
        validation.finite_loss(losses, "step", step)
    return SGDRun(
        label=run_label(variant, threads), weights=w, times=np.array(seconds),
        losses=np.array(losses), variant=variant, threads=threads,
        updates=epochs * p.n_samples, lock_waits=waits if variant == "locked" else 0,
        cas_retries=waits if variant == "atomic" else 0,
    )


def plot_runs(runs, ax=None):
    """Loss against wall time (seconds spent updating) for several ``SGDRun``s."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
    for run in runs:
        if not isinstance(run, SGDRun):
            raise TypeError(f"runs: expected SGDRun items, got {type(run).__name__}")
        ax.plot(run.times, run.losses, marker=".", label=run.label)
    ax.set_xlabel("wall time spent updating [s]")
    ax.set_ylabel("mean logistic loss")
    ax.legend()
    return ax
