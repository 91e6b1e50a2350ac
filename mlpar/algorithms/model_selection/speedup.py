"""How much faster is cross-validation on several workers? Strong and scaled speedups, measured.

Two questions, two measurements, kept apart:

* **strong scaling** (Amdahl): a fixed job (``FIXED_FITS`` fits) on 1, 2, ... workers;
* **scaled speedup** (Gustafson): the job grows with the workers (``FITS_PER_WORKER`` fits
  per worker), compared with one worker doing the same grown job.

Both time every configuration in interleaved rounds after an untimed warm-up
(``mlpar.cpu.scaling_laws``), so each speedup divides two times taken moments apart. The
warm-up gives every worker of each pool one fit (pool started, modules imported, code run
once), not a whole job: a whole untimed round would cost as much as a timed one. The
model is heavy on purpose: each fit lasts well over ``MIN_FIT_SECONDS`` (the lesson's rule: a
task much shorter than that is dominated by the pool's per-task cost).

Granularity matters too: 5 equal fits on 2 workers take 3 rounds of fits, so 5-fold CV can
never pass 5/3 ≈ 1.67× on 2 cores (``best_possible_speedup``). The claim that parallel CV
reaches 1.7× is therefore made on 2 × 5-fold (10 fits).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from mlpar.algorithms.model_selection import cross_validation as cv
from mlpar.core import limits, splits, validation
from mlpar.cpu import scaling_laws

MIN_FIT_SECONDS = 0.05
# Nearly no penalty and a tight tolerance: L-BFGS iterates long on the 495 product features.
HEAVY_PARAMS = {"clf__C": 1e4, "clf__tol": 1e-10}
FIXED_FITS = 10  # strong scaling: 2 × 5-fold
FITS_PER_WORKER = 4  # scaled speedup: p workers do 4p fits
FOLDS = 5


def heavy_model():
    """The lesson's slow model: standardise, degree-2 products, logistic regression."""
    return cv.make_model("logistic_poly", **HEAVY_PARAMS)


def best_possible_speedup(n_tasks: int, n_workers: int) -> float:
    """Speedup of ``n_tasks`` equal tasks on ``n_workers`` with no overhead at all."""
    n_tasks = validation.positive_int("n_tasks", n_tasks)
    n_workers = validation.positive_int("n_workers", n_workers)
    return n_tasks / math.ceil(n_tasks / n_workers)


def fit_seconds(model, X, y, *, repeat: int = 2, seed: int = 0) -> float:
    """Best wall time of one fit on the first fold's training rows (warmed up first)."""
    model, X, y = _check_inputs(model, X, y)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    train, test = splits.kfold(len(y), FOLDS, seed=seed)[0]
    cv.fit_and_score(model, {}, X, y, train, test)  # warm-up: imports, caches
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        cv.fit_and_score(model, {}, X, y, train, test)
        best = min(best, time.perf_counter() - start)
    return best


def warm_up_fits(n_workers: int) -> int:
    """Fits of the untimed warm-up of ``n_workers`` workers: one each (every worker imports
    the modules and runs a fit once; a whole job would add nothing but time)."""
    return validation.positive_int("n_workers", n_workers, maximum=1 << 20)


def fits(n_fits: int, n_samples: int, *, seed: int = 0) -> list:
    """``n_fits`` (train, test) pairs: repeated 5-fold, as many repeats as needed, cut."""
    n_fits = validation.positive_int("n_fits", n_fits, maximum=10_000)
    n_samples = validation.positive_int("n_samples", n_samples)
    repeats = math.ceil(n_fits / FOLDS)
    return splits.repeated_kfold(n_samples, FOLDS, repeats, seed=seed)[:n_fits]


def _check_inputs(model, X, y):
    cv.check_model(model)
    X, y = cv.check_data(X, y)
    if len(y) < FOLDS:
        raise ValueError(f"y: expected at least {FOLDS} samples for {FOLDS}-fold splits, got {len(y)}")
    return model, X, y


def cv_runner(model, X, y, *, seed: int = 0):
    """``run(n_workers, n_fits)``: cross-validate on loky with one BLAS thread per worker."""
    model, X, y = _check_inputs(model, X, y)
    seed = validation.seed("seed", seed)

    def run(n_workers: int, n_fits: int):
        return cv.cross_validate(model, X, y, fits(n_fits, len(y), seed=seed), backend="loky",
                                 n_jobs=n_workers, blas_threads=1)

    return run


