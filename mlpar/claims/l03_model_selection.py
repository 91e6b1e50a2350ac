"""Lesson 03's claims: parallel cross-validation changes nothing but the time; the GIL."""

from __future__ import annotations

import time

import numpy as np

from mlpar.algorithms.model_selection import cross_validation as cv
from mlpar.algorithms.model_selection import speedup
from mlpar.core import claims, splits, validation
from mlpar.cpu import gil, scaling_laws

BUSY = "another program is using the cores, or this process may use only one"


def parallel_cv_gives_identical_scores(quick: bool = False):
    """The same folds on 2 loky processes and serially give bit-identical scores."""
    quick = validation.flag("quick", quick)
    statement = "largest score difference, parallel vs serial CV"
    if reason := _processes():
        return claims.check("03", statement, None, at_most=0.0, not_applicable=reason)
    X, y = cv.load_dataset("breast_cancer")
    folds = splits.repeated_kfold(len(y), 5, 1 if quick else 3, seed=0)
    model = cv.make_model("logistic")
    serial = cv.cross_validate(model, X, y, folds).scores
    parallel = cv.cross_validate(model, X, y, folds, backend="loky", n_jobs=2).scores
    return claims.check("03", statement, float(np.max(np.abs(serial - parallel))), at_most=0.0,
                        cause="a task depends on where it runs (an unseeded random_state?)")


def _two_cores() -> str:
    """Why a speedup on 2 workers cannot be measured here, or ''."""
    return claims.precondition(cores=2)


def _processes() -> str:
    """Why worker processes cannot start here (no process semaphores: /dev/shm missing or
    read-only), or ''. joblib would run "loky" on threads; ``cv.require_processes`` refuses."""
    from joblib._multiprocessing_helpers import mp

    return "" if mp is not None else ("joblib cannot start worker processes here (no semaphores "
                                      "shared between processes: is /dev/shm missing or read-only?)")


#: The CV claim's threshold. Ten equal fits on 2 workers can reach 2×; on quiet 2-core
#: machines the measurement reads 1.6-1.8× (the pool's per-call cost, the parent process and
#: the OS share the two cores), so a threshold of 1.7 sat inside the run-to-run noise
#: (issue 36: 1.62× and 1.69× on two quiet runs). 1.5× is what "parallel CV pays" needs, and
#: it lies several spreads below what such machines measure.
CV_SPEEDUP = 1.5


def _round_spread(round_speedups) -> str:
    r = np.asarray(round_speedups, dtype=float)
    return f"{len(r)} interleaved rounds: {r.min():.2f}–{r.max():.2f}×"


def parallel_cv_speeds_up(quick: bool = False, *, curve=None, n_fits: int = speedup.FIXED_FITS):
    """2 × 5-fold CV (10 fits of >= 50 ms) on 2 loky processes is >= 1.5× the serial run.

    ``curve``: a strong-scaling ``SpeedupCurve`` of ``n_fits`` fits already measured on 1 and
    2 workers (the lesson passes the one it plots, ``speedup.strong_and_scaled``'s first, and
    its plan's ``fixed_fits``: 10 on most machines, more on big ones). ``n_fits`` must be even:
    an odd count cannot split evenly over 2 workers (``speedup.best_possible_speedup``).
    """
    quick = validation.flag("quick", quick)
    n_fits = validation.positive_int("n_fits", n_fits, maximum=10_000)
    if n_fits % 2:
        raise ValueError(f"n_fits: expected an even number of fits (2 workers, equal shares), "
                         f"got {n_fits}")
    statement = ("2×5-fold CV" if n_fits == 10 else f"CV of {n_fits} fits") + \
        " on 2 processes vs serial"
    if curve is not None:
        if not isinstance(curve, scaling_laws.SpeedupCurve) or curve.serial_samples is not None \
                or 1 not in curve.workers or 2 not in curve.workers:
            raise TypeError("curve: expected a strong-scaling SpeedupCurve measured on 1 and 2 "
                            f"workers, got {curve!r:.80}")
    if reason := _two_cores() or (_processes() if curve is None else ""):
        return claims.check("03", statement, None, at_least=CV_SPEEDUP, unit="×",
                            not_applicable=reason)
    if curve is None:
        X, y = cv.load_dataset("breast_cancer")
        curve = speedup.parallel_cv_curve(speedup.heavy_model(), X, y, n_fits=n_fits,
                                          repeat=2 if quick else 4)
    times = dict(zip(curve.workers, curve.times, strict=True))
    one, two = curve.workers.index(1), curve.workers.index(2)
    rounds = np.asarray(curve.samples)[:, one] / np.asarray(curve.samples)[:, two]
    return claims.check("03", f"{statement} ({_round_spread(rounds)})", times[1] / times[2],
                        at_least=CV_SPEEDUP, unit="×", cause=BUSY)


