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

**How large is "far larger"?** STREAM asks for arrays spanning 4 last-level caches. Some
machines report hundreds of MiB of cache (virtual machines often report the host's), and 4 of
those would not fit a lesson's memory (a quarter of the free memory) or time budget (one cell
within 30 s). ``plan_beyond_cache`` sizes the arrays from the hardware within both budgets and
says which one set the size; when a budget stopped the arrays short of 4 caches, a "memory
roof" measured on them may be partly a cache roof, and the lessons' memory claims read "n/a".
The hardware is read through ``mlpar.core.environment`` and can be faked for planning and tests
with ``MLPAR_HARDWARE="cores=128,llc=1.2GiB,memory=64GiB"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from mlpar.core import environment, limits, threads, timing, validation

#: Bytes in one float64.
WORD = 8
#: Arrays of a streaming probe together span at least this many last-level caches, so that
#: almost every access goes to main memory (STREAM's own rule asks for 4).
CACHE_MULTIPLE = 4
#: Assumed last-level cache when the operating system does not say (a large desktop L3).
DEFAULT_LAST_LEVEL_CACHE = 32 << 20


def bytes_moved(n: int, *, reads: int, writes: int, write_allocate: bool = True) -> int:
    """Bytes a streaming kernel moves over ``n`` float64 elements under the rule above."""
    n = validation.integer("n", n, minimum=0)
    reads = validation.integer("reads", reads, minimum=0)
    writes = validation.integer("writes", writes, minimum=0)
    write_allocate = validation.flag("write_allocate", write_allocate)
    per_write = 2 if write_allocate else 1
    return WORD * n * (reads + per_write * writes)


#: Share of the available memory a lesson's arrays may use (issue 27: at most a quarter).
MEMORY_SHARE = 0.25
#: The time budget of one lesson cell, in seconds.
CELL_SECONDS = 30.0
#: Passes over the arrays that lesson 01's heaviest cell may make: the thread sweep at 128
#: cores (8 thread counts × 3 rounds × 2 kernels × 3 calls = 144); the ladder of five variants
#: with the STREAM roof makes about 75.
PASSES_PER_CELL = 150
#: A slow streaming rate to plan with (GB/s): one core of a modest laptop. Planning with it
#: keeps a cell within ``CELL_SECONDS`` on such a machine; faster machines finish sooner.
PLANNING_GBPS = 8.0
#: The most bytes the arrays of a streaming probe may span together, whatever the cache: more
#: would make the heaviest cell last longer than ``CELL_SECONDS`` at ``PLANNING_GBPS``.
TIME_CAP_BYTES = int(CELL_SECONDS * PLANNING_GBPS * 1e9 / PASSES_PER_CELL)
#: The shortest array a probe uses (512 KiB of float64), however small the budget.
MIN_LOG2_LENGTH = 16


def last_level_cache() -> int:
    """Size in bytes of the last-level cache (``environment.last_level_cache_bytes``), or
    ``DEFAULT_LAST_LEVEL_CACHE`` when the machine does not report it (see ``StreamPlan``)."""
    llc = environment.last_level_cache_bytes()
    return DEFAULT_LAST_LEVEL_CACHE if llc is None else llc


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.0f} MiB" if nbytes < 2**30 else f"{nbytes / 2**30:,.2f} GiB"