def strong_and_scaled(model, X, y, workers, *, fixed_fits: int = FIXED_FITS,
                      fits_per_worker: int = FITS_PER_WORKER, repeat: int = 3,
                      progress: bool = False, scaled_workers=None):
    """(strong curve, scaled curve): fixed ``fixed_fits`` fits on ``workers``, and
    ``fits_per_worker`` × p on ``scaled_workers`` (the same counts when None).

    ``plan_sweep`` chooses all of these from a time and memory budget. Each worker count is
    warmed up by one fit per worker (``warm_up_fits``), untimed."""
    run = cv_runner(model, X, y)
    fixed_fits = validation.positive_int("fixed_fits", fixed_fits, maximum=100_000)
    fits_per_worker = validation.positive_int("fits_per_worker", fits_per_worker, maximum=100_000)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    progress = validation.flag("progress", progress)
    def warm_up(p):
        return run(p, warm_up_fits(p))

    strong = scaling_laws.speedup_curve(lambda p: run(p, fixed_fits), workers, repeat=repeat,
                                        progress=progress, warm_up=warm_up)
    scaled = scaling_laws.scaled_speedup_curve(lambda p, k: run(p, k * fits_per_worker),
                                               workers if scaled_workers is None else scaled_workers,
                                               repeat=repeat, progress=progress, warm_up=warm_up)
    return strong, scaled


# --- planning a sweep from a budget -------------------------------------------------------------
#
# Timing every worker count from 1 to the cores, with a job that grows with the count, costs
# time quadratic in the cores (387 s on 16 cores; an hour on 64). So the sweep doubles the
# workers (1, 2, 4, ..., cores) and stops where a time budget or a memory budget says so,
# predicting each configuration's time from one measured fit before running anything.

#: Seconds the strong and scaled sweeps may take together (a lesson cell has 30 s in all).
SWEEP_BUDGET_SECONDS = 20.0
#: Rounds of each sweep: five, so that every speedup has a spread with 4 degrees of freedom
#: (two rounds give one, and a gap must pass 12.7 spreads to count; five need 2.78).
SWEEP_ROUNDS = 5
#: Fewest rounds a plan falls back to when five would pass the budget (slow fits, one core).
MIN_SWEEP_ROUNDS = 2
#: Cost of one ``cross_validate`` call on a warm pool apart from its fits (dispatch, results).
CALL_SECONDS = 0.05
#: Memory one loky worker holds (an interpreter with numpy, scipy and scikit-learn imported,
#: and its copy of the data): a planning estimate, erring high.
WORKER_BYTES = 200 << 20
#: Lessons plan to use at most this share of the available memory.
MEMORY_SHARE = 0.25


def worker_counts(top: int) -> list[int]:
    """1, 2, 4, ... doubling below ``top``, then ``top`` itself: log2(top) + 1 points, not top."""
    top = validation.positive_int("top", top, maximum=1 << 20)
    counts = [1]
    while counts[-1] * 2 < top:
        counts.append(counts[-1] * 2)
    return counts + [top] if top > 1 else counts


def _job_seconds(n_workers: int, n_fits: int, cores: int, fit: float) -> float:
    """Predicted time of ``n_fits`` equal fits on ``n_workers`` (at most ``cores`` run at once)."""
    return math.ceil(n_fits / min(n_workers, cores)) * fit + CALL_SECONDS