def nogil_threads_beat_python_threads(quick: bool = False, *, table=None):
    """On 2 threads, numba nogil code gains >= 1.5× more than pure Python (held by the GIL).

    ``table``: a ``gil.GILTable`` already measured (the lesson passes the one it shows).
    """
    quick = validation.flag("quick", quick)
    table = _gil_table(table)
    statement = "threads' speedup, numba nogil ÷ pure Python"
    if reason := _two_cores():
        return claims.check("03", statement, None, at_least=1.5, unit="×", not_applicable=reason)
    n = 500_000 if quick else 2_000_000
    table = table or gil.gil_table(
        n_python=n, n_numba=20 * n, n_tasks=2, n_workers=2, repeat=1 if quick else 3,
        pools=("sequential", "threads"))
    ratio = table.speedup("numba nogil", "threads") / table.speedup("python", "threads")
    return claims.check("03", statement, ratio, at_least=1.5, unit="×", cause=BUSY)


def _gil_table(table):
    if table is not None and not isinstance(table, gil.GILTable):
        raise TypeError(f"table: expected a GILTable (mlpar.cpu.gil.gil_table) or None, got "
                        f"{type(table).__name__}")
    return table


def processes_escape_the_gil(quick: bool = False, *, table=None):
    """Pure-Python work on 2 processes runs >= 1.5× faster than in one (tasks of ~0.1 s+).

    ``table``: a ``gil.GILTable`` already measured (the lesson passes the one it shows).
    """
    quick = validation.flag("quick", quick)
    table = _gil_table(table)
    statement = "pure Python on 2 processes vs sequential"
    if reason := _two_cores() or (_processes() if table is None else ""):
        return claims.check("03", statement, None, at_least=1.5, unit="×", not_applicable=reason)
    cause = BUSY + "; or process start-up and pickling outweigh short tasks"
    if table is not None:
        return claims.check("03", statement, table.speedup("python", "processes"), at_least=1.5,
                            unit="×", cause=cause)
    n = 1_000_000 if quick else 2_000_000
    gil.run_work("python", 10, 2, "processes", 2)  # start the pool's processes, untimed

    order = [("sequential", "processes")]

    def one_round() -> float:  # the same two tasks one after another and on 2 processes
        seconds = {}
        for pool in order[-1]:
            start = time.perf_counter()
            gil.run_work("python", n, 2, pool, 2)
            seconds[pool] = time.perf_counter() - start
        order.append(order[-1][::-1])  # the next round runs them the other way round
        return seconds["sequential"] / seconds["processes"]

    rounds = claims.measure_rounds(one_round, at_least=1.5, max_rounds=9 if quick else 25,
                                   budget_s=10 if quick else 20)
    return claims.check_rounds("03", statement, rounds, unit="×", cause=cause)


CLAIMS = (parallel_cv_gives_identical_scores, parallel_cv_speeds_up,
          nogil_threads_beat_python_threads, processes_escape_the_gil)
