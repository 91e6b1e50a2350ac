"""Threads for numba kernels: the one place where the threading layer is chosen.

Why a choice is needed: numba's default fallback layer, ``workqueue``, is not thread-safe.
If two Python threads call ``parallel=True`` functions at the same time (Hogwild workers,
a threaded joblib backend, Dask's threaded workers) it aborts the whole process. The
``threadsafe`` setting makes numba pick TBB or OpenMP, both of which tolerate concurrent
calls. It must be set before the first parallel function *runs*, so every mlpar module that
compiles ``parallel=True`` code imports this one first. A user who exports
``NUMBA_THREADING_LAYER`` keeps their own choice; otherwise this module exports it, so that
worker processes started later make the same choice.

``using_threads(n)`` changes numba's thread count for a block and restores it afterwards,
so a lesson can time 1 and 2 threads without leaving global state behind.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numba

from . import validation

if "NUMBA_THREADING_LAYER" not in os.environ:
    # The environment variable, not only numba.config: numba reloads its configuration from the
    # environment whenever a NUMBA_* variable changes (the CUDA simulator switch does), and
    # worker processes (loky, Dask) inherit it.
    os.environ["NUMBA_THREADING_LAYER"] = "threadsafe"
    numba.core.config.reload_config()  # apply it now rather than at the next compilation


def max_threads() -> int:
    """How many threads numba may use here (its ``NUMBA_NUM_THREADS``, set from the cores)."""
    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def using_threads(n_threads: int):
    """Run the block with numba's thread count set to ``n_threads``, then restore it.

    >>> with using_threads(1):
    ...     serial_result = kernel(x)
    """
    n = validation.positive_int("n_threads", n_threads)
    if n > max_threads():
        raise ValueError(
            f"n_threads: expected at most {max_threads()} (numba's NUMBA_NUM_THREADS), got {n}"
        )
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(before)


def threading_layer() -> str:
    """The layer numba actually chose ('omp', 'tbb' or 'workqueue'), or 'not started yet'."""
    try:
        return numba.threading_layer()
    except ValueError:
        return "not started yet"