@dataclass(frozen=True)
class SweepPlan:
    """What lesson 03's strong and scaled sweeps will run here, and what it should cost.

    ``stops``: why each sweep ends where it does (the cores, the time or the memory budget),
    in words; empty when every sweep reaches the cores.
    """

    cores: int
    fit_seconds: float
    strong_workers: tuple[int, ...]
    fixed_fits: int
    scaled_workers: tuple[int, ...]
    fits_per_worker: int
    repeat: int
    budget_seconds: float
    stops: tuple[str, ...]

    def _warm_ups(self) -> list[tuple[int, int]]:
        """(workers, fits) of the untimed warm-ups: one fit per worker, for each worker count
        of the strong sweep, then for 1 and each count of the scaled sweep (each once)."""
        counts = list(self.strong_workers) + list(dict.fromkeys([1, *self.scaled_workers]))
        return [(p, warm_up_fits(p)) for p in counts]

    def _calls(self) -> list[tuple[int, int]]:
        """(workers, fits) of every call one round makes, strong then scaled (p workers on
        p × fits_per_worker, and one worker on the same grown job for p > 1)."""
        calls = [(p, self.fixed_fits) for p in self.strong_workers]
        calls += [(p, p * self.fits_per_worker) for p in self.scaled_workers]
        return calls + [(1, p * self.fits_per_worker) for p in self.scaled_workers if p > 1]

    def _seconds(self, calls) -> float:
        return sum(_job_seconds(p, n, self.cores, self.fit_seconds) for p, n in calls)

    @property
    def seconds(self) -> float:
        """Predicted time of both sweeps: the untimed warm-ups and ``repeat`` timed rounds."""
        return self._seconds(self._warm_ups()) + self.repeat * self._seconds(self._calls())

    @property
    def strong_seconds(self) -> float:
        """Predicted time of the strong sweep alone, its warm-ups included."""
        return (self._seconds((p, warm_up_fits(p)) for p in self.strong_workers)
                + self.repeat * self._seconds((p, self.fixed_fits) for p in self.strong_workers))

    @property
    def fits(self) -> int:
        """Model fits the two sweeps run, warm-ups included."""
        return sum(n for _, n in self._warm_ups()) + self.repeat * sum(n for _, n in self._calls())

    @property
    def peak_bytes(self) -> int:
        """Memory of the largest pool the sweeps start (one ``WORKER_BYTES`` per process)."""
        return max(self.strong_workers + self.scaled_workers) * WORKER_BYTES

    def __repr__(self) -> str:
        lines = [f"strong scaling: {self.fixed_fits} fits on {list(self.strong_workers)} workers",
                 f"scaled speedup: {self.fits_per_worker} fits per worker on "
                 f"{list(self.scaled_workers)} workers",
                 f"predicted {self.seconds:.1f} s for {self.fits} fits of {self.fit_seconds * 1e3:.0f} ms "
                 f"(budget {self.budget_seconds:g} s), largest pool {self.peak_bytes / 2**20:,.0f} MiB"]
        return "\n".join(lines + [f"stops early: {why}" for why in self.stops])