@dataclass(frozen=True)
class StreamPlan:
    """How long the arrays of a streaming probe are, and what set that length.

    ``limited_by`` is ``"cache"`` when the arrays span ``CACHE_MULTIPLE`` last-level caches
    (what STREAM asks for), ``"memory"`` when a quarter of the free memory stopped them
    short, ``"time"`` when ``TIME_CAP_BYTES`` did. Only in the first case do the arrays
    stream from main memory; otherwise part of them may be served by the cache, and a
    "memory roof" measured on them may be a cache roof.
    """

    n: int                 # elements per array (a power of two)
    arrays: int            # how many float64 arrays of length n
    llc: int | None        # last-level cache in bytes; None when the machine does not say
    budget: int            # the memory budget for the arrays, in bytes
    limited_by: str        # "cache", "memory" or "time"

    @property
    def nbytes(self) -> int:
        """Bytes the arrays span together."""
        return self.arrays * WORD * self.n

    @property
    def assumed_llc(self) -> int:
        """The cache the plan sized for: the reported one, or the default when unknown."""
        return DEFAULT_LAST_LEVEL_CACHE if self.llc is None else self.llc

    @property
    def cache_multiple(self) -> float:
        """How many last-level caches the arrays span (of the assumed cache when unknown)."""
        return self.nbytes / self.assumed_llc

    @property
    def beyond_cache(self) -> bool:
        """True when the arrays span ``CACHE_MULTIPLE`` caches: loads come from memory."""
        return self.cache_multiple >= CACHE_MULTIPLE

    @property
    def shortfall(self) -> str:
        """Why the arrays cannot exceed the cache here, or "" when they do."""
        if self.beyond_cache:
            return ""
        cap = ("a quarter of the free memory" if self.limited_by == "memory" else
               f"the time budget of a lesson cell ({_mib(TIME_CAP_BYTES)} of arrays)")
        return (f"the arrays ({_mib(self.nbytes)}) span only {self.cache_multiple:.2g}× the "
                f"{_mib(self.assumed_llc)} last-level cache, capped by {cap}: a rate measured "
                "on them may come partly from the cache, not from memory")

    def __str__(self) -> str:
        cache = (f"{_mib(self.llc)} last-level cache" if self.llc is not None else
                 f"last-level cache not reported, {_mib(DEFAULT_LAST_LEVEL_CACHE)} assumed")
        head = f"{self.arrays} arrays of {self.n:,} float64 = {_mib(self.nbytes)} ({cache}): "
        if self.beyond_cache:
            return head + (f"{self.cache_multiple:.3g}× the cache, so loads come from main "
                           "memory; the size was set by the cache")
        return head + self.shortfall


def plan_beyond_cache(arrays: int = 3) -> StreamPlan:
    """The power-of-two length n at which ``arrays`` float64 arrays span ``CACHE_MULTIPLE``
    last-level caches, within a memory budget (``MEMORY_SHARE`` of the free memory) and a
    time budget (``TIME_CAP_BYTES``); when a budget stops it short, the plan says so.

    The hardware comes from ``mlpar.core.environment`` (override: ``MLPAR_HARDWARE``).
    """
    arrays = validation.positive_int("arrays", arrays)
    llc = environment.last_level_cache_bytes()
    budget = int(MEMORY_SHARE * environment.available_memory_bytes())
    wanted = CACHE_MULTIPLE * (DEFAULT_LAST_LEVEL_CACHE if llc is None else llc)
    log2_wanted = max(MIN_LOG2_LENGTH, math.ceil(math.log2(wanted / (arrays * WORD))))
    caps = {"memory": budget, "time": TIME_CAP_BYTES}
    limited_by, log2_n = "cache", log2_wanted
    for reason, cap in caps.items():  # the largest power of two within each budget
        log2_cap = max(MIN_LOG2_LENGTH, int(math.floor(math.log2(max(1, cap // (arrays * WORD))))))
        if log2_cap < log2_n:
            limited_by, log2_n = reason, log2_cap
    return StreamPlan(1 << log2_n, arrays, llc, budget, limited_by)


def beyond_cache_length(arrays: int = 3) -> int:
    """``plan_beyond_cache(arrays).n``: a power-of-two length at which ``arrays`` float64
    arrays span ``CACHE_MULTIPLE`` last-level caches, or the most the budgets allow."""
    return plan_beyond_cache(arrays).n


@njit(parallel=True)
def _copy(dst, src):
    for i in prange(src.shape[0]):
        dst[i] = src[i]


@njit(parallel=True)
def _triad(a, b, c, s):
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def triad(a, b, c, s: float = 3.0):
    """STREAM's triad ``a[i] = b[i] + s·c[i]`` on numba's threads (checked; ``a`` is written)."""
    a, b, c = three_arrays("a, b, c", (a, b, c), written=0)
    s = validation.number("s", s)
    _triad(a, b, c, s)
    return a


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
