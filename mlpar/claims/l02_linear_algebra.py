"""Lesson 02's claims: loop order matters, a power-of-two stride adds cache-set conflicts,
blocking matters past the cache, packing gets close to BLAS, BLAS's own threads speed it up.
Each function measures and returns a ``Claim`` (✓/✗ and why not, or n/a and why).
"""

from __future__ import annotations

import numpy as np

from mlpar.core import claims, timing, validation
from mlpar.cpu import matmul as mm
from mlpar.cpu import stream

#: Rows of A in the blocking measurement: few, so B far past the cache still takes little time.
BLOCKING_ROWS = mm.BLOCKING_ROWS
#: The loop-order claim's size: not a power of two, so that cache-set conflicts (a separate
#: effect, ``conflict_misses_slow_ijk``) do not inflate the ratio.
LOOP_ORDER_N = 600
#: Sizes of the conflict-miss experiment: a power of two and its neighbours.
CONFLICT_SIZES = (511, 512, 513)


def past_cache_size() -> int:
    """The largest B side of the blocking sweep (``mm.plan_blocking``): the smallest power of
    two m whose m × m float64 matrix spans 4 last-level caches, unless a budget capped it."""
    return mm.plan_blocking().sizes[-1]


#: The chain experiment's keys in ``mm.CHAIN_LOOPS`` order: ijk, ijk on Bᵀ, the same with
#: fastmath, ikj.
CHAIN_KEYS = tuple(mm.CHAIN_LOOPS)


def _check_chain_rates(rates) -> None:
    if not isinstance(rates, dict) or not set(CHAIN_KEYS) <= set(rates):
        raise TypeError(f"rates: expected measure_chains's dict {{name: GFLOP/s}} with keys "
                        f"{CHAIN_KEYS}, got {type(rates).__name__}")


def loop_order_matters(quick: bool = False, *, rates=None):
    """ikj (unit stride, SIMD) is at least 3× faster than ijk (B read down its columns), at a
    size that is not a power of two.

    ``rates``: ``mm.measure_chains``'s ``{name: GFLOP/s}`` at ``LOOP_ORDER_N``, already
    measured (reused: the lesson times ijk and ikj once, for this claim and the chain claim).
    """
    quick = validation.flag("quick", quick)
    n = 384 if quick else LOOP_ORDER_N
    if rates is not None:
        _check_chain_rates(rates)
        n = LOOP_ORDER_N
        speedup = claims.ratio(rates[CHAIN_KEYS[3]], rates[CHAIN_KEYS[0]],
                               names=("ikj rate", "ijk rate"))
    else:
        ijk = mm.measure_variant("ijk", n, repeat=2 if quick else 3)
        ikj = mm.measure_variant("ikj", n, repeat=2 if quick else 3)
        speedup = ijk.best / ikj.best
    return claims.check("02", f"ikj vs ijk loop order, n = {n}", speedup,
                        at_least=3, unit="×",
                        cause="this core's adds have a short latency, or its compiler split "
                              "ijk's running total (see the chain claim)")




def ijk_is_bound_by_its_chain(quick: bool = False, *, rates=None):
    """ijk on Bᵀ (unit stride, one running total) speeds up at least 2× when ``fastmath``
    lets the compiler split the total into SIMD partial sums: at a size without conflict
    misses, the dot product's dependency chain, not B's stride, is what holds ijk back.

    ``rates``: ``mm.measure_chains``'s ``{name: GFLOP/s}``, already measured (reused).
    """
    quick = validation.flag("quick", quick)
    if rates is not None:
        _check_chain_rates(rates)
    n = 384 if quick else LOOP_ORDER_N
    if rates is None:
        rates = mm.measure_chains(n, repeat=2 if quick else 3)
    one_chain, many = rates[CHAIN_KEYS[1]], rates[CHAIN_KEYS[2]]
    return claims.check("02", "ijk on Bᵀ, fastmath / without (many chains vs one)",
                        claims.ratio(many, one_chain, names=("fastmath rate", "one-chain rate")),
                        at_least=2, unit="×",
                        cause="this compiler did not split the sum under fastmath, or the "
                              "loop waits for memory rather than for its adds")


def conflict_misses_slow_ijk(quick: bool = False, *, rates=None):
    """ijk at n = 512 runs at most 0.67 of its mean rate at n = 511 and 513 (cache-set conflicts).

    ``rates``: ``{n: GFLOP/s}`` for the three ``CONFLICT_SIZES`` already measured (reused).
    """
    quick = validation.flag("quick", quick)
    if rates is not None and (not isinstance(rates, dict)
                              or not set(CONFLICT_SIZES) <= set(rates)):
        raise TypeError(f"rates: expected a dict {{n: GFLOP/s}} for n = 511, 512 and 513, got "
                        f"{type(rates).__name__}")
    if rates is None:
        rates = mm.measure_conflicts(CONFLICT_SIZES, repeat=1 if quick else 3)
    ratio = claims.ratio(rates[512], (rates[511] + rates[513]) / 2,
                         names=("rates[512]", "rates[511] and rates[513]"))
    return claims.check("02", "ijk at n = 512 / mean of n = 511 and 513", ratio,
                        at_most=0.67, unit="",
                        cause="this cache's sets or associativity differ, or its prefetcher "
                              "hides the conflicts")


