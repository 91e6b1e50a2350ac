"""mlpar.cpu.spinlock: the lock and the barrier check their arrays before touching memory.

The atomics skip bounds checks, so an empty array (or an empty view into a bigger one) would
make ``acquire``/``release`` write outside it, and ``acquire`` spin forever on a word that no
thread will ever release. Both must be refused, from Python and from compiled code.
"""

import numba
import numpy as np
import pytest

from mlpar.cpu import spinlock

EMPTY = [np.zeros(0, dtype=np.int64), np.zeros(16, dtype=np.int64)[5:5]]


@pytest.mark.parametrize("func", [spinlock.acquire, spinlock.release])
@pytest.mark.parametrize("lock", EMPTY, ids=["empty array", "empty view"])
def test_empty_lock_is_refused_from_python(func, lock):
    with pytest.raises(ValueError, match="lock: expected at least 1 elements, got 0"):
        func(lock)


def test_the_memory_around_an_empty_view_is_untouched():
    parent = np.full(16, 7, dtype=np.int64)
    view = parent[5:5]
    for func in (spinlock.acquire, spinlock.release):
        with pytest.raises(ValueError):
            func(view)
    assert (parent == 7).all()


@pytest.mark.parametrize("bad, error, match", [
    (np.zeros(4), TypeError, "lock: expected dtype int64"),
    (np.zeros((2, 2), dtype=np.int64), ValueError, "lock: expected a 1-D array"),
    (np.broadcast_to(np.int64(0), (4,)), ValueError, "lock: expected a writeable array"),
    ([0], TypeError, "lock: expected a numpy array"),
])
def test_wrong_locks_are_refused(bad, error, match):
    with pytest.raises(error, match=match):
        spinlock.acquire(bad)


@numba.njit(nogil=True)
def _take_and_give(lock):
    spins = spinlock.acquire(lock)
    spinlock.release(lock)
    return spins


def test_empty_lock_is_refused_inside_compiled_code():
    with pytest.raises(ValueError, match="lock: expected a 1-D int64 array with at least one"):
        _take_and_give(np.zeros(0, dtype=np.int64))


def test_wrong_lock_type_fails_to_compile_with_the_argument_named():
    with pytest.raises(numba.core.errors.TypingError, match="lock: expected a 1-D int64 array"):
        _take_and_give(np.zeros(4))


def test_a_good_lock_is_taken_and_given_back():
    lock = spinlock.new_lock()
    assert spinlock.acquire(lock) == 0 and lock[0] == 1
    spinlock.release(lock)
    assert lock[0] == 0
    assert _take_and_give(lock) == 0 and lock[0] == 0


def test_barrier_checks_its_counter_and_parties():
    with pytest.raises(ValueError, match="counter: expected at least 1 elements"):
        spinlock.arrive_and_wait(np.zeros(0, dtype=np.int64), 1)
    with pytest.raises(ValueError, match="parties: expected at most"):
        spinlock.arrive_and_wait(spinlock.new_lock(), 10**6)
    counter = spinlock.new_lock()
    spinlock.arrive_and_wait(counter, 1)  # one party: returns at once
    assert counter[0] == 1
