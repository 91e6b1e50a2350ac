"""Threads for numba kernels: the one place where the threading layer is chosen.

Why a choice is needed: numba's default fallback layer, ``workqueue``, is not thread-safe.
If two Python threads call ``parallel=True`` functions at the same time (Hogwild workers,
a threaded joblib backend, Dask's threaded workers) it aborts the whole process. The
``threadsafe`` setting makes numba pick TBB or OpenMP, both of which tolerate concurrent
calls. It must be set before the first parallel function *runs*, so every mlpar module that
compiles ``parallel=True`` code imports this one first. A user who exports
``NUMBA_THREADING_LAYER`` keeps their own choice; otherwise this module exports it, so that
worker processes started later make the same choice.

Where neither TBB nor OpenMP can be loaded (numba's macOS arm64 wheels, slim Linux images
without libgomp), ``threadsafe`` would make every ``parallel=True`` kernel fail. This module
then falls back to ``workqueue`` with one warning: single-threaded callers lose nothing,
but two Python threads running parallel kernels at once would abort the process, so the
lessons' concurrent cases (Hogwild with numba workers, threaded joblib over numba kernels)
must not be run there. ``pip install tbb`` brings TBB back.

``using_threads(n)`` changes numba's thread count for a block and restores it afterwards,
so a lesson can time 1 and 2 threads without leaving global state behind.
"""

from __future__ import annotations

import importlib
import os
import warnings
from contextlib import contextmanager

import numba

from mlpar.core import validation

# numba's own modules for its thread-safe layers; each fails to import without its library.
SAFE_LAYERS = {"tbb": "numba.np.ufunc.tbbpool", "omp": "numba.np.ufunc.omppool"}
FALLBACK_WARNING = (
    "mlpar: numba can load neither TBB nor OpenMP here, so parallel kernels use its 'workqueue' "
    "threading layer. Every kernel still runs on all threads, but two Python threads must not "
    "run parallel kernels at the same time (workqueue aborts the process): skip the lessons' "
    "concurrent-kernel cells. To get the thread-safe layer back: pip install tbb"
)


def thread_safe_layers() -> list[str]:
    """The thread-safe numba layers that can be loaded here: some of 'tbb', 'omp'."""
    found = []
    for name, module in SAFE_LAYERS.items():
        try:
            importlib.import_module(module)
        except (ImportError, OSError):  # the library (libtbb, libgomp) is missing or too old
            continue
        found.append(name)
    return found


def _choose_layer() -> str | None:
    """Export the layer for this process and its workers; return a warning to give, or None."""
    if "NUMBA_THREADING_LAYER" in os.environ:
        return None  # the user's (or a parent process's) choice stands
    fallback = not thread_safe_layers()
    # The environment variable, not only numba.config: numba reloads its configuration from the
    # environment whenever a NUMBA_* variable changes (the CUDA simulator switch does), and
    # worker processes (loky, Dask) inherit it, so they neither re-probe nor warn again.
    os.environ["NUMBA_THREADING_LAYER"] = "workqueue" if fallback else "threadsafe"
    numba.core.config.reload_config()  # apply it now rather than at the next compilation
    return FALLBACK_WARNING if fallback else None


_warning = _choose_layer()
if _warning:
    warnings.warn(_warning, RuntimeWarning, stacklevel=2)


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
