import threading

import numba
import numpy as np
import pytest

from mlpar import elementwise as ew
from mlpar import threads


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


def test_layer_is_thread_safe_and_tolerates_concurrent_calls():
    # workqueue would abort the process here; the layer chosen by mlpar.threads must not.
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
