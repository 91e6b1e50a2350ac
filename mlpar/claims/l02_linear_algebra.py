"""Lesson 02's claims: loop order and blocking matter, packing gets close to BLAS, BLAS's
own threads speed it up. Each function measures and returns a ``Claim`` (✓/✗ and why not).
"""

from __future__ import annotations

import math

from mlpar.core import claims, validation
from mlpar.cpu import matmul as mm
from mlpar.cpu import stream

#: Rows of A in the blocking measurement: few, so B far past the cache still takes little time.
BLOCKING_ROWS = 32


def past_cache_size() -> int:
    """The smallest power of two m whose m × m float64 matrix spans 4 last-level caches."""
    needed = stream.CACHE_MULTIPLE * stream.last_level_cache() / stream.WORD
    return 1 << math.ceil(math.log2(math.sqrt(needed)))


def loop_order_matters(quick: bool = False):
    """ikj (unit stride) is at least 3× faster than ijk (B read down its columns)."""
    quick = validation.flag("quick", quick)
    n = 384 if quick else 512
    ijk = mm.measure_variant("ijk", n, repeat=2 if quick else 3)
    ikj = mm.measure_variant("ikj", n, repeat=2 if quick else 3)
    return claims.check("02", f"ikj vs ijk loop order, n = {n}", ijk.best / ikj.best,
                        at_least=3, unit="×",
                        cause="a very large cache or hardware prefetcher hides the strided reads")


def blocking_wins_past_the_cache(quick: bool = False, *, sweep=None):
    """With B four times the last-level cache, blocked(64) is at least 1.3× faster than ikj.

    ``sweep``: a ``BlockingSweep`` already measured whose largest B is that large (reused).
    """
    quick = validation.flag("quick", quick)
    m = past_cache_size()
    if sweep is None or sweep.sizes[-1] < m:
        sweep = mm.measure_blocking((m,), rows=BLOCKING_ROWS, repeat=2 if quick else 3)
    m = sweep.sizes[-1]
    return claims.check("02", f"blocked vs ikj, one thread, B {8 * m * m >> 20} MiB",
                        sweep.gain(), at_least=1.3, unit="×",
                        cause="other programs were using the memory bus, or this machine's "
                              "hardware prefetcher streams B fast enough for ikj")


def packed_reaches_a_share_of_the_peak(quick: bool = False, *, packed_gflops=None,
                                       peak_gflops=None, n=None):
    """The packed numba kernel (all threads) reaches at least 30% of the measured BLAS peak.

    ``packed_gflops``, ``peak_gflops``, ``n``: figures already measured (reused).
    """
    quick = validation.flag("quick", quick)
    if packed_gflops is None or peak_gflops is None:
        n = 384 if quick else 512
        packed_gflops = mm.measure_variant("packed", n, repeat=3).gflops
        blas = mm.measure_variant("blas", n, repeat=3).gflops
        peak_gflops = max(blas, mm.blas_peak(512 if quick else mm.PEAK_SIZE, repeat=3))
    return claims.check("02", f"packed share of the BLAS peak, n = {n}",
                        100 * packed_gflops / peak_gflops, at_least=30, unit="%",
                        cause="numba's threads and BLAS's threads did not get the same cores, "
                              "or the BLAS here is exceptionally fast")


def blas_threads_speed_up_matmul(quick: bool = False, *, table=None):
    """numpy's ``a @ b`` is at least 1.7× faster on all BLAS threads than on one.

    ``table``: a ``measure_blas_threads`` table already measured, one thread first (reused).
    """
    quick = validation.flag("quick", quick)
    top = mm.blas_threads()
    if table is None:
        table = mm.measure_blas_threads(512 if quick else mm.PEAK_SIZE, (1, top), repeat=3)
    cause = ("this BLAS uses a single thread" if top < 2 else
             "the other cores were busy with other programs while this ran")
    speedup = table.speedup(table.timings[-1].name) if top >= 2 else None  # nothing to measure
    return claims.check("02", f"BLAS a @ b, 1 -> {top} threads", speedup, at_least=1.7,
                        unit="×", cause=cause)


CLAIMS = (loop_order_matters, blocking_wins_past_the_cache, packed_reaches_a_share_of_the_peak,
          blas_threads_speed_up_matmul)