def blocking_wins_past_the_cache(quick: bool = False, *, sweep=None):
    """With B four times the last-level cache, blocked(64) is at least 1.3× faster than ikj.

    ``sweep``: a ``BlockingSweep`` already measured whose largest B is that large (reused).
    Does not apply where the memory or time budget cannot hold such a B (``mm.plan_blocking``).
    """
    quick = validation.flag("quick", quick)
    if sweep is not None and not isinstance(sweep, mm.BlockingSweep):
        raise TypeError(f"sweep: expected a BlockingSweep (mm.measure_blocking), got "
                        f"{type(sweep).__name__}")
    plan = mm.plan_blocking()
    reason = claims.precondition(llc_multiple_fits=stream.CACHE_MULTIPLE) or plan.shortfall
    m = plan.sizes[-1]
    if reason:
        return claims.check("02", f"blocked vs ikj, one thread, B {8 * m * m >> 20} MiB", None,
                            at_least=1.3, unit="×", not_applicable=reason)
    if sweep is None or sweep.sizes[-1] < m:
        sweep = mm.measure_blocking((m,), rows=plan.rows, repeat=2 if quick else 3)
    m = sweep.sizes[-1]
    return claims.check("02", f"blocked vs ikj, one thread, B {8 * m * m >> 20} MiB",
                        sweep.gain(), at_least=1.3, unit="×",
                        cause="other programs were using the memory bus, or this machine's "
                              "hardware prefetcher streams B fast enough for ikj")


def packed_reaches_a_share_of_the_peak(quick: bool = False, *, packed_gflops=None,
                                       peak_gflops=None, n=None):
    """The packed numba kernel (all threads) reaches at least 30% of the measured BLAS peak.

    ``packed_gflops``, ``peak_gflops``, ``n``: figures already measured (reused). Otherwise
    the packed kernel and BLAS are timed in rounds, one after the other, and the claim is the
    median over rounds of that round's share: numba's threads and BLAS's threads each need
    both cores, so a moment when another program holds one spoils a round, not the verdict.
    """
    quick = validation.flag("quick", quick)
    spread = ""
    if packed_gflops is None or peak_gflops is None:
        n = 400  # the lesson's size: not a power of two, so no conflict misses (section 2)
        shares = []
        for _ in range(3 if quick else 5):
            packed = mm.measure_variant("packed", n, repeat=3).gflops
            blas = mm.measure_variant("blas", n, repeat=3).gflops
            shares.append(100 * packed / max(blas, mm.blas_peak(512 if quick else mm.PEAK_SIZE,
                                                                repeat=3)))
        share = float(np.median(shares))
        spread = f" (median of {len(shares)} rounds: {min(shares):.0f}–{max(shares):.0f}%)"
    else:
        share = 100 * validation.positive("packed_gflops", packed_gflops) / validation.positive(
            "peak_gflops", peak_gflops)
    return claims.check("02", f"packed share of the BLAS peak, n = {n}{spread}", share,
                        at_least=30, unit="%",
                        cause="numba's threads and BLAS's threads did not get the same cores, "
                              "or the BLAS here is exceptionally fast")


#: BLAS on all threads must be at least this much faster than on one (2 cores give ~2×).
BLAS_SPEEDUP = 1.5


def blas_threads_speed_up_matmul(quick: bool = False, *, table=None):
    """numpy's ``a @ b`` is at least 1.5× faster on all BLAS threads than on one.

    ``table``: a ``measure_blas_threads`` table already measured, one thread first (reused).
    The threshold leaves room for noise: two free cores give close to 2×, and the samples are
    taken in interleaved rounds (``measure_blas_threads``), so a burst of load from another
    program slows one sample of each count; the printed line gives the single rounds' spread.
    """
    quick = validation.flag("quick", quick)
    if table is not None and not isinstance(table, timing.SpeedupTable):
        raise TypeError(f"table: expected the SpeedupTable measure_blas_threads returns, got "
                        f"{type(table).__name__}")
    top = mm.blas_threads()
    statement = f"BLAS a @ b, 1 -> {top} threads"
    reason = claims.precondition(cores=2)
    if reason:
        return claims.check("02", statement, None, at_least=BLAS_SPEEDUP, unit="×",
                            not_applicable=reason)
    if table is None:
        table = mm.measure_blas_threads(512 if quick else mm.PEAK_SIZE, (1, top),
                                        repeat=3 if quick else 5)
    cause = ("this BLAS uses a single thread" if top < 2 else
             "the other cores were busy with other programs while this ran")
    speedup = table.speedup(table.timings[-1].name) if top >= 2 else None  # nothing to measure
    one, every = table.timings[0].times, table.timings[-1].times
    if speedup is not None and len(one) == len(every) > 1:
        rounds = [a / b for a, b in zip(one, every, strict=True)]
        statement += (f" (best of {len(rounds)} interleaved rounds; single rounds "
                      f"{min(rounds):.2f}-{max(rounds):.2f}×)")
    return claims.check("02", statement, speedup, at_least=BLAS_SPEEDUP, unit="×", cause=cause)


CLAIMS = (loop_order_matters, ijk_is_bound_by_its_chain, conflict_misses_slow_ijk,
          blocking_wins_past_the_cache, packed_reaches_a_share_of_the_peak,
          blas_threads_speed_up_matmul)
