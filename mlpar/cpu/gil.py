"""The GIL by measurement: threads, processes and numba ``nogil``; joblib's overheads.

CPython's global interpreter lock lets one thread at a time run Python bytecode. So

* a **pure-Python CPU-bound** function gains nothing from threads (they take turns), but
  does gain from **processes** (each has its own interpreter and its own lock);
* a **numba** function compiled with ``nogil=True`` releases the lock while its machine code
  runs, so several threads run it at once, with no process start-up and no copying;
* the same numba function *without* ``nogil`` holds the lock and is serialised like Python.

Processes are not free: a task's function and arguments are pickled, sent through a pipe and
unpickled; a large array is better written once to a memory-mapped file that every worker maps
(joblib does this automatically above ``max_nbytes``). ``task_overhead``, ``transfer_time``
and ``received_type`` measure and show these costs.

The work here is the logistic map ``x <- r x (1 - x)``: every step needs the previous one,
so no compiler can skip or vectorise it, and Python and numba give bit-identical results.

    >>> gil_table(n_python=200_000, n_numba=20_000_000, n_tasks=2, n_workers=2)
"""

from __future__ import annotations

import pickle
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
from joblib import Parallel, delayed, parallel_config

from mlpar.core import cleanup, limits, timing, validation

POOLS = ("sequential", "threads", "processes")  # where gil's tasks run; cluster engines are elsewhere
JOBLIB_BACKENDS = ("sequential", "threading", "loky")
# Lesson-sized work only: numba's loops cannot be interrupted (Stop waits for them), and
# 10**9 logistic steps already take seconds compiled, many minutes in Python.
MAX_STEPS = 10**9
MAX_TASKS = 100_000
MAX_REPEAT = 1000
R = 3.9  # chaotic regime: the orbit never settles, so the loop cannot be shortcut


def _check_work(n_steps, x0) -> tuple[int, float]:
    return (validation.positive_int("n_steps", n_steps, maximum=MAX_STEPS),
            validation.number("x0", x0, low=0.0, high=1.0))


def python_work(n_steps: int, x0: float = 0.5) -> float:
    """``n_steps`` of the logistic map in pure Python: CPU-bound and holding the GIL."""
    n_steps, x = _check_work(n_steps, x0)
    for _ in range(n_steps):
        x = R * x * (1.0 - x)
    return x


@numba.njit(nogil=True, cache=False)
def _logistic_nogil(n_steps, x0):
    x = x0
    for _ in range(n_steps):
        x = R * x * (1.0 - x)
    return x


@numba.njit(cache=False)
def _logistic_gil(n_steps, x0):
    x = x0
    for _ in range(n_steps):
        x = R * x * (1.0 - x)
    return x


def nogil_work(n_steps: int, x0: float = 0.5) -> float:
    """The same map compiled by numba with ``nogil=True``: releases the GIL while it runs."""
    return _logistic_nogil(*_check_work(n_steps, x0))


def gil_work(n_steps: int, x0: float = 0.5) -> float:
    """The same compiled map *without* ``nogil``: fast, but threads still take turns."""
    return _logistic_gil(*_check_work(n_steps, x0))


WORKS = {"python": python_work, "numba nogil": nogil_work, "numba (GIL held)": gil_work}


def _starts(n_tasks: int) -> list[float]:
    # Each task starts from its own point so no two tasks compute the same orbit.
    return [0.5 + 1e-3 * i for i in range(n_tasks)]


def run_work(
    work: str, n_steps: int, n_tasks: int, pool: str, n_workers: int = 2
) -> list[float]:
    """Run ``n_tasks`` independent calls of ``WORKS[work]`` in one pool; return the results.

    ``threads`` uses a ``ThreadPoolExecutor``; ``processes`` uses joblib's loky pool, whose
    worker processes are reused between calls (so a warm-up call pays the start-up once).
    """
    validation.choice("work", work, WORKS)
    n_steps = validation.positive_int("n_steps", n_steps, maximum=MAX_STEPS)
    n_tasks = validation.positive_int("n_tasks", n_tasks, maximum=MAX_TASKS)
    validation.choice("pool", pool, POOLS)
    n_workers = limits.workers("n_workers", n_workers)
    func = WORKS[work]
    starts = _starts(n_tasks)
    if pool == "sequential":
        return [func(n_steps, x0) for x0 in starts]
    if pool == "threads":
        with ThreadPoolExecutor(max_workers=n_workers) as executor:
            return list(executor.map(func, [n_steps] * n_tasks, starts))
    cleanup.remove_stale_shm()  # what killed kernels' pools left in /dev/shm
    return Parallel(n_jobs=n_workers, backend="loky")(delayed(func)(n_steps, x0) for x0 in starts)


