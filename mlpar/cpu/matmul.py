"""Matrix multiplication, from a Python triple loop to BLAS: every variant, and measurements.

The variants live by concept in ``mlpar.cpu.matmul_loops`` (python, ijk, ikj, blocked,
parallel) and ``mlpar.cpu.matmul_packed`` (packed, blas); this module names them
(``VARIANTS``), runs one by name (``matmul``) and measures them: GFLOP/s per variant at one
size, the blocked loop against ikj as B outgrows the cache, BLAS on 1 and on all threads.

    python -m mlpar.bench linear_algebra
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlpar.core import timing, validation
from mlpar.cpu import figures, stream
from mlpar.cpu.matmul_loops import (
    DEFAULT_BLOCK,
    matmul_blocked,
    matmul_flops,
    matmul_ijk,
    matmul_ijk_transposed,
    matmul_ikj,
    matmul_parallel,
    matmul_python,
    random_matrices,
)
from mlpar.cpu.matmul_packed import REGISTER_BLOCK, matmul_blas, matmul_packed

__all__ = ["DEFAULT_BLOCK", "REGISTER_BLOCK", "VARIANTS", "matmul", "matmul_flops",
           "random_matrices", "matmul_python", "matmul_ijk", "matmul_ikj", "matmul_blocked",
           "matmul_parallel", "matmul_packed", "matmul_blas"]

#: Each timing sample lasts at least this long (seconds): matrix products are long calls.
MIN_SAMPLE_TIME = 1e-2
#: Size of the square product whose BLAS rate is taken as the machine's practical peak.
PEAK_SIZE = 1024
#: Figure size of the bar chart of GFLOP/s per variant.
FIGSIZE = (8, 3.4)

#: name -> function(a, b); ``block`` is passed to the variants that take one.
VARIANTS = {
    "python": matmul_python,
    "ijk": matmul_ijk,
    "ikj": matmul_ikj,
    "blocked": matmul_blocked,
    "parallel": matmul_parallel,
    "packed": matmul_packed,
    "blas": matmul_blas,
}
TAKES_BLOCK = ("blocked", "parallel")


def matmul(a: np.ndarray, b: np.ndarray, variant: str = "blas", block: int = DEFAULT_BLOCK) -> np.ndarray:
    """Multiply with the named variant (one of ``VARIANTS``)."""
    validation.choice("variant", variant, VARIANTS)
    validation.positive_int("block", block)  # checked even where the variant ignores it
    if variant in TAKES_BLOCK:
        return VARIANTS[variant](a, b, block)
    return VARIANTS[variant](a, b)


_BLAS_LAST_RAN = [-1e9]  # time.monotonic() when the last timed BLAS call returned


def _wait_for_blas_threads_to_sleep(variant: str) -> None:
    if variant != "blas":
        # BLAS's idle threads still spinning would share the cores with numba's (timing.py)
        time.sleep(max(0.0, timing.BLAS_SPIN_SECONDS - (time.monotonic() - _BLAS_LAST_RAN[0])))


def _time(variant, a, b, block, name, repeat):
    _wait_for_blas_threads_to_sleep(variant)
    try:
        return timing.measure(matmul, a, b, variant, block, name=name, repeat=repeat,
                              flops=matmul_flops(a.shape[0], a.shape[1], b.shape[1]),
                              min_sample_time=MIN_SAMPLE_TIME)
    finally:
        if variant == "blas":
            _BLAS_LAST_RAN[0] = time.monotonic()


def measure_variant(variant: str, n: int, *, block: int = DEFAULT_BLOCK, repeat: int = 3,
                    seed: int = 0):
    """Time one variant on two random n × n matrices; the Timing carries its flops.

    The name reads like ``"blocked(64)"``: the variant and its block size if it has one.
    ``timing.measure`` calls it once before timing, so numba's compilation is not counted.
    """
    validation.choice("variant", variant, VARIANTS)
    validation.positive_int("block", block)  # checked even where the variant ignores it
    a, b = random_matrices(n, seed=seed)
    label = variant if variant not in TAKES_BLOCK else f"{variant}({block})"
    return _time(variant, a, b, block, label, repeat)


def measure_variants(
    n: int,
    variants: Sequence[str] = ("ijk", "ikj", "blocked", "parallel", "packed", "blas"),
    *,
    block: int = DEFAULT_BLOCK,
    repeat: int = 3,
    seed: int = 0,
) -> timing.SpeedupTable:
    """Time several variants, all at the same size ``n``; the first one listed is the baseline.

    The interpreter's loop is not among the defaults: at a size where the compiled variants
    take milliseconds it takes minutes (``measure_variant("python", 64)`` times it alone).
    """
    n = validation.positive_int("n", n)
    if isinstance(variants, (str, bytes)) or not hasattr(variants, "__iter__"):
        raise TypeError(f"variants: expected a sequence of variant names, got {type(variants).__name__}")
    if not variants:
        raise ValueError("variants: expected at least one variant name, got an empty sequence")
    return timing.compare([measure_variant(v, n, block=block, repeat=repeat, seed=seed)
                           for v in variants])


@dataclass(frozen=True)
class BlockingSweep:
    """ikj against blocked, one thread, for (rows, m) @ (m, m) products of growing m."""

    rows: int
    block: int
    sizes: tuple[int, ...]
    ikj: tuple[float, ...]  # GFLOP/s
    blocked: tuple[float, ...]

    @property
    def intensities(self) -> tuple[float, float]:
        """Flops per byte of B read from memory once B is past the cache: (ikj, blocked).

        ikj reads each 8-byte element of B once per row of A, for 2 flops; blocked reads it
        once per row-tile of min(rows, block) rows, for 2 flops per row of the tile.
        """
        return 2 / 8, 2 * min(self.rows, self.block) / 8

    @property
    def b_bytes(self) -> tuple[int, ...]:
        """Bytes of the matrix B at each size."""
        return tuple(8 * m * m for m in self.sizes)

    def gain(self, i: int = -1) -> float:
        """blocked / ikj at the i-th size (the largest by default)."""
        return self.blocked[i] / self.ikj[i]

    def plot(self, ax=None, cache_bytes: Sequence[tuple[str, int]] = ()):
        """GFLOP/s against the size of B, with the caches as vertical lines."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6.5, 3))
        mib = [b / 2**20 for b in self.b_bytes]
        ax.plot(mib, self.ikj, "o-", label="ikj (reads all of B per row of A)")
        ax.plot(mib, self.blocked, "s-", label=f"blocked({self.block}) (a tile of B per row-tile)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(mib, [f"{v:g}" for v in mib])
        ax.minorticks_off()
        for label, size in cache_bytes:
            ax.axvline(size / 2**20, color="grey", ls=":", lw=1)
            ax.annotate(label, (size / 2**20, 0), xycoords=("data", "axes fraction"),
                        xytext=(3, 4), textcoords="offset points", fontsize=8, color="grey")
        ax.set_xlabel("size of B [MiB] (log scale)")
        ax.set_ylabel("GFLOP/s, one thread")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, loc="upper right")
        return ax


