"""Memory bandwidth measured the way STREAM does it, with one rule for counting bytes.

**The byte-counting rule** used by every kernel of lessons 01 and 02: an array that is read
counts its bytes once; an array that is written with ordinary stores counts them *twice*,
because before a core writes into a cache line it first reads that line from memory
(*write-allocate*), then writes it back. Per float64 element that gives

=============================  ======  =======  ==================
kernel                          reads   writes   bytes counted
=============================  ======  =======  ==================
copy   ``a[i] = b[i]``            1        1      8 + 2·8 = 24
triad  ``a[i] = b[i] + s·c[i]``   2        1      2·8 + 2·8 = 32
product ``out[i] = x[i]·y[i]``    2        1      32
horner  ``out[i] = p(x[i])``      1        1      24
=============================  ======  =======  ==================

numpy's ``multiply(..., out=)`` and numba's loops both store with ordinary instructions, so the
same rule applies to both. (``memcpy``, behind ``np.copyto``, may use non-temporal stores that
skip the write-allocate read: that is why this module copies with its own compiled loop
instead, so the probe and the kernels it is compared with are counted alike.)

**The memory roof** is the best rate of the STREAM copy and triad kernels (McCalpin, 1995) on
arrays far larger than the last-level cache, on one thread and on all of numba's threads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit, prange

from mlpar.core import limits, threads, timing, validation

#: Bytes in one float64.
WORD = 8
#: Arrays of a streaming probe together span at least this many last-level caches, so that
#: almost every access goes to main memory (STREAM's own rule asks for 4).
CACHE_MULTIPLE = 4
#: Assumed last-level cache when the operating system does not say (a large server L3).
DEFAULT_LAST_LEVEL_CACHE = 32 << 20


def bytes_moved(n: int, *, reads: int, writes: int, write_allocate: bool = True) -> int:
    """Bytes a streaming kernel moves over ``n`` float64 elements under the rule above."""
    n = validation.integer("n", n, minimum=0)
    reads = validation.integer("reads", reads, minimum=0)
    writes = validation.integer("writes", writes, minimum=0)
    write_allocate = validation.flag("write_allocate", write_allocate)
    per_write = 2 if write_allocate else 1
    return WORD * n * (reads + per_write * writes)


@functools.cache
def last_level_cache() -> int:
    """Size in bytes of the largest CPU cache this machine reports (Linux sysfs), or a default."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes) if sizes else DEFAULT_LAST_LEVEL_CACHE


MAX_LOG2_LENGTH = 23  # 64 MiB per float64 array


def beyond_cache_length(arrays: int = 3) -> int:
    """A power-of-two length n such that ``arrays`` float64 arrays of length n together span
    ``CACHE_MULTIPLE`` last-level caches: a size where memory, not cache, serves the loads."""
    arrays = validation.positive_int("arrays", arrays)
    needed = CACHE_MULTIPLE * last_level_cache() / (arrays * WORD)
    # Capped so that a server with a huge cache cannot push a lesson past Binder's 2 GB: there
    # the arrays may partly fit in cache, and the memory-bound claims say so when they fail.
    return 1 << min(MAX_LOG2_LENGTH, max(20, int(np.ceil(np.log2(needed)))))


@njit(parallel=True)
def _copy(dst, src):
    for i in prange(src.shape[0]):
        dst[i] = src[i]


@njit(parallel=True)
def _triad(a, b, c, s):
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


#: kernel name -> (reads, writes) per element.
KERNELS = {"copy": (1, 1), "triad": (2, 1)}


@dataclass(frozen=True)
class MemoryRoof:
    """Measured streaming bandwidths (GB/s, write-allocate counted) and their best."""

    rates: dict  # (kernel, threads) -> GB/s
    n: int

    @property
    def gbps(self) -> float:
        """The memory roof: the best rate of any kernel at any thread count."""
        return max(self.rates.values())

    def best_at(self, n_threads: int) -> float:
        """The best rate with ``n_threads`` threads."""
        return max(v for (_, k), v in self.rates.items() if k == n_threads)

    def __repr__(self) -> str:
        rows = ", ".join(f"{name} {k} thread(s) {v:.1f}" for (name, k), v in self.rates.items())
        return (f"MemoryRoof({self.gbps:.1f} GB/s; {rows}; n = {self.n:,} per array, "
                "write-allocate counted)")


def three_arrays(name: str, arrays, *, written: int = 0):
    """``arrays`` checked as three contiguous float64 arrays of one length, the one at index
    ``written`` writable (a kernel overwrites it); a clear error otherwise."""
    if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__len__") or len(arrays) != 3:
        raise TypeError(f"{name}: expected three float64 arrays of one length, got "
                        f"{type(arrays).__name__}")
    checked = tuple(validation.array(name, v, ndim=1, dtype=np.float64, contiguous=True,
                                     min_size=1) for v in arrays)
    if len({v.shape for v in checked}) > 1:
        raise ValueError(f"{name}: expected three arrays of one length, got shapes "
                         f"{[v.shape for v in checked]}")
    if not checked[written].flags.writeable:
        raise ValueError(f"{name}: expected array {written} to be writable (it is overwritten)")
    return checked


def _scratch(n: int | None, arrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three float64 arrays of one length: ``arrays`` (a, b, c) if given, else new ones of ``n``."""
    if arrays is None:
        n = beyond_cache_length(3) if n is None else validation.positive_int("n", n)
        limits.elements("n", 3 * n)  # three arrays of n
        return np.zeros(n), np.ones(n), np.full(n, 2.0)  # zeros/ones/full touch every page now
    if n is not None:
        raise ValueError("n, arrays: expected one of them, got both")
    return three_arrays("arrays", arrays, written=0)


def stream_bandwidth(kernel: str = "triad", n_threads: int = 1, *, n: int | None = None,
                     repeat: int = 5, arrays=None) -> float:
    """GB/s of one STREAM kernel on ``n_threads`` of numba's threads (bytes by the rule above).

    ``arrays``: three float64 arrays (a, b, c) of one length to use instead of allocating
    them (a lesson that already holds large arrays need not hold three more); ``a`` is
    overwritten, ``b`` and ``c`` are only read.
    """
    validation.choice("kernel", kernel, KERNELS)
    repeat = validation.positive_int("repeat", repeat)
    a, b, c = _scratch(n, arrays)
    n = a.shape[0]
    reads, writes = KERNELS[kernel]
    with threads.using_threads(n_threads):
        if kernel == "copy":
            t = timing.measure(_copy, a, b, repeat=repeat)
        else:
            t = timing.measure(_triad, a, b, c, 3.0, repeat=repeat)
    return bytes_moved(n, reads=reads, writes=writes) / t.best / 1e9


def memory_roof(*, n: int | None = None, repeat: int = 5, arrays=None) -> MemoryRoof:
    """Copy and triad on one thread and on all of numba's threads; the best is the roof.

    ``arrays``: as in ``stream_bandwidth`` (one set of three arrays serves all four runs).
    """
    repeat = validation.positive_int("repeat", repeat)
    arrays = _scratch(n, arrays)
    counts = sorted({1, threads.max_threads()})
    rates = {(name, k): stream_bandwidth(name, k, repeat=repeat, arrays=arrays)
             for name in KERNELS for k in counts}
    return MemoryRoof(rates, arrays[0].shape[0])
