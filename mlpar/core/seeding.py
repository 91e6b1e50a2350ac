"""One seed in, one independent random stream per worker out.

A parallel run is reproducible only if each worker's randomness depends on the run's seed and
the worker's index, never on which process or thread happened to run it. numpy's
``SeedSequence(seed).spawn(n)`` gives ``n`` children whose streams are statistically
independent of each other and of the parent; child ``i`` is the same on every machine and every
engine. Every function in mlpar that hands randomness to workers goes through here.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import validation


def worker_seeds(n_workers: int, *, seed: int) -> list[np.random.SeedSequence]:
    """The ``n_workers`` children of ``SeedSequence(seed)``: child ``i`` belongs to worker ``i``."""
    seed = validation.seed("seed", seed)
    # a million seed objects are ~100 MB already: any more is a mistake, not a cluster
    n_workers = validation.integer("n_workers", n_workers, minimum=0, maximum=1_000_000)
    return np.random.SeedSequence(seed).spawn(n_workers)


def worker_rngs(n_workers: int, *, seed: int) -> list[np.random.Generator]:
    """One ``np.random.Generator`` per worker, from :func:`worker_seeds`."""
    return [np.random.default_rng(s) for s in worker_seeds(n_workers, seed=seed)]


def worker_int_seeds(n_workers: int, *, seed: int) -> list[int]:
    """One plain ``int`` seed per worker, for APIs that take an int (scikit-learn's ``random_state``)."""
    return [int(s.generate_state(1)[0]) for s in worker_seeds(n_workers, seed=seed)]
