"""Hyperparameter search, grid and random: every (candidate, split) pair is one task.

The tasks are those of ``mlpar.algorithms.model_selection.cross_validation`` (clone, set the
candidate's parameters, fit on the training rows, score on the test rows) and run on the same
engines; the candidates are drawn here, in the caller, so they never depend on the engine.
Grid search follows Bergstra and Bengio's comparison (Random search for hyper-parameter
optimization, 2012) in spirit: a random search covers a continuous range with fewer fits.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.model_selection.cross_validation import (
    check_data,
    check_model,
    check_n_jobs,
    score_tasks,
)
from mlpar.core import validation
from mlpar.core.splits import check_splits


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

    def plot(self, key: str, ax=None, log: bool = True, label: str | None = None,
             xlabel: str | None = None):
        """Mean score (± std over splits) against hyperparameter ``key`` (``xlabel``: the axis's
        name, the key itself by default)."""
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
        if xlabel is not None and not isinstance(xlabel, str):
            raise TypeError(f"xlabel: expected a str or None, got {type(xlabel).__name__}")
        ax.set_xlabel(key if xlabel is None else xlabel)
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
    progress = validation.flag("progress", progress)
    n_jobs = check_n_jobs(n_jobs)
    check_model(model)
    X, y = check_data(X, y)
    splits = check_splits(splits, len(y))
    if not isinstance(candidates, (list, tuple)) or not all(isinstance(c, dict) for c in candidates):
        raise TypeError(f"candidates: expected a list of parameter dicts, got "
                        f"{type(candidates).__name__}")
    if not candidates:
        raise ValueError("candidates: expected at least one parameter set, got none")
    tasks = [(model, c, X, y, tr, te, scoring, None) for c in candidates for tr, te in splits]
    flat, seconds = score_tasks(tasks, backend=backend, n_jobs=n_jobs,
                                blas_threads=blas_threads, progress=progress, desc=desc)
    scores = flat.reshape(len(candidates), len(splits))
    return SearchResult(tuple(candidates), scores, backend, seconds)


def grid_search(model, grid: dict, X, y, splits=5, **kwargs) -> SearchResult:
    """Exhaustive search over ``parameter_grid(grid)``; keywords as in ``search``."""
    return search(model, parameter_grid(grid), X, y, splits, desc="grid search", **kwargs)


def random_search(
    model, distributions: dict, X, y, splits=5, *, n_candidates: int = 10, seed: int = 0, **kwargs
) -> SearchResult:
    """``n_candidates`` random draws from ``distributions`` (see ``sample_parameters``)."""
    candidates = sample_parameters(distributions, n_candidates, seed=seed)
    return search(model, candidates, X, y, splits, desc="random search", **kwargs)
