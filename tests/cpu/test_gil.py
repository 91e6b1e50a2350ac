"""The GIL module: every work function and engine agrees; joblib overhead helpers behave."""

import threading

import numpy as np
import pytest

from mlpar.cpu import gil


def test_python_and_numba_give_identical_orbits():
    for x0 in (0.5, 0.123):
        ref = gil.python_work(5000, x0)
        assert gil.nogil_work(5000, x0) == ref
        assert gil.gil_work(5000, x0) == ref


@pytest.mark.parametrize("engine", gil.POOLS)
@pytest.mark.parametrize("work", list(gil.WORKS))
def test_every_engine_returns_the_sequential_results(work, engine):
    ref = gil.run_work(work, 2000, 3, "sequential")
    assert gil.run_work(work, 2000, 3, engine, n_workers=2) == ref
    assert len(set(ref)) == 3  # each task follows its own orbit


def test_gil_table_has_every_cell_and_positive_times():
    table = gil.gil_table(n_python=2000, n_numba=20000, n_tasks=2, n_workers=2, repeat=1)
    assert set(table.seconds) == {(w, e) for w in gil.WORKS for e in gil.POOLS}
    assert all(t > 0 for t in table.seconds.values())
    assert table.speedup("python", "sequential") == 1.0
    assert "numba nogil" in repr(table)


def test_threads_are_joined():
    before = threading.active_count()
    gil.run_work("numba nogil", 1000, 4, "threads", n_workers=2)
    assert threading.active_count() == before


@pytest.mark.parametrize("backend", gil.JOBLIB_BACKENDS)
def test_task_overhead_is_positive(backend):
    assert 0 < gil.task_overhead(backend, n_tasks=20) < 1.0


def test_memmapping_changes_what_the_worker_receives():
    big = np.ones(300_000)  # 2.4 MB, above the 1 MB threshold
    # memmap=True matches joblib's defaults, so only the memmap=False call restarts the pool
    assert gil.received_type(big, memmap=True) == "memmap"
    assert gil.transfer_time(big, memmap=True, n_tasks=2) > 0
    assert gil.received_type(big, memmap=False) == "ndarray"
    assert gil.pickle_time(big, repeat=1) > 0


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: gil.run_work("fortran", 10, 2, "threads"), ValueError, "work"),
        (lambda: gil.run_work("python", 0, 2, "threads"), ValueError, "n_steps"),
        (lambda: gil.run_work("python", 10, 2, "gpu"), ValueError, "pool"),
        (lambda: gil.run_work("python", 10, 2, "threads", n_workers=0), ValueError, "n_workers"),
        (lambda: gil.run_work("python", 10.5, 2, "threads"), TypeError, "n_steps"),
        (lambda: gil.task_overhead("multiprocessing"), ValueError, "backend"),
        (lambda: gil.pickle_time([1, 2]), TypeError, "array"),
        (lambda: gil.gil_table(n_python=-1), ValueError, "n_python"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
