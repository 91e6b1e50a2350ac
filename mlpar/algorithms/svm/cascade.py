"""Cascade SVM (Graf et al., 2004): data-parallel training on shards, merging support vectors.

Only the support vectors define an SVM, and they are usually a small part of the data. The
cascade exploits that:

1. split the training set into ``n_shards`` stratified shards and train one SVM per shard,
   all at the same time (layer 0);
2. merge the support vectors of neighbouring pairs of shards and train again on each merged
   set (layer 1), and so on, halving the number of machines per layer until one remains;
3. optionally feed the final support vectors back into every shard and run the cascade again
   (``n_passes > 1``); it stops early when a pass returns the same support vectors.

A pass costs ``n_shards`` small solves in parallel, then fewer and fewer; since SMO's cost grows
faster than linearly in the number of samples, small shards are cheap. One pass is an
approximation: a point that is not a support vector of its shard may be one of the full
problem. The feedback passes make it exact at convergence.

Each training job is a joblib task, so the cascade runs on any joblib backend: threads, loky
processes, or a Dask cluster with ``joblib.parallel_config(backend="dask")``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed

from mlpar.algorithms.svm import smo
from mlpar.core import cleanup, limits, splits, validation


def check_parallel_fit(X, y, n_jobs):
    """(X, y, n_jobs) checked for a job that fits many SVMs on joblib workers (cascade, tuning).

    Also removes what killed kernels' worker pools left in /dev/shm before starting new ones.
    """
    if n_jobs is not None:
        n_jobs = limits.workers("n_jobs", n_jobs, allow_all=True)
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    validation.finite_data("X", X)  # bad data named as such, before any worker starts
    validation.same_length("X", X, "y", y)
    y = np.asarray(y)
    if y.dtype.kind == "f":
        validation.finite_data("y", y)
    cleanup.remove_stale_shm()
    smo.signed_labels(y)
    return X, y, n_jobs



def _train_subset(X, y, idx, params):
    # A worker's job: train on X[idx] and return the global indices of its support vectors,
    # with its start and end on the monotonic clock (shared by threads and by processes on one
    # machine), so that overlap between jobs is measured, not inferred from the wall clock.
    start = time.perf_counter()
    model = smo.fit_smo(X[idx], y[idx], parallel=False, **params)
    end = time.perf_counter()
    return idx[model.support], model, end - start, (start, end)


def busy_seconds(intervals) -> float:
    """Length of the union of ``(start, end)`` intervals: the time at least one job ran."""
    total, reach = 0.0, -np.inf
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return float(total)


@dataclass(frozen=True)
class CascadeResult:
    """The final SVM and, per pass and layer, the size of every job's training set."""

    model: smo.SVMModel
    support: np.ndarray = field(repr=False)
    layer_sizes: tuple = field(repr=False)
    layer_supports: tuple = field(repr=False)
    layer_seconds: tuple = field(repr=False)
    n_passes: int
    converged: bool
    job_intervals: tuple = field(default=(), repr=False)

    @property
    def n_support(self) -> int:
        return int(self.support.size)

    @property
    def total_seconds(self) -> float:
        """Sum of every job's measured training time: the cost on one worker."""
        return float(sum(sum(layer) for p in self.layer_seconds for layer in p))

    @property
    def critical_path_seconds(self) -> float:
        """Sum over layers of the slowest job: the time with one worker per job, if every job
        took as long as it did here and moving data were free (a model, not a measurement)."""
        return float(sum(max(layer) for p in self.layer_seconds for layer in p))

    @property
    def overlap_seconds(self) -> float:
        """The sum of the job times minus the time at least one job ran (0 when every job ran
        alone): with two workers, how long two jobs were running at once (k jobs at once for d
        seconds add (k - 1) d). Measured from each job's own start and end stamps, not inferred
        from the wall clock; "at once" means both had started and neither had ended, so jobs
        that took turns on the GIL or on a shared core still count."""
        return max(self.total_seconds - busy_seconds(self.job_intervals), 0.0)

    def summary(self) -> str:
        """Training-set size -> support vectors of every job, one line per layer."""
        lines = []
        for p, (sizes, sv) in enumerate(zip(self.layer_sizes, self.layer_supports, strict=True)):
            for layer, (a, b) in enumerate(zip(sizes, sv, strict=True)):
                jobs = ", ".join(f"{n}→{s}" for n, s in zip(a, b, strict=True))
                lines.append(f"pass {p} layer {layer}: {jobs}")
        return "\n".join(lines)


def cascade_svm(
    X: np.ndarray,
    y,
    *,
    n_shards: int = 4,
    n_passes: int = 1,
    seed: int = 0,
    n_jobs: int | None = None,
    **svm_params,
) -> CascadeResult:
    """Train a binary kernel SVM with a cascade of SMO solves on ``n_shards`` shards.

    ``n_jobs`` goes to ``joblib.Parallel`` (``None``: whatever ``joblib.parallel_config`` says,
    one job by default). ``svm_params``: ``C``, ``kernel``, ``gamma``, ``degree``, ``coef0``,
    ``tol`` as ``smo.fit_smo``; ``gamma='scale'`` is resolved once on the whole ``X`` so that
    every shard trains the same kernel.
    """
    X, y, n_jobs = check_parallel_fit(X, y, n_jobs)
    n_passes = validation.positive_int("n_passes", n_passes, maximum=1000)
    params = smo.svm_params(X, **svm_params)
    shards = splits.stratified_shards(y, n_shards, seed=seed)

    sizes, supports, seconds, intervals = [], [], [], []
    feedback = np.empty(0, dtype=np.int64)
    converged = False
    with Parallel(n_jobs=n_jobs) as parallel:
        for p in range(n_passes):
            sets = [np.union1d(s, feedback) for s in shards]
            p_sizes, p_sv, p_sec = [], [], []
            while True:
                out = parallel(delayed(_train_subset)(X, y, idx, params) for idx in sets)
                p_sizes.append(tuple(int(s.size) for s in sets))
                p_sv.append(tuple(int(o[0].size) for o in out))
                p_sec.append(tuple(o[2] for o in out))
                intervals.extend(o[3] for o in out)
                if len(sets) == 1:
                    break
                found = [o[0] for o in out]
                # Pairs (0,1), (2,3), ...; an odd last set goes up a layer unchanged.
                sets = [np.union1d(found[k], found[k + 1]) for k in range(0, len(found) - 1, 2)]
                if len(found) % 2:
                    sets.append(found[-1])
            sizes.append(tuple(p_sizes))
            supports.append(tuple(p_sv))
            seconds.append(tuple(p_sec))
            final_support, model = out[0][0], out[0][1]
            if p > 0 and np.array_equal(final_support, feedback):
                converged = True
                break
            feedback = final_support
    return CascadeResult(
        model=model, support=final_support, layer_sizes=tuple(sizes),
        layer_supports=tuple(supports), layer_seconds=tuple(seconds),
        n_passes=len(sizes), converged=converged, job_intervals=tuple(intervals),
    )
