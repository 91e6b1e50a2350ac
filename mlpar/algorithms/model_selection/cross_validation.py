"""Parallel cross-validation and hyperparameter search, one fit per task, on several engines.

Hyperparameter search (grid and random) is in ``mlpar.algorithms.model_selection.search``;
exhaustive splits (leave-p-out) in ``mlpar.algorithms.model_selection.exhaustive``.

Model selection is *embarrassingly parallel*: each (candidate, fold) pair clones the model,
fits it on the training rows and scores it on the held-out rows, independently of every other
pair. So the whole search is a flat list of tasks handed to an engine:

* ``"sequential"``: a plain loop in this process (the reference);
* ``"threading"``: joblib's thread pool (helps only where the fit releases the GIL, e.g.
  inside BLAS or numba ``nogil`` code);
* ``"loky"``: joblib's pool of worker processes (one interpreter each; arguments pickled,
  large arrays memory-mapped);
* ``"dask"``: ``joblib.parallel_config(backend="dask")``: the same tasks on the workers of the
  ``dask.distributed`` client that is open (``with mlpar.cluster.dask_cluster.dask_client(): ...``).

Results come back in task order and each task is a pure function of its inputs (and of a seed
derived from the task's index, never from the worker that runs it), so every engine returns
exactly the same scores, and they equal scikit-learn's ``cross_val_score`` on the same folds.

    >>> X, y = load_dataset("breast_cancer")
    >>> folds = kfold(len(y), 5, seed=0)
    >>> cross_validate(make_model("logistic"), X, y, folds, backend="loky", n_jobs=2)
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed, parallel_config
from sklearn.base import clone

from mlpar.core import cleanup, limits, seeding, validation
from mlpar.core.splits import check_splits, kfold, leave_one_out, repeated_kfold  # noqa: F401 (re-exported)

BACKENDS = ("sequential", "loky", "threading", "dask")
DATASETS = ("breast_cancer", "diabetes")
MODELS = ("logistic", "logistic_poly", "ridge")


# --- data and models ----------------------------------------------------------------------


def load_dataset(name: str = "breast_cancer") -> tuple[np.ndarray, np.ndarray]:
    """A dataset bundled with scikit-learn (no download): ``X`` (n, d) float64, ``y`` (n,).

    ``breast_cancer``: 569 tumours × 30 features, binary label (classification).
    ``diabetes``: 442 patients × 10 features, disease progression (regression).
    """
    from sklearn import datasets

    validation.choice("name", name, DATASETS)
    loader = datasets.load_breast_cancer if name == "breast_cancer" else datasets.load_diabetes
    X, y = loader(return_X_y=True)
    return np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(y)


def make_model(name: str = "logistic", **params):
    """A small scikit-learn pipeline; ``params`` set its hyperparameters (e.g. ``clf__C=10``).

    ``logistic``: standardise, then L2 logistic regression (a fit takes milliseconds).
    ``logistic_poly``: standardise, all degree-2 feature products (30 → 495 columns),
    standardise again, logistic regression; a fit takes tens of milliseconds, enough for
    parallel folds to beat the pools' overheads.
    ``ridge``: standardise, then ridge regression (for ``diabetes``).
    The final step is always called ``clf``, so the grid keys read ``clf__C``, ``clf__alpha``.
    """
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    validation.choice("name", name, MODELS)
    if name == "ridge":
        steps = [("scale", StandardScaler()), ("clf", Ridge(alpha=1.0))]
    else:
        steps = [("scale", StandardScaler())]
        if name == "logistic_poly":
            steps += [
                ("poly", PolynomialFeatures(2, include_bias=False)),
                ("rescale", StandardScaler()),
            ]
        steps.append(("clf", LogisticRegression(C=1.0, max_iter=5000)))
    return Pipeline(steps).set_params(**params)


# --- the engine ---------------------------------------------------------------------------


def check_n_jobs(n_jobs) -> int:
    """``-1`` (all cores) or a positive integer; anything else is a ValueError."""
    return limits.workers("n_jobs", n_jobs, allow_all=True)


def run_tasks(
    func,
    tasks: list[tuple],
    *,
    backend: str = "sequential",
    n_jobs: int = 1,
    blas_threads: int | None = None,
    progress: bool = False,
    desc: str = "tasks",
) -> list:
    """``[func(*args) for args in tasks]`` on one engine, in task order.

    ``blas_threads`` caps the BLAS/OpenMP threads each fit may use (in this process and in
    loky workers; Dask's workers already run with one). Timing one worker against ``p`` is only
    fair when a single worker cannot quietly use several cores through BLAS.
    ``progress=True`` shows a ``tqdm.auto`` bar that advances as results arrive (joblib's
    ``return_as="generator"`` hands them back one by one, still in order).
    Note that joblib runs ``n_jobs=1`` in this process, without starting a pool.
    """
    from threadpoolctl import threadpool_limits

    validation.callable_("func", func)
    if not isinstance(tasks, (list, tuple)) or not all(isinstance(t, tuple) for t in tasks):
        raise TypeError(f"tasks: expected a list of argument tuples, got {type(tasks).__name__}")
    validation.choice("backend", backend, BACKENDS)
    progress = validation.flag("progress", progress)
    if not isinstance(desc, str):
        raise TypeError(f"desc: expected a str (the progress bar's label), got {type(desc).__name__}")
    n_jobs = check_n_jobs(n_jobs)
    if blas_threads is not None:
        blas_threads = validation.positive_int("blas_threads", blas_threads)
    if backend == "dask":
        _require_dask_client()
    if backend == "loky":
        require_processes()
    cleanup.remove_stale_shm()  # what killed kernels' pools left in /dev/shm
    config = {"backend": backend, "n_jobs": n_jobs}
    if backend == "loky" and blas_threads is not None:
        config["inner_max_num_threads"] = blas_threads
    with ExitStack() as stack:
        if blas_threads is not None:
            stack.enter_context(threadpool_limits(blas_threads))
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = stack.enter_context(tqdm(total=len(tasks), desc=desc, leave=True))
        if backend == "sequential":
            results = (func(*args) for args in tasks)
        else:
            stack.enter_context(parallel_config(**config))
            results = Parallel(return_as="generator")(delayed(func)(*args) for args in tasks)
        collected = []
        for value in results:
            collected.append(value)
            if bar is not None:
                bar.update()
        return collected


def require_processes() -> None:
    """Refuse, saying why, where joblib cannot start worker processes.

    A process pool needs semaphores shared between processes, which Linux keeps in
    ``/dev/shm``. Where that folder is missing or read-only (a container started with
    ``--ipc=none``, some sandboxes) joblib warns once and quietly runs every "loky" call on
    threads instead: a lesson would then measure the GIL while saying it measures processes.
    """
    from joblib._multiprocessing_helpers import mp

    if mp is None:
        raise RuntimeError(
            "backend: 'loky' needs worker processes, and joblib cannot start them here: this "
            "system cannot create semaphores shared between processes (is /dev/shm missing or "
            "read-only? In Docker, drop --ipc=none or give --shm-size=64m; JOBLIB_MULTIPROCESSING=0 "
            "also turns them off). Use backend='threading' or 'sequential' on this machine")


def _require_dask_client() -> None:
    from distributed import get_client

    try:
        get_client()
    except ValueError:
        raise ValueError(
            "backend: 'dask' needs an open dask.distributed client; run inside "
            "`with mlpar.cluster.dask_cluster.dask_client() as client:`"
        ) from None


def fit_and_score(model, params: dict, X, y, train, test, scoring=None, seed=None) -> float:
    """The task: clone ``model``, set ``params`` (and ``random_state`` to ``seed``), fit on
    ``X[train]``, return its score on ``X[test]``. Pure: nothing outside it changes."""
    check_model(model)
    if not isinstance(params, dict):
        raise TypeError(f"params: expected a dict of hyperparameters, got {type(params).__name__}")
    if seed is not None:
        seed = validation.seed("seed", seed)
    X, y = check_data(X, y)
    # test == train is allowed here: a training score is a legitimate (if optimistic) number
    train, test = check_splits([(train, test)], len(y), allow_overlap=True)[0]
    estimator = clone(model).set_params(**params)
    if seed is not None:
        _set_random_state(estimator, seed)
    estimator.fit(X[train], y[train])
    if scoring is None:
        return float(estimator.score(X[test], y[test]))
    from sklearn.metrics import get_scorer

    return float(get_scorer(scoring)(estimator, X[test], y[test]))


def _set_random_state(estimator, seed: int) -> None:
    keys = [
        k for k in estimator.get_params() if k == "random_state" or k.endswith("__random_state")
    ]
    estimator.set_params(**{k: seed for k in keys})


def check_model(model) -> None:
    """A scikit-learn estimator (anything with ``fit`` and ``get_params``), or a TypeError."""
    if not (hasattr(model, "fit") and hasattr(model, "get_params")):
        raise TypeError(f"model: expected a scikit-learn estimator (make_model), got "
                        f"{type(model).__name__}")


def check_data(X, y):
    """``X`` (n, d) and ``y`` (n,) as arrays of one length, or a ValueError naming which."""
    X = validation.array("X", X, ndim=2, min_size=1)
    y = validation.array("y", y, ndim=1)
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X: expected a numeric array, got dtype {X.dtype}")
    for name, part in (("X", X), ("y", y)):
        if part.dtype.kind == "f" and not np.all(np.isfinite(part)):
            raise ValueError(f"{name}: expected finite numbers, got NaN or infinity")
    validation.same_length("X", X, "y", y)
    return X, y


def score_tasks(tasks: list[tuple], *, desc: str, **engine) -> tuple[np.ndarray, float]:
    """``fit_and_score`` on every task through ``run_tasks(**engine)``: (scores, wall seconds).

    The one place where cross-validation and the searches hand their fits to an engine.
    """
    start = time.perf_counter()
    scores = run_tasks(fit_and_score, tasks, desc=desc, **engine)
    return np.asarray(scores, dtype=float), time.perf_counter() - start


# --- cross-validation ---------------------------------------------------------------------


@dataclass(frozen=True)
class CVResult:
    """Scores of one model on each split; ``seconds`` is wall time (kept out of the repr)."""

    scores: np.ndarray
    backend: str
    n_jobs: int
    seconds: float

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))

    @property
    def std(self) -> float:
        return float(np.std(self.scores))

    def __repr__(self) -> str:
        return f"CVResult({len(self.scores)} splits, mean score {self.mean:.4f} ± {self.std:.4f})"


def cross_validate(
    model,
    X,
    y,
    splits=5,
    *,
    params: dict | None = None,
    scoring=None,
    backend: str = "sequential",
    n_jobs: int = 1,
    seed: int | None = None,
    blas_threads: int | None = None,
    progress: bool = False,
) -> CVResult:
    """Score ``model`` on every (train, test) pair of ``splits``, one pair per task.

    ``splits`` is a list from ``kfold`` / ``repeated_kfold`` / ``leave_one_out`` (or an int
    ``k`` for ``kfold(len(y), k, seed=0)``). ``seed``, if given, sets every ``random_state``
    in the model to the task's own seed from ``SeedSequence(seed).spawn(n_splits)``.
    ``backend``, ``n_jobs``, ``blas_threads`` and ``progress`` are as in ``run_tasks``.
    Returns scores of shape (n_splits,), identical on every backend.
    """
    progress = validation.flag("progress", progress)
    n_jobs = check_n_jobs(n_jobs)
    check_model(model)
    X, y = check_data(X, y)
    splits = check_splits(splits, len(y))
    seeds = (
        [None] * len(splits)
        if seed is None
        else seeding.worker_int_seeds(len(splits), seed=seed)
    )
    if params is not None and not isinstance(params, dict):
        raise TypeError(f"params: expected a dict of hyperparameters, got {type(params).__name__}")
    params = {} if params is None else dict(params)
    tasks = [
        (model, params, X, y, tr, te, scoring, s) for (tr, te), s in zip(splits, seeds, strict=True)
    ]
    scores, seconds = score_tasks(tasks, backend=backend, n_jobs=n_jobs,
                                  blas_threads=blas_threads, progress=progress,
                                  desc=f"CV {backend}")
    return CVResult(scores, backend, check_n_jobs(n_jobs), seconds)