#: Rows of A in the blocking sweep: few, so B far past the cache still takes little time.
BLOCKING_ROWS = 32
#: Samples per variant and size in the blocking sweep.
BLOCKING_REPEAT = 2
#: The sweep's sizes of B, as fractions of the largest side m (each a quarter of the next in bytes).
BLOCKING_STEPS = (8, 4, 2, 1)


@dataclass(frozen=True)
class BlockingPlan:
    """The sizes of the blocking sweep, what set the largest, and what it will cost.

    The largest B (m × m float64) should span ``stream.CACHE_MULTIPLE`` last-level caches;
    ``limited_by`` says whether it does (``"cache"``) or whether a quarter of the free memory
    (``"memory"``) or the time budget of a lesson cell (``"time"``) stopped it short.
    """

    sizes: tuple[int, ...]
    rows: int
    repeat: int
    llc: int | None
    limited_by: str

    @property
    def largest_bytes(self) -> int:
        """Bytes of the largest B."""
        return 8 * self.sizes[-1] ** 2

    @property
    def nbytes(self) -> int:
        """Bytes held at once at the largest size: B, A (rows × m) and C (rows × m)."""
        m = self.sizes[-1]
        return 8 * (m * m + 2 * self.rows * m)

    @property
    def planned_seconds(self) -> float:
        """The sweep's time at ``stream.PLANNING_GBPS``: both variants at every size, each
        call (one warm-up, one calibration, ``repeat`` samples) at ikj's past-cache rate of
        0.25 flop/byte — blocked is faster, so this overestimates."""
        calls = 2 * (2 + self.repeat)
        flops = sum(matmul_flops(self.rows, m, m) for m in self.sizes)
        return calls * flops / (0.25 * stream.PLANNING_GBPS * 1e9)

    @property
    def shortfall(self) -> str:
        """Why the largest B does not span the caches it should, or ""."""
        if self.limited_by == "cache":
            return ""
        llc = stream.DEFAULT_LAST_LEVEL_CACHE if self.llc is None else self.llc
        cap = ("a quarter of the free memory" if self.limited_by == "memory" else
               f"the time budget of a lesson cell ({stream.CELL_SECONDS:g} s)")
        return (f"the largest B ({self.largest_bytes / 2**20:,.0f} MiB) spans only "
                f"{self.largest_bytes / llc:.2g}× the {llc / 2**20:,.0f} MiB last-level cache, "
                f"capped by {cap}")

    def __str__(self) -> str:
        llc = ("not reported, " + f"{stream.DEFAULT_LAST_LEVEL_CACHE >> 20} MiB assumed"
               if self.llc is None else f"{self.llc / 2**20:,.0f} MiB")
        head = (f"B from {self.sizes[0]} to {self.sizes[-1]} square "
                f"(largest {self.largest_bytes / 2**20:,.0f} MiB; last-level cache {llc}): ")
        if self.limited_by == "cache":
            return head + f"the largest spans {stream.CACHE_MULTIPLE} caches, set by the cache"
        return head + self.shortfall