def plan_sweep(fit_seconds: float, *, cores: int | None = None, memory_bytes: int | None = None,
               budget_seconds: float = SWEEP_BUDGET_SECONDS) -> SweepPlan:
    """Worker counts and job sizes for the strong and scaled sweeps within ``budget_seconds``.

    ``fit_seconds``: one fit's time, measured (``fit_seconds``). ``cores`` and ``memory_bytes``
    default to ``environment.usable_cores()`` and ``environment.available_memory_bytes()``
    (``MLPAR_HARDWARE`` fakes both). Worker counts double up to the cores, capped so that every
    pool fits in ``MEMORY_SHARE`` of the memory. The strong job grows to give each worker at least
    one fit (at least ``FIXED_FITS``, a multiple of 10); each sweep drops its largest counts until
    the strong sweep takes at most half the budget and both together the whole. One machine with
    one core still gets [1, 2] workers: two processes on one core, to see them gain nothing.
    """
    from mlpar.core import environment

    fit = validation.number("fit_seconds", fit_seconds, low=1e-6, high=3600.0)
    budget = validation.number("budget_seconds", budget_seconds, low=0.1, high=86_400.0)
    cores = environment.usable_cores() if cores is None else validation.positive_int(
        "cores", cores, maximum=1 << 16)
    memory = environment.available_memory_bytes() if memory_bytes is None else \
        validation.positive_int("memory_bytes", memory_bytes)
    stops = []
    top = max(2, cores)
    by_memory = max(2, int(MEMORY_SHARE * memory) // WORKER_BYTES)
    if by_memory < top:
        stops.append(f"the memory budget: {MEMORY_SHARE:.0%} of {memory / 2**30:.1f} GiB holds "
                     f"{by_memory} worker processes of ~{WORKER_BYTES >> 20} MiB")
        top = by_memory

    def plan(strong_top, scaled_top, repeat=None):
        fixed = max(FIXED_FITS, 10 * math.ceil(strong_top / 10))
        return SweepPlan(cores, fit, tuple(worker_counts(strong_top)), fixed,
                         tuple(worker_counts(scaled_top)), FITS_PER_WORKER,
                         rounds if repeat is None else repeat, budget, tuple(stops))

    # rounds first: fewer rounds (down to MIN_SWEEP_ROUNDS) before no sweep fits the budget
    rounds = next((r for r in range(SWEEP_ROUNDS, MIN_SWEEP_ROUNDS - 1, -1)
                   if plan(2, 2, r).seconds <= budget), MIN_SWEEP_ROUNDS)
    if rounds < SWEEP_ROUNDS:
        stops.append(f"the time budget: {rounds} rounds instead of {SWEEP_ROUNDS} (fits of "
                     f"{fit * 1e3:.0f} ms on {cores} core(s))")

    candidates = worker_counts(top)[:0:-1]  # top, ..., 2: the largest count that fits wins
    strong_top = next((p for p in candidates if plan(p, 2).strong_seconds <= budget / 2), 2)
    scaled_top = next((p for p in candidates if plan(strong_top, p).seconds <= budget), 2)
    for name, reached in (("strong", strong_top), ("scaled", scaled_top)):
        if reached < top:
            stops.append(f"the time budget: the {name} sweep stops at {reached} workers "
                         f"(more would pass {budget:g} s with fits of {fit * 1e3:.0f} ms)")
    predicted = plan(strong_top, scaled_top).seconds
    if predicted > budget:
        stops.append(f"nothing smaller is worth measuring: even 1 and 2 workers take "
                     f"{predicted:.0f} s, over the {budget:g} s budget")
    return plan(strong_top, scaled_top)


def parallel_cv_curve(model, X, y, *, n_fits: int = FIXED_FITS, n_jobs: int = 2,
                      repeat: int = 3) -> scaling_laws.SpeedupCurve:
    """``n_fits`` fits on 1 and ``n_jobs`` workers, ``repeat`` interleaved rounds, each pool
    warmed up with one fit per worker."""
    run = cv_runner(model, X, y)
    n_fits = validation.positive_int("n_fits", n_fits, maximum=100_000)
    n_jobs = limits.workers("n_jobs", n_jobs)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    return scaling_laws.speedup_curve(lambda p: run(p, n_fits), [1, n_jobs], repeat=repeat,
                                      warm_up=lambda p: run(p, warm_up_fits(p)))


def parallel_cv_speedup(model, X, y, *, n_fits: int = FIXED_FITS, n_jobs: int = 2,
                        repeat: int = 3) -> float:
    """Best serial time ÷ best parallel time for ``n_fits`` fits (interleaved, warmed up)."""
    curve = parallel_cv_curve(model, X, y, n_fits=n_fits, n_jobs=n_jobs, repeat=repeat)
    return float(curve.speedups[-1])


# --- predicting a search's speedup from its task time and dispatch cost -------------------------
#
# The lesson's model of a search on a process pool: n equal tasks (candidates × folds) of t
# seconds each. Serially they take n·t. On p workers each worker runs its share, ⌈n/p⌉ tasks,
# one after another, and every task also pays c seconds of dispatch (pickling, the pipe, the
# result's way back: section 2's per-task cost, seen on the worker's timeline):
#
#     T(1) = n·t        T(p) = ⌈n/p⌉·(t + c)        S(p) = n·t / (⌈n/p⌉·(t + c))
#
# Granularity (the ceiling) and dispatch (c) are the two ways it falls short of p.


def predicted_speedup(n_tasks: int, n_workers: int, task_seconds: float,
                      dispatch_seconds: float) -> float:
    """``S(p) = n·t / (⌈n/p⌉·(t + c))``: the model above."""
    n = validation.positive_int("n_tasks", n_tasks, maximum=10**9)
    p = validation.positive_int("n_workers", n_workers, maximum=1 << 20)
    t = validation.number("task_seconds", task_seconds, low=1e-12, high=1e6)
    c = validation.number("dispatch_seconds", dispatch_seconds, low=0.0, high=1e6)
    return n * t / (math.ceil(n / p) * (t + c))


@dataclass(frozen=True)
class GridTiming:
    """A grid search measured serially and on ``n_workers`` loky processes, with the two
    inputs of the model: the mean task time and the dispatch cost per task."""

    n_candidates: int
    n_folds: int
    n_workers: int
    cores: int
    task_seconds: float
    slowest_task_seconds: float
    dispatch_seconds: float
    serial_seconds: float
    parallel_seconds: float

    @property
    def n_tasks(self) -> int:
        return self.n_candidates * self.n_folds

    @property
    def measured(self) -> float:
        return self.serial_seconds / self.parallel_seconds

    @property
    def predicted(self) -> float:
        return predicted_speedup(self.n_tasks, self.n_workers, self.task_seconds,
                                 self.dispatch_seconds)

    def gap(self) -> str:
        """How far the measurement fell from the model, and the likely reasons, in words."""
        off = self.measured / self.predicted - 1
        lines = [f"predicted {self.predicted:.2f}× from t = {self.task_seconds * 1e3:.1f} ms and "
                 f"c = {self.dispatch_seconds * 1e3:.2f} ms; measured {self.measured:.2f}× "
                 f"({off:+.0%})"]
        if abs(off) <= 0.1:
            lines.append("within 10%: the model's two costs explain this search")
            return "\n".join(lines)
        reasons = []
        if off < 0:
            if self.cores < self.n_workers:
                reasons.append(f"{self.n_workers} workers share {self.cores} usable core(s)")
            uneven = self.slowest_task_seconds / self.task_seconds
            if uneven > 1.2:
                reasons.append(f"the tasks are not equal (the slowest took {uneven:.1f}× the "
                               "mean) and the model assumes they are: a worker left with a "
                               "long one finishes last")
            reasons.append("other programs took CPU time from the workers while they ran "
                           "(the serial run had one core to find, the parallel run needed "
                           f"{self.n_workers})")
        else:
            reasons.append("dispatch overlapped with work (the pool pickles and sends the next "
                           "task while a worker fits), so c cost less than the empty-task "
                           "measurement says; or the serial run was slowed by other programs")
        lines += [f"likely: {r}" for r in reasons]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"GridTiming({self.n_candidates} candidates × {self.n_folds} folds on "
                f"{self.n_workers} workers: serial {self.serial_seconds:.3f} s, parallel "
                f"{self.parallel_seconds:.3f} s, measured {self.measured:.2f}×)")


