import os
import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest

from mlpar.core import threads
from mlpar.cpu import elementwise as ew


def test_using_threads_sets_and_restores():
    before = numba.get_num_threads()
    with threads.using_threads(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == before


def test_using_threads_restores_after_an_error():
    before = numba.get_num_threads()
    with pytest.raises(RuntimeError), threads.using_threads(1):
        raise RuntimeError("boom")
    assert numba.get_num_threads() == before


def test_bad_thread_counts():
    with pytest.raises(ValueError, match="n_threads: expected a positive integer, got 0"):
        with threads.using_threads(0):
            pass
    with pytest.raises(ValueError, match="n_threads: expected at most"):
        with threads.using_threads(threads.max_threads() + 1):
            pass


@pytest.mark.skipif(not threads.thread_safe_layers(), reason="no TBB or OpenMP here: workqueue fallback")
def test_layer_is_thread_safe_and_tolerates_concurrent_calls():
    # workqueue would abort the process here; the layer chosen by mlpar.core.threads must not.
    x, y = ew.random_vectors(200_000, seed=1)
    expected = x * y
    errors = []

    def work():
        try:
            for _ in range(20):
                if not np.array_equal(ew.product_parallel(x, y), expected):
                    errors.append("wrong result")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    workers = [threading.Thread(target=work) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert threads.threading_layer() in ("tbb", "omp")


# Run in a fresh interpreter in which numba's TBB and OpenMP layers cannot be imported, as on
# macOS arm64 wheels or a slim image without libtbb and libgomp.
HIDE_LAYERS = textwrap.dedent("""
    import importlib.abc, sys, warnings

    class HideThreadSafeLayers(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
                raise ImportError(f"{name} hidden by the test")
            return None

    sys.meta_path.insert(0, HideThreadSafeLayers())
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from mlpar.core import threads
    import numba, numpy as np
    from numba import njit, prange

    @njit(parallel=True)
    def double(x):
        out = np.empty_like(x)
        for i in prange(x.size):
            out[i] = 2 * x[i]
        return out

    mine = [str(w.message) for w in caught if "mlpar:" in str(w.message)]
    print("WARNINGS", len(mine))
    for text in mine:
        print("TEXT", text)
    print("SAFE", threads.thread_safe_layers())
    try:
        ok = bool((double(np.arange(1000.0)) == 2 * np.arange(1000.0)).all())
        print("KERNEL", ok, numba.threading_layer())
    except Exception as exc:
        print("KERNEL FAILED", type(exc).__name__, exc)
""")


def run_hidden(env_layer=None):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    if env_layer:
        env["NUMBA_THREADING_LAYER"] = env_layer
    done = subprocess.run([sys.executable, "-c", HIDE_LAYERS], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_without_tbb_or_openmp_parallel_kernels_fall_back_to_workqueue_with_one_warning():
    out = run_hidden()
    assert "WARNINGS 1" in out, out
    assert "KERNEL True workqueue" in out, out
    assert "SAFE []" in out, out
    text = next(line for line in out.splitlines() if line.startswith("TEXT"))
    assert "pip install tbb" in text and "two Python threads" in text and "workqueue" in text


def test_the_fallback_is_what_makes_kernels_run_there():
    # The control: a forced thread-safe layer on the same machine fails every parallel kernel.
    out = run_hidden(env_layer="threadsafe")
    assert "WARNINGS 0" in out, out
    assert "KERNEL FAILED" in out and "threading layer" in out.lower(), out


def test_a_users_choice_of_layer_is_kept_without_a_warning():
    out = run_hidden(env_layer="workqueue")
    assert "WARNINGS 0" in out and "KERNEL True workqueue" in out, out
