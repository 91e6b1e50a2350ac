"""Parallel cross-validation and hyperparameter search, one fit per task, on several engines.

Model selection is *embarrassingly parallel*: each (candidate, fold) pair clones the model,
fits it on the training rows and scores it on the held-out rows, independently of every other
pair. So the whole search is a flat list of tasks handed to an engine:

* ``"sequential"``: a plain loop in this process (the reference);
* ``"threading"``: joblib's thread pool (helps only where the fit releases the GIL, e.g.
  inside BLAS or numba ``nogil`` code);
* ``"loky"``: joblib's pool of worker processes (one interpreter each; arguments pickled,
  large arrays memory-mapped);
* ``"dask"``: ``joblib.parallel_config(backend="dask")``: the same tasks on the workers of the
  ``dask.distributed`` client that is open (``with mlpar.dask_cluster.dask_client(): ...``).

Results come back in task order and each task is a pure function of its inputs (and of a seed
derived from the task's index, never from the worker that runs it), so every engine returns
exactly the same scores, and they equal scikit-learn's ``cross_val_score`` on the same folds.

    >>> X, y = load_dataset("breast_cancer")
    >>> folds = kfold(len(y), 5, seed=0)
    >>> cross_validate(make_model("logistic"), X, y, folds, backend="loky", n_jobs=2)
"""

from __future__ import annotations

import itertools
import time
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed, parallel_config
from sklearn.base import clone

from . import validation
from .folds import check_splits, kfold, leave_one_out, repeated_kfold  # noqa: F401 (re-exported)

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
    n_jobs = validation.integer("n_jobs", n_jobs)
    if n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs: expected -1 (all cores) or a positive integer, got {n_jobs}")
    return n_jobs


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
    validation.choice("backend", backend, BACKENDS)
    n_jobs = check_n_jobs(n_jobs)
    if blas_threads is not None:
        blas_threads = validation.positive_int("blas_threads", blas_threads)
    if backend == "dask":
        _require_dask_client()
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


def _require_dask_client() -> None:
    from distributed import get_client

    try:
        get_client()
    except ValueError:
        raise ValueError(
            "backend: 'dask' needs an open dask.distributed client; run inside "
            "`with mlpar.dask_cluster.dask_client() as client:`"
        ) from None


def task_seed(seed: int, n_tasks: int) -> list[int]:
    """One seed per task from ``SeedSequence(seed).spawn(n_tasks)``: fixed by the task index."""
    return [int(c.generate_state(1)[0]) for c in np.random.SeedSequence(seed).spawn(n_tasks)]


def fit_and_score(model, params: dict, X, y, train, test, scoring=None, seed=None) -> float:
    """The task: clone ``model``, set ``params`` (and ``random_state`` to ``seed``), fit on
    ``X[train]``, return its score on ``X[test]``. Pure: nothing outside it changes."""
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


def _check_data(X, y):
    X = validation.array("X", X, ndim=2, min_size=1)
    y = validation.array("y", y, ndim=1)
    validation.same_length("X", X, "y", y)
    return X, y


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
    X, y = _check_data(X, y)
    splits = check_splits(splits, len(y))
    seeds = (
        [None] * len(splits)
        if seed is None
        else task_seed(validation.seed("seed", seed), len(splits))
    )
    params = {} if params is None else dict(params)
    tasks = [
        (model, params, X, y, tr, te, scoring, s) for (tr, te), s in zip(splits, seeds, strict=True)
    ]
    start = time.perf_counter()
    scores = run_tasks(
        fit_and_score,
        tasks,
        backend=backend,
        n_jobs=n_jobs,
        blas_threads=blas_threads,
        progress=progress,
        desc=f"CV {backend}",
    )
    return CVResult(np.asarray(scores), backend, check_n_jobs(n_jobs), time.perf_counter() - start)


# --- hyperparameter search ----------------------------------------------------------------


def parameter_grid(grid: dict) -> list[dict]:
    """Every combination of the values in ``grid`` (keys in sorted order, like scikit-learn)."""
    if not isinstance(grid, dict):
        raise TypeError(
            f"grid: expected a dict of name -> list of values, got {type(grid).__name__}"
        )
    if not grid:
        raise ValueError("grid: expected at least one hyperparameter, got an empty dict")
    keys = sorted(grid)
    for key in keys:
        values = grid[key]
        if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
            raise TypeError(
                f"grid[{key!r}]: expected a list of values, got {type(values).__name__}"
            )
        if len(values) == 0:
            raise ValueError(f"grid[{key!r}]: expected at least one value, got an empty list")
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))
    ]


