"""A spin lock and two memory primitives for numba ``nogil`` code, built on LLVM atomics.

numba's nopython mode has no lock and no atomic instruction on the CPU, yet lesson 04 needs a
lock *inside* compiled code: taking a Python ``threading.Lock`` for every SGD update would
cost microseconds of interpreter time per update and measure Python, not locking. So this
module emits the three LLVM instructions a lock needs, each as a numba ``@intrinsic``:

* ``compare_and_swap(a, i, expected, new)``: atomically, if ``a[i] == expected`` then
  ``a[i] = new``; returns the old value (``cmpxchg``, sequentially consistent). The one
  read-modify-write that two threads can never interleave.
* ``compare_and_swap_float(a, i, expected, new)``: the same on a float64 array, comparing the
  64 bits (so -0.0 and NaN behave); returns 1 if it swapped, 0 if another thread got there
  first. A loop of it makes an atomic ``a[i] -= delta`` (``atomic_subtract``), the atomic
  scalar update the Hogwild paper assumes.
* ``store_release(a, i, value)``: a store that earlier reads and writes cannot move past.
* ``load_relaxed(a, i)``: a plain load that the compiler must really perform each time
  (on x86 it is an ordinary ``mov``; it is not a locked instruction). The Hogwild
  instrumentation uses it to compare "the value I read before" with "the value there now"
  without the optimiser merging the two reads into one.

``arrive_and_wait`` is a one-shot barrier built the same way. ``acquire(lock)`` /
``release(lock)`` make a test-and-test-and-set spin lock from them: spin
on cheap relaxed reads while the lock is taken and try the expensive ``cmpxchg`` only when it
looks free. The lock is ``lock[0]`` of an int64 array (``new_lock()``), 0 = free, 1 = taken.
A spin lock never sleeps: a thread that waits burns its core. That is the right trade for
critical sections of a few hundred nanoseconds (one SGD update) and the wrong one for long
ones, which is why operating-system mutexes spin briefly and then park the thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from mlpar.core import limits, validation

# 128 bytes: the lock word sits alone on its cache line(s), so spinning on it does not
# disturb neighbouring data (adjacent-line prefetch pairs 64-byte lines on x86).
_LOCK_WORDS = 16


def new_lock() -> np.ndarray:
    """A fresh, free lock: an int64 array whose element 0 is the lock word."""
    return np.zeros(_LOCK_WORDS, dtype=np.int64)


def _element_pointer(context, builder, arr_type, arr, idx_type, idx):
    array = context.make_array(arr_type)(context, builder, arr)
    index = context.cast(builder, idx, idx_type, types.intp)
    return cgutils.get_item_pointer(context, builder, arr_type, array, [index], wraparound=False)


def _alignment(context, arr_type) -> int:
    return context.get_abi_sizeof(context.get_data_type(arr_type.dtype))


@intrinsic
def compare_and_swap(typingctx, arr, idx, expected, new):
    """``old = a[i]; if old == expected: a[i] = new; return old`` as one atomic step."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.ndim == 1):
        return None
    sig = types.int64(arr, idx, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        a, i, exp, val = args
        ptr = _element_pointer(context, builder, signature.args[0], a, signature.args[1], i)
        exp = context.cast(builder, exp, signature.args[2], types.int64)
        val = context.cast(builder, val, signature.args[3], types.int64)
        pair = builder.cmpxchg(ptr, exp, val, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)

    return sig, codegen


@intrinsic
def compare_and_swap_float(typingctx, arr, idx, expected, new):
    """``if bits(a[i]) == bits(expected): a[i] = new`` as one atomic step; 1 if it swapped."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.float64 and arr.ndim == 1):
        return None
    sig = types.int64(arr, idx, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        a, i, exp, val = args
        ptr = _element_pointer(context, builder, signature.args[0], a, signature.args[1], i)
        word = ir.IntType(64)
        # cmpxchg works on integers: compare and swap the doubles' bit patterns
        ptr = builder.bitcast(ptr, word.as_pointer())
        exp = builder.bitcast(context.cast(builder, exp, signature.args[2], types.float64), word)
        val = builder.bitcast(context.cast(builder, val, signature.args[3], types.float64), word)
        pair = builder.cmpxchg(ptr, exp, val, "seq_cst", "seq_cst")
        return builder.zext(builder.extract_value(pair, 1), word)

    return sig, codegen


@njit(nogil=True, inline="always")
def atomic_subtract(arr, i, delta):
    """``arr[i] -= delta`` that no other thread's update can overwrite: read, compute, and
    swap only if ``arr[i]`` is still what was read, else retry. Returns the retries made."""
    retries = 0
    while True:
        old = load_relaxed(arr, i)
        if compare_and_swap_float(arr, i, old, old - delta):
            return retries
        retries += 1


@intrinsic
def store_release(typingctx, arr, idx, value):
    """``a[i] = value`` with release ordering (ends a critical section)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1):
        return None
    sig = types.void(arr, idx, arr.dtype)

    def codegen(context, builder, signature, args):
        a, i, val = args
        ptr = _element_pointer(context, builder, signature.args[0], a, signature.args[1], i)
        builder.store_atomic(val, ptr, "release", _alignment(context, signature.args[0]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def load_relaxed(typingctx, arr, idx):
    """``a[i]``, read from memory every time (a 'monotonic' atomic load: a plain mov on x86)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1):
        return None
    sig = arr.dtype(arr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        ptr = _element_pointer(context, builder, signature.args[0], a, signature.args[1], i)
        return builder.load_atomic(ptr, "monotonic", _alignment(context, signature.args[0]))

    return sig, codegen


# --- the lock and the barrier: Python functions that check, with jit versions for nogil code ---
#
# Each public function below is a plain Python function that validates its arguments (an empty
# array or an empty view has no element 0: the atomics, which skip bounds checks, would write
# outside it, and ``acquire`` would spin forever on memory nobody releases) and then runs the
# compiled body. Inside numba code the same name resolves to the ``@overload`` beside it, which
# checks the types while compiling and the size at run time.

_EMPTY = ": expected a 1-D int64 array with at least one element (new_lock()), got an empty one"


def _check_word_array(name: str, arr) -> np.ndarray:
    arr = validation.array(name, arr, ndim=1, dtype=np.int64, min_size=1)
    if not arr.flags.writeable:
        raise ValueError(f"{name}: expected a writeable array, got a read-only one")
    validation.real_array(name, arr)
    return arr


def _check_word_type(name: str, arr) -> None:
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.ndim == 1):
        raise TypingError(f"{name}: expected a 1-D int64 array (new_lock()), got {arr}")


def _acquire_body(lock):
    if lock.size < 1:
        raise ValueError("lock" + _EMPTY)
    spins = 0
    while True:
        # Test first with a plain read: while another thread holds the lock, waiting threads
        # only read the (shared, cached) line instead of stealing it with a write each spin.
        if load_relaxed(lock, 0) == 0 and compare_and_swap(lock, 0, 0, 1) == 0:
            return spins
        spins += 1


def _release_body(lock):
    if lock.size < 1:
        raise ValueError("lock" + _EMPTY)
    store_release(lock, 0, np.int64(0))


def _arrive_and_wait_body(counter, parties):
    if counter.size < 1:
        raise ValueError("counter" + _EMPTY)
    while True:
        old = load_relaxed(counter, 0)
        if compare_and_swap(counter, 0, old, old + 1) == old:
            break
    while load_relaxed(counter, 0) < parties:
        pass


_acquire = njit(nogil=True)(_acquire_body)
_release = njit(nogil=True)(_release_body)
_arrive_and_wait = njit(nogil=True)(_arrive_and_wait_body)


def acquire(lock: np.ndarray) -> int:
    """Spin until this thread owns ``lock``; returns how many failed attempts it made."""
    return _acquire(_check_word_array("lock", lock))


def release(lock: np.ndarray) -> None:
    """Give ``lock`` back; writes made while holding it are visible to the next owner."""
    _release(_check_word_array("lock", lock))


def arrive_and_wait(counter: np.ndarray, parties: int) -> None:
    """A one-shot barrier: count this thread in, then spin until ``parties`` threads have.

    ``counter[0]`` must be 0 before the first thread arrives. Used where threads must really
    overlap in time (counting races), not merely start within a few hundred microseconds.
    From Python, every one of the ``parties`` threads must call it, or it waits forever.
    """
    counter = _check_word_array("counter", counter)
    parties = limits.workers("parties", parties)
    _arrive_and_wait(counter, parties)


@overload(acquire, inline="always")
def _acquire_jit(lock):
    _check_word_type("lock", lock)
    return _acquire_body


@overload(release, inline="always")
def _release_jit(lock):
    _check_word_type("lock", lock)
    return _release_body


@overload(arrive_and_wait, inline="always")
def _arrive_and_wait_jit(counter, parties):
    _check_word_type("counter", counter)
    return _arrive_and_wait_body
