"""How much faster is cross-validation on several workers? Strong and scaled speedups, measured.

Two questions, two measurements, kept apart:

* **strong scaling** (Amdahl): a fixed job (``FIXED_FITS`` fits) on 1, 2, ... workers;
* **scaled speedup** (Gustafson): the job grows with the workers (``FITS_PER_WORKER`` fits
  per worker), compared with one worker doing the same grown job.

Both time every configuration in interleaved rounds after an untimed warm-up
(``mlpar.cpu.scaling_laws``), so each speedup divides two times taken moments apart. The
model is heavy on purpose: each fit lasts well over ``MIN_FIT_SECONDS`` (the lesson's rule: a
task much shorter than that is dominated by the pool's per-task cost).

Granularity matters too: 5 equal fits on 2 workers take 3 rounds of fits, so 5-fold CV can
never pass 5/3 ≈ 1.67× on 2 cores (``best_possible_speedup``). The claim that parallel CV
reaches 1.7× is therefore made on 2 × 5-fold (10 fits).
"""

from __future__ import annotations

import math
import time

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
                      progress: bool = False):
    """(strong curve, scaled curve): fixed ``fixed_fits`` fits, and ``fits_per_worker`` × p."""
    run = cv_runner(model, X, y)
    fixed_fits = validation.positive_int("fixed_fits", fixed_fits, maximum=100_000)
    fits_per_worker = validation.positive_int("fits_per_worker", fits_per_worker, maximum=100_000)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    progress = validation.flag("progress", progress)
    strong = scaling_laws.speedup_curve(lambda p: run(p, fixed_fits), workers, repeat=repeat,
                                        progress=progress)
    scaled = scaling_laws.scaled_speedup_curve(lambda p, k: run(p, k * fits_per_worker),
                                               workers, repeat=repeat, progress=progress)
    return strong, scaled


def parallel_cv_speedup(model, X, y, *, n_fits: int = FIXED_FITS, n_jobs: int = 2,
                        repeat: int = 3) -> float:
    """Best serial time ÷ best parallel time for ``n_fits`` fits (interleaved, warmed up)."""
    run = cv_runner(model, X, y)
    n_fits = validation.positive_int("n_fits", n_fits, maximum=100_000)
    n_jobs = limits.workers("n_jobs", n_jobs)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    curve = scaling_laws.speedup_curve(lambda p: run(p, n_fits), [1, n_jobs], repeat=repeat)
    return float(curve.speedups[-1])