def sample_parameters(distributions: dict, n_candidates: int, *, seed: int = 0) -> list[dict]:
    """``n_candidates`` random draws: a list value is sampled uniformly, a scipy.stats
    distribution with ``rvs`` is sampled with ``default_rng(seed)``. Draws happen here, in the
    caller, so the candidates do not depend on the engine."""
    if not isinstance(distributions, dict):
        raise TypeError(f"distributions: expected a dict, got {type(distributions).__name__}")
    if not distributions:
        raise ValueError("distributions: expected at least one hyperparameter, got an empty dict")
    n_candidates = validation.positive_int("n_candidates", n_candidates)
    rng = np.random.default_rng(validation.seed("seed", seed))
    keys = sorted(distributions)
    for key in keys:
        d = distributions[key]
        if not hasattr(d, "rvs") and (not hasattr(d, "__len__") or len(d) == 0):
            raise ValueError(
                f"distributions[{key!r}]: expected a non-empty list or a scipy.stats distribution"
            )
    draws = []
    for _ in range(n_candidates):
        draw = {}
        for key in keys:
            d = distributions[key]
            draw[key] = (
                d.rvs(random_state=rng) if hasattr(d, "rvs") else d[int(rng.integers(len(d)))]
            )
            if isinstance(draw[key], np.generic):
                draw[key] = draw[key].item()
        draws.append(draw)
    return draws


@dataclass(frozen=True)
class SearchResult:
    """Scores of every candidate on every split: ``scores`` has shape (n_candidates, n_splits)."""

    candidates: tuple[dict, ...]
    scores: np.ndarray
    backend: str
    seconds: float

    @property
    def mean_scores(self) -> np.ndarray:
        return np.mean(self.scores, axis=1)

    @property
    def best_index(self) -> int:
        """First candidate with the highest mean score (ties go to the earlier one)."""
        return int(np.argmax(self.mean_scores))

    @property
    def best_params(self) -> dict:
        return dict(self.candidates[self.best_index])

    @property
    def best_score(self) -> float:
        return float(self.mean_scores[self.best_index])

    def __repr__(self) -> str:
        return (
            f"SearchResult({len(self.candidates)} candidates × {self.scores.shape[1]} splits, "
            f"best {self.best_params} with mean score {self.best_score:.4f})"
        )

    def plot(self, key: str, ax=None, log: bool = True, label: str | None = None):
        """Mean score (± std over splits) against hyperparameter ``key``."""
        import matplotlib.pyplot as plt

        validation.choice("key", key, self.candidates[0])
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3))
        x = np.array([c[key] for c in self.candidates], dtype=float)
        order = np.argsort(x, kind="stable")
        ax.errorbar(
            x[order],
            self.mean_scores[order],
            yerr=np.std(self.scores, axis=1)[order],
            fmt="o",
            ms=4,
            capsize=2,
            label=label or self.backend,
        )
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(key)
        ax.set_ylabel("mean CV score")
        return ax


def search(
    model,
    candidates: list[dict],
    X,
    y,
    splits=5,
    *,
    scoring=None,
    backend: str = "sequential",
    n_jobs: int = 1,
    blas_threads: int | None = None,
    progress: bool = False,
    desc: str = "search",
) -> SearchResult:
    """Evaluate every candidate on every split: ``len(candidates) * len(splits)`` tasks."""
    X, y = _check_data(X, y)
    splits = check_splits(splits, len(y))
    if not candidates:
        raise ValueError("candidates: expected at least one parameter set, got none")
    tasks = [(model, c, X, y, tr, te, scoring, None) for c in candidates for tr, te in splits]
    start = time.perf_counter()
    flat = run_tasks(
        fit_and_score,
        tasks,
        backend=backend,
        n_jobs=n_jobs,
        blas_threads=blas_threads,
        progress=progress,
        desc=desc,
    )
    scores = np.asarray(flat).reshape(len(candidates), len(splits))
    return SearchResult(tuple(candidates), scores, backend, time.perf_counter() - start)


def grid_search(model, grid: dict, X, y, splits=5, **kwargs) -> SearchResult:
    """Exhaustive search over ``parameter_grid(grid)``; keywords as in ``search``."""
    return search(model, parameter_grid(grid), X, y, splits, desc="grid search", **kwargs)


def random_search(
    model, distributions: dict, X, y, splits=5, *, n_candidates: int = 10, seed: int = 0, **kwargs
) -> SearchResult:
    """``n_candidates`` random draws from ``distributions`` (see ``sample_parameters``)."""
    candidates = sample_parameters(distributions, n_candidates, seed=seed)
    return search(model, candidates, X, y, splits, desc="random search", **kwargs)