def _carry_only(*_task) -> float:
    """A task that receives a fit's arguments and does nothing: what dispatch alone costs."""
    return 0.0


def measure_grid_speedup(model, grid: dict, X, y, folds, *, n_workers: int = 2,
                         repeat: int = 2) -> GridTiming:
    """Time a grid search (one task per candidate and fold) serially and on ``n_workers`` loky
    processes, interleaved, after a warm-up; and measure the model's inputs: each task's time
    (the serial run times its tasks one by one, so no extra pass is needed; the round with
    the best total gives them) and the dispatch cost c: the same n tasks, with the same
    arguments, doing nothing on the same pool (``T(p) = ⌈n/p⌉·c``). BLAS runs one thread
    everywhere."""
    from threadpoolctl import threadpool_limits

    from mlpar.algorithms.model_selection import search
    from mlpar.core import environment

    model, X, y = _check_inputs(model, X, y)
    candidates = search.parameter_grid(grid)
    folds = cv.check_splits(folds, len(y))
    n_workers = limits.workers("n_workers", n_workers)
    repeat = validation.positive_int("repeat", repeat, maximum=100)
    # the search's tasks, arguments and all (search.search builds the same ones)
    tasks = [(model, params, X, y, train, test) for params in candidates for train, test in folds]

    def parallel_run(some_tasks):
        return cv.score_tasks(some_tasks, desc="grid", backend="loky", n_jobs=n_workers,
                              blas_threads=1)[1]

    def serial_run():
        times = []
        with threadpool_limits(1):
            start = time.perf_counter()
            for args in tasks:
                began = time.perf_counter()
                cv.fit_and_score(*args)
                times.append(time.perf_counter() - began)
            return time.perf_counter() - start, times

    # warm-up: start the pool and import the modules in every worker, one task each
    parallel_run(tasks[:n_workers])
    serial = parallel = float("inf")
    task_times = []
    for _ in range(repeat):  # interleaved: a burst of outside load hits both alike
        seconds, times = serial_run()
        if seconds < serial:
            serial, task_times = seconds, times
        parallel = min(parallel, parallel_run(tasks))
    # c: the same tasks doing nothing on the pool: T(p) = ⌈n/p⌉·c for them
    empty = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        cv.run_tasks(_carry_only, tasks, backend="loky", n_jobs=n_workers, blas_threads=1)
        empty = min(empty, time.perf_counter() - start)
    dispatch = empty / math.ceil(len(tasks) / n_workers)
    return GridTiming(len(candidates), len(folds), n_workers, environment.usable_cores(),
                      float(sum(task_times) / len(task_times)), float(max(task_times)),
                      float(dispatch), serial, parallel)