@dataclass(frozen=True)
class GILTable:
    """Wall time of the same batch of tasks per (work, pool), best of ``repeat``."""

    n_tasks: int
    n_workers: int
    steps: dict
    seconds: dict  # (work, pool) -> seconds
    pools: tuple = POOLS

    def speedup(self, work: str, pool: str) -> float:
        """How many times faster than running the tasks one after another in this process."""
        return self.seconds[(work, "sequential")] / self.seconds[(work, pool)]

    def __repr__(self) -> str:
        parallel = [e for e in self.pools if e != "sequential"]
        head = f"{'work':<18}{'steps':>12}" + "".join(f"{e:>13}" for e in self.pools)
        head += "".join(f"{'× ' + e:>13}" for e in parallel)
        lines = [head, "-" * len(head)]
        for work in self.steps:
            cells = "".join(f"{self.seconds[(work, e)] * 1e3:>10.1f} ms" for e in self.pools)
            ratios = "".join(f"{self.speedup(work, e):>12.2f}×" for e in parallel)
            lines.append(f"{work:<18}{self.steps[work]:>12,}{cells}{ratios}")
        return "\n".join(lines)

    def plot(self, ax=None):
        """Grouped bars: speedup over sequential per work and pool; dashed line at the workers."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3))
        works = list(self.steps)
        width = 0.38
        for j, pool in enumerate(e for e in self.pools if e != "sequential"):
            xs = np.arange(len(works)) + (j - 0.5) * width
            values = [self.speedup(w, pool) for w in works]
            bars = ax.bar(xs, values, width, label=pool)
            ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=8)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(
            self.n_workers, color="k", ls="--", lw=0.8, label=f"{self.n_workers} workers, ideal"
        )
        ax.set_xticks(np.arange(len(works)), works)
        ax.set_ylabel("speedup over sequential")
        top = max([self.n_workers] + [self.speedup(w, e) for w in works for e in self.pools])
        ax.set_ylim(0, top * 1.35)  # headroom: the legend sits above the bars and the ideal line
        ax.legend(fontsize=8, loc="upper left", ncol=3)
        return ax


def gil_table(
    n_python: int = 200_000,
    n_numba: int = 20_000_000,
    *,
    n_tasks: int = 2,
    n_workers: int = 2,
    repeat: int = 3,
    works: tuple = tuple(WORKS),
    pools: tuple = POOLS,
) -> GILTable:
    """Measure every work × pool pair on the same batch of ``n_tasks`` tasks.

    ``n_numba`` is larger than ``n_python`` because compiled code needs far less time per
    step; choose both so that a task lasts tens of milliseconds on your machine (the table
    reports the seconds), well above the pools' overheads.
    Compilation and the process pool's start-up happen in a warm-up call that is not timed.
    ``works`` and ``pools`` restrict the table to some rows and columns ('sequential' is
    always measured: it is what the speedups are relative to).
    """
    steps = {
        "python": validation.positive_int("n_python", n_python, maximum=MAX_STEPS),
        "numba nogil": validation.positive_int("n_numba", n_numba, maximum=MAX_STEPS),
        "numba (GIL held)": n_numba,
    }
    n_tasks = validation.positive_int("n_tasks", n_tasks, maximum=MAX_TASKS)
    n_workers = limits.workers("n_workers", n_workers)
    repeat = validation.positive_int("repeat", repeat, maximum=MAX_REPEAT)
    for work in works:
        validation.choice("works", work, WORKS)
    for pool in pools:
        validation.choice("pools", pool, POOLS)
    pools = tuple(e for e in POOLS if e == "sequential" or e in pools)
    steps = {w: n for w, n in steps.items() if w in works}
    cells = [(work, pool) for work in steps for pool in pools]
    for work, pool in cells:
        run_work(work, 10, n_tasks, pool, n_workers)  # compile / start the pool
    seconds = dict.fromkeys(cells, float("inf"))
    # Repeats go round all cells in turn, so a burst of load from elsewhere hits every pool
    # alike instead of spoiling one pool's samples; the best sample per cell is kept.
    for _ in range(repeat):
        for work, pool in cells:
            start = time.perf_counter()
            run_work(work, steps[work], n_tasks, pool, n_workers)
            seconds[(work, pool)] = min(seconds[(work, pool)], time.perf_counter() - start)
    return GILTable(n_tasks, n_workers, steps, seconds, pools)


# --- joblib's overheads -------------------------------------------------------------------


def _noop(i):
    return i


def _checksum(block: np.ndarray) -> float:
    return float(block[::4096].sum())


def _kind(block: np.ndarray) -> str:
    return type(block).__name__


def task_overhead(backend: str, *, n_tasks: int = 200, n_jobs: int = 2,
                  batch_size: int | str = "auto") -> float:
    """Seconds per task of running ``n_tasks`` no-op tasks through ``joblib.Parallel``.

    The work is nothing, so what is measured is dispatch: queueing, and for ``loky`` pickling
    the call, the round trip through a pipe and unpickling the result. The process pool is
    started (and reused) before the clock starts.

    ``batch_size``: joblib's. With ``"auto"`` the loky backend packs many tiny tasks into one
    batch (one round trip for the lot), so the figure is a share of a batch; the threading
    backend never batches. ``batch_size=1`` sends every task on its own on both: the cost of
    one task.
    """
    validation.choice("backend", backend, JOBLIB_BACKENDS)
    n_tasks = validation.positive_int("n_tasks", n_tasks, maximum=MAX_TASKS)
    n_jobs = limits.workers("n_jobs", n_jobs)
    if batch_size != "auto":
        batch_size = validation.positive_int("batch_size", batch_size, maximum=MAX_TASKS)
    cleanup.remove_stale_shm()  # what killed kernels' pools left in /dev/shm
    with parallel_config(backend=backend, n_jobs=n_jobs):
        Parallel()(delayed(_noop)(i) for i in range(n_jobs))  # warm-up: start workers
        start = time.perf_counter()
        Parallel(batch_size=batch_size)(delayed(_noop)(i) for i in range(n_tasks))
        return (time.perf_counter() - start) / n_tasks


def pickle_time(array: np.ndarray, repeat: int = 3) -> float:
    """Best time to pickle and unpickle ``array``: the copy a process pool pays per argument."""
    validation.real_array("array", validation.array("array", array, numeric=True))
    repeat = validation.positive_int("repeat", repeat, maximum=MAX_REPEAT)
    return timing.best_of(lambda: pickle.loads(pickle.dumps(array, protocol=pickle.HIGHEST_PROTOCOL)), repeat)


def _memmap_settings(memmap: bool) -> dict:
    # max_nbytes=None switches memmapping off; "1M" memmaps every array argument above 1 MB.
    cleanup.remove_stale_shm()  # what killed kernels' pools left in /dev/shm
    return {"max_nbytes": "1M", "mmap_mode": "r"} if memmap else {"max_nbytes": None}


def transfer_time(array: np.ndarray, *, memmap: bool, n_tasks: int = 4, n_jobs: int = 2) -> float:
    """Wall time of ``n_tasks`` loky tasks that each receive ``array`` and return a checksum.

    With ``memmap=False`` the array is pickled and piped to the workers for every task; with
    ``memmap=True`` joblib dumps it once to a file in a temporary folder (RAM-backed where
    possible) and each task receives only the file name, which the worker maps read-only.
    """
    validation.real_array("array", validation.array("array", array, numeric=True))
    memmap = validation.flag("memmap", memmap)
    n_tasks = validation.positive_int("n_tasks", n_tasks, maximum=MAX_TASKS)
    n_jobs = limits.workers("n_jobs", n_jobs)
    with parallel_config(backend="loky", n_jobs=n_jobs, **_memmap_settings(memmap)):
        Parallel()(delayed(_noop)(i) for i in range(n_jobs))
        start = time.perf_counter()
        Parallel()(delayed(_checksum)(array) for _ in range(n_tasks))
        return time.perf_counter() - start


def received_type(array: np.ndarray, *, memmap: bool, n_jobs: int = 2) -> str:
    """The type name of ``array`` as a loky worker sees it: 'memmap' or 'ndarray'."""
    validation.real_array("array", validation.array("array", array, numeric=True))
    memmap = validation.flag("memmap", memmap)
    n_jobs = limits.workers("n_jobs", n_jobs)
    with parallel_config(backend="loky", n_jobs=n_jobs, **_memmap_settings(memmap)):
        return Parallel()(delayed(_kind)(array) for _ in range(1))[0]