def plan_blocking(*, rows: int = BLOCKING_ROWS, repeat: int = BLOCKING_REPEAT) -> BlockingPlan:
    """Sizes for ``measure_blocking``: the largest B spans ``stream.CACHE_MULTIPLE``
    last-level caches, unless a quarter of the free memory or ``stream.CELL_SECONDS`` (at
    ``stream.PLANNING_GBPS``) caps it first; the plan says which. The hardware comes from
    ``mlpar.core.environment`` (override: ``MLPAR_HARDWARE``)."""
    import math

    from mlpar.core import environment

    rows = validation.positive_int("rows", rows)
    repeat = validation.positive_int("repeat", repeat)
    llc = environment.last_level_cache_bytes()
    wanted = stream.CACHE_MULTIPLE * (stream.DEFAULT_LAST_LEVEL_CACHE if llc is None else llc)
    log2_m = max(10, math.ceil(math.log2(math.sqrt(wanted / 8))))
    budget = stream.MEMORY_SHARE * environment.available_memory_bytes()

    def plan(log2, why):
        m = 1 << log2
        return BlockingPlan(tuple(max(1, m // k) for k in BLOCKING_STEPS), rows, repeat, llc, why)

    chosen = plan(log2_m, "cache")
    while chosen.sizes[-1] > 1 << 10 and chosen.nbytes > budget:
        chosen = plan(chosen.sizes[-1].bit_length() - 2, "memory")
    while chosen.sizes[-1] > 1 << 10 and chosen.planned_seconds > stream.CELL_SECONDS:
        chosen = plan(chosen.sizes[-1].bit_length() - 2, "time")
    return chosen


def measure_blocking(sizes: Sequence[int] = (512, 1024, 2048, 4096), *, rows: int = 32,
                     block: int = DEFAULT_BLOCK, repeat: int = 3, seed: int = 0,
                     progress: bool = False) -> BlockingSweep:
    """Time ikj and blocked on one thread for A (rows, m) @ B (m, m), for each m in ``sizes``.

    ikj streams all of B (8·m² bytes) once per row of A; blocked streams it once per
    ``block`` rows. While B fits in the cache both read it from there; past the cache, ikj
    waits for main memory and blocked does not. A is kept short so that a size with B far
    past the cache still takes a fraction of a second. ``progress=True`` shows a tqdm bar.
    """
    from mlpar.core import threads

    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes: expected a sequence of sizes, got {type(sizes).__name__}")
    sizes = tuple(validation.positive_int("sizes", m) for m in sizes)
    if not sizes:
        raise ValueError("sizes: expected at least one size, got an empty sequence")
    rows = validation.positive_int("rows", rows, maximum=1 << 16)
    block = validation.positive_int("block", block)
    progress = validation.flag("progress", progress)
    ikj, blocked = [], []
    if progress:
        from tqdm.auto import tqdm

        sizes_shown = tqdm(sizes, desc="sizes of B")
    else:
        sizes_shown = sizes
    with threads.using_threads(1):
        for m in sizes_shown:
            a, _ = random_matrices(rows, m, 1, seed=seed)
            b = np.random.default_rng(seed + 1).standard_normal((m, m))
            ikj.append(_time("ikj", a, b, block, "ikj", repeat).gflops)
            blocked.append(_time("blocked", a, b, block, "blocked", repeat).gflops)
    return BlockingSweep(rows, block, sizes, tuple(ikj), tuple(blocked))


def measure_conflicts(sizes: Sequence[int] = (511, 512, 513), *, variant: str = "ijk",
                      repeat: int = 3, seed: int = 0) -> dict:
    """GFLOP/s of one variant (one thread) at each n × n size: ``{n: GFLOP/s}``.

    At n = 512 a row of B is 4 KiB, so ijk's walk down a column of B visits addresses 4 KiB
    apart. A cache puts each line in one *set*, chosen by the address bits just above the
    64-byte line; addresses a multiple of 4 KiB apart share those bits in L1, and fall in a
    small fraction of L2's sets, so the 512 lines of a column compete for a few sets that
    hold only as many lines as the cache's associativity (8-16 ways). The column evicts
    itself before the next j can reuse it: *conflict misses*. At 511 or 513 the column
    spreads over all the sets.
    """
    from mlpar.core import threads

    validation.choice("variant", variant, VARIANTS)
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes: expected a sequence of sizes, got {type(sizes).__name__}")
    sizes = tuple(validation.positive_int("sizes", n, maximum=4096) for n in sizes)
    if not sizes:
        raise ValueError("sizes: expected at least one size, got an empty sequence")
    with threads.using_threads(1):
        return {n: measure_variant(variant, n, repeat=repeat, seed=seed).gflops for n in sizes}


#: The loops of ``measure_chains``: name -> function(a, b).
CHAIN_LOOPS = {
    "ijk (B down its columns)": matmul_ijk,
    "ijk on Bᵀ (unit stride, one chain)": matmul_ijk_transposed,
    "ijk on Bᵀ, fastmath (many chains)": lambda a, b: matmul_ijk_transposed(a, b, fastmath=True),
    "ikj (independent row updates)": matmul_ikj,
}


def measure_chains(n: int = 600, *, repeat: int = 3, seed: int = 0) -> dict:
    """GFLOP/s on one thread of ijk, ijk on Bᵀ (unit stride), the same with ``fastmath``, and
    ikj, on n × n matrices: ``{name: GFLOP/s}`` in ``CHAIN_LOOPS`` order.

    Tells stride from dependency chain: ijk on Bᵀ reads both operands with unit stride, yet
    keeps ijk's single running total; ``fastmath`` lets the compiler split that total into
    SIMD partial sums. If ijk on Bᵀ is as slow as ijk and fastmath makes it as fast as ikj,
    the chain, not the stride, is what made ijk slow at this size.
    """
    from mlpar.core import threads

    n = validation.positive_int("n", n, maximum=4096)
    a, b = random_matrices(n, seed=seed)
    flops = matmul_flops(n, n, n)
    with threads.using_threads(1):
        return {name: timing.measure(f, a, b, name=name, repeat=repeat, flops=flops,
                                     min_sample_time=MIN_SAMPLE_TIME).gflops
                for name, f in CHAIN_LOOPS.items()}


def blas_threads() -> int:
    """How many threads the BLAS behind numpy uses by default (from ``threadpoolctl``)."""
    from threadpoolctl import threadpool_info

    counts = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return max(counts) if counts else 1


def measure_blas_threads(
    n: int = 512, thread_counts: Sequence[int] | None = None, *, repeat: int = 3, seed: int = 0
) -> timing.SpeedupTable:
    """Implicit parallelism: time the same ``a @ b`` with the BLAS limited to each thread count.

    ``threadpoolctl.threadpool_limits`` changes the BLAS's thread count for the ``with`` block
    and restores it afterwards; numpy's code is unchanged, only the library underneath runs
    on fewer or more cores. The first count is the baseline. The ``repeat`` samples are taken
    in rounds that visit every count in turn, so that another program's burst of load slows
    one sample of each count, not every sample of one; each row keeps all its samples (one
    per round, in order) and its best is their minimum.
    """
    from threadpoolctl import threadpool_limits

    n = validation.positive_int("n", n)
    if thread_counts is not None and (isinstance(thread_counts, (str, bytes))
                                      or not hasattr(thread_counts, "__iter__")):
        raise TypeError(f"thread_counts: expected a sequence of thread counts, got "
                        f"{type(thread_counts).__name__}")
    counts = (1, blas_threads()) if thread_counts is None else tuple(thread_counts)
    if not counts:
        raise ValueError("thread_counts: expected at least one count, got an empty sequence")
    counts = tuple(dict.fromkeys(validation.positive_int("thread_counts", k) for k in counts))
    repeat = validation.positive_int("repeat", repeat, maximum=timing.MAX_REPEAT)
    a, b = random_matrices(n, seed=seed)
    rows: dict = {}
    for _ in range(repeat):
        for k in counts:
            with threadpool_limits(limits=k, user_api="blas"):
                t = _time("blas", a, b, DEFAULT_BLOCK, f"BLAS, {k} thread(s)", 1)
            old = rows.get(k)
            rows[k] = t if old is None else dataclasses.replace(old, times=old.times + t.times)
    return timing.compare([rows[k] for k in counts])


def blas_peak(n: int = PEAK_SIZE, n_threads: int | None = None, *, repeat: int = 3,
              seed: int = 0) -> float:
    """GFLOP/s of BLAS's dgemm on an n × n product, on ``n_threads`` BLAS threads (default all).

    A data-sheet peak (cores × clock × SIMD width × 2) is never reached; the best rate the
    machine's own BLAS achieves is the honest yardstick, and a roof no other kernel is
    measured against itself.
    """
    n = validation.positive_int("n", n)
    counts = [blas_threads() if n_threads is None else validation.positive_int("n_threads",
                                                                                n_threads)]
    return measure_blas_threads(n, counts, repeat=repeat, seed=seed).timings[0].gflops


def plot_gflops(table: timing.SpeedupTable, peak_gflops: float, ax=None):
    """Bars of GFLOP/s per variant (log scale) with the measured BLAS peak as a line."""
    import matplotlib.pyplot as plt

    peak_gflops = validation.positive("peak_gflops", peak_gflops)
    if ax is None:
        _, ax = plt.subplots(figsize=FIGSIZE)
    names = [t.name for t in table.timings]
    values = [t.gflops for t in table.timings]
    bars = ax.barh(names, values, color="tab:blue")
    # The labels sit on a white box above the peak line, which would otherwise cross them.
    ax.bar_label(bars, labels=[f"{v:.3g} ({100 * v / peak_gflops:.0f}% of peak)" for v in values],
                 padding=3, fontsize=8, zorder=3,
                 bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
    ax.axvline(peak_gflops, color="tab:red", ls="--", label="measured BLAS peak", zorder=1)
    ax.set_xscale("log")
    figures.plain_log_ticks(ax.xaxis)
    ax.set_xlabel("GFLOP/s (log scale)")
    ax.invert_yaxis()
    ax.margins(x=0.4)
    ax.legend(fontsize=8, loc="upper right")
    return ax


#: The variants the lesson's widget times.
EXPLORE_VARIANTS = ("ikj", "blocked", "parallel", "packed", "blas")


def explore(n: int, block: int, n_threads: int, *, repeat: int = 3, seed: int = 0) -> dict:
    """The lesson's widget: time ``EXPLORE_VARIANTS`` on n × n matrices with this block size,
    numba's threads and BLAS's threads both set to ``n_threads``. Returns {variant: Timing}.

    Timed like the lesson's table (``MIN_SAMPLE_TIME`` per sample, compiled variants only once
    BLAS's threads have stopped spinning)."""
    from threadpoolctl import threadpool_limits

    from mlpar.core import threads

    n = validation.positive_int("n", n, maximum=4096)
    block = validation.positive_int("block", block, maximum=4096)
    n_threads = validation.positive_int("n_threads", n_threads, maximum=threads.max_threads())
    a, b = random_matrices(n, seed=seed)
    with threads.using_threads(n_threads), threadpool_limits(limits=n_threads, user_api="blas"):
        return {name: _time(name, a, b, block, name, repeat)
                for name in EXPLORE_VARIANTS}

