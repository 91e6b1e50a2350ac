"""Parallel grid search over (C, gamma) for the SMO kernel SVM, on any joblib backend.

Every (C, gamma, fold) triple is an independent training job: the search is embarrassingly
parallel, and the only shared data is ``X`` and ``y``. Jobs go to ``joblib.Parallel``, so the
same call runs sequentially, on loky processes, or on a Dask cluster:

    >>> with dask_client() as client, joblib.parallel_config(backend="dask"):
    ...     result = search_c_gamma(X, y, Cs=[0.1, 1, 10], gammas=[0.1, 1, 10])

The folds come from ``seed`` alone, and every job is deterministic, so the scores are identical
on every backend; only the time changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed

from mlpar.algorithms.svm import smo
from mlpar.algorithms.svm.cascade import check_parallel_fit
from mlpar.core import splits, validation


def _fold_accuracy(X, y, train, test, C, gamma, kernel, tol):
    # One job: fit on a fold's training part, score on its held-out part. The kernel runs on
    # one thread because the parallelism is across jobs.
    model = smo.fit_smo(X[train], y[train], C=C, gamma=gamma, kernel=kernel, tol=tol,
                        parallel=False)
    return model.score(X[test], y[test], parallel=False)


@dataclass(frozen=True)
class GridResult:
    """Mean cross-validated accuracy, ``scores[i, j]`` for ``Cs[i]`` and ``gammas[j]``."""

    Cs: tuple
    gammas: tuple
    scores: np.ndarray = field(repr=False)
    best_C: float
    best_gamma: float
    best_score: float

    def plot(self, ax=None):
        """Heat map of the accuracies with the best cell marked."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(4.5, 3.5))
        image = ax.imshow(self.scores, origin="lower", cmap="viridis")
        ax.set_xticks(range(len(self.gammas)), [f"{g:g}" for g in self.gammas])
        ax.set_yticks(range(len(self.Cs)), [f"{c:g}" for c in self.Cs])
        ax.set_xlabel("γ")
        ax.set_ylabel("C")
        i, j = np.unravel_index(np.argmax(self.scores), self.scores.shape)
        ax.plot(j, i, marker="*", color="white", markersize=14)
        ax.figure.colorbar(image, ax=ax, label="CV accuracy")
        return ax


def search_c_gamma(
    X: np.ndarray,
    y,
    *,
    Cs,
    gammas,
    n_folds: int = 3,
    kernel: str = "rbf",
    tol: float = 1e-3,
    seed: int = 0,
    n_jobs: int | None = None,
) -> GridResult:
    """Cross-validated accuracy of ``fit_smo`` on every (C, gamma) pair, jobs run by joblib.

    ``n_jobs=None`` defers to ``joblib.parallel_config`` (so a surrounding
    ``parallel_config(backend="dask")`` picks the Dask workers). Ties go to the first pair in
    ``Cs`` x ``gammas`` order.
    """
    X, y, n_jobs = check_parallel_fit(X, y, n_jobs)
    for name, grid in (("Cs", Cs), ("gammas", gammas)):
        if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__"):
            raise TypeError(f"{name}: expected a sequence of positive numbers, got "
                            f"{type(grid).__name__}")
    Cs = tuple(validation.positive("Cs", c) for c in Cs)
    gammas = tuple(validation.positive("gammas", g) for g in gammas)
    if not Cs or not gammas:
        raise ValueError("Cs, gammas: expected at least one value each, got an empty grid")
    validation.choice("kernel", kernel, ("linear", "poly", "rbf"))
    tol = validation.number("tol", tol, low=0.0, high=1.0, low_open=True)
    folds = splits.stratified_kfold(y, n_folds, seed=seed)
    jobs = [
        delayed(_fold_accuracy)(X, y, train, test, C, g, kernel, tol)
        for C in Cs for g in gammas for train, test in folds
    ]
    accuracies = np.array(Parallel(n_jobs=n_jobs)(jobs)).reshape(len(Cs), len(gammas), n_folds)
    scores = accuracies.mean(axis=2)
    i, j = np.unravel_index(np.argmax(scores), scores.shape)
    return GridResult(Cs, gammas, scores, Cs[i], gammas[j], float(scores[i, j]))
