"""Lesson 01's claims: compiled code beats the interpreter by far; threads help compute-bound
work more than memory-bound work; the best compiled product runs at the memory roof.

The memory-bound claims need arrays far larger than the last-level cache; where the memory
or time budget cannot hold such arrays (``stream.plan_beyond_cache``), they read "n/a".

Each function measures, then returns a ``Claim`` (✓/✗, the figure, the threshold, and on ✗
the likely cause measured on this machine). The lesson calls the same functions.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import claims, timing, validation
from mlpar.cpu import elementwise as ew
from mlpar.cpu import stream

#: Length of the arrays in the quick claims (at least): the product must still stream from memory.
QUICK_LENGTH = 1 << 23
#: The memory-bound product's thread speedup may be at most this share of horner's.
SPEEDUP_SHARE = 0.8
#: ... where one thread's STREAM triad reaches at least this share of the all-thread triad,
#: and horner did gain at least this much from the threads in the same rounds. Derived, not
#: chosen: where the claim applies the memory roof rises at most 1 / ONE_THREAD_SHARE, so a
#: product that follows its roof gains at most that, and against any horner gain of at least
#: HORNER_GAIN its ratio is then at most SPEEDUP_SHARE: the claim can only fail on a product
#: that gained more than its roof allows (or a disturbed round), never on one that followed it.
ONE_THREAD_SHARE = 0.8
HORNER_GAIN = 1 / (ONE_THREAD_SHARE * SPEEDUP_SHARE)  # 1.5625


def memory_precondition() -> str:
    """Why lesson 01's memory-bound claims do not apply here, or "": arrays that span
    ``stream.CACHE_MULTIPLE`` last-level caches must fit the memory and time budgets."""
    return (claims.precondition(llc_multiple_fits=stream.CACHE_MULTIPLE)
            or stream.plan_beyond_cache(3).shortfall)


def _scaling_arrays(quick: bool):
    quick = validation.flag("quick", quick)
    plan = stream.plan_beyond_cache(3)
    n = max(QUICK_LENGTH, plan.n) if quick and plan.limited_by == "cache" else plan.n
    return ew.random_vectors(n, seed=0)


def numpy_beats_the_python_loop(quick: bool = False, *, n: int | None = None):
    """numpy's broadcast product is at least 100× faster than the Python loop over elements.

    ``n``: the length to measure both on (default 100 000, 20 000 quick); the statement
    prints it, since the ratio depends on whether the arrays sit in cache.
    """
    quick = validation.flag("quick", quick)
    n = (20_000 if quick else 100_000) if n is None else validation.positive_int("n", n)
    x, y = ew.random_vectors(n, seed=0)
    loop = timing.measure(ew.product_loop, x, y, repeat=3)
    vector = timing.measure(ew.product_broadcast, x, y, repeat=7)
    return claims.check("01", f"numpy's broadcast product vs the Python loop, n = {n:,}",
                        loop.best / vector.best, at_least=100, unit="×",
                        cause="numpy may be running on a slow or emulated CPU")


def _top(scaling) -> int:
    return max(k for _, k in scaling)


def _checked_scaling(scaling):
    """``scaling`` as ``measure_thread_scaling`` returns it (a dict), or None."""
    if scaling is not None and not isinstance(scaling, dict):
        raise TypeError(f"scaling: expected the dict measure_thread_scaling returns, got "
                        f"{type(scaling).__name__}")
    return scaling


def threads_speed_up_compute_bound_work(quick: bool = False, *, scaling=None):
    """horner (512 flops per 24 bytes) runs at least 1.7× faster on 2+ threads than on one."""
    quick = validation.flag("quick", quick)
    scaling = _checked_scaling(scaling)
    reason = claims.precondition(cores=2)
    if scaling is None and not reason:
        scaling = ew.measure_thread_scaling(*_scaling_arrays(quick), repeat=3 if quick else 5)
    top = _top(scaling) if scaling else 2
    if not reason and top < 2:
        reason = "numba may use only one thread here"
    speedup = None if reason else scaling["horner", 1].best / scaling["horner", top].best
    return claims.check("01", f"compute-bound horner, 1 -> {top} threads", speedup,
                        at_least=1.7, unit="×", not_applicable=reason,
                        cause="the other cores were busy with other programs while this ran")


def _gain(scaling, kernel: str, top: int) -> float:
    return scaling[kernel, 1].best / scaling[kernel, top].best


def _round_ratios(scaling, top: int) -> list[float]:
    """product's speedup / horner's in each interleaved round (``measure_thread_scaling``
    keeps one sample per round and cell, in order); [] when the rounds cannot be matched."""
    cells = [scaling.get((k, t)) for k in ("product", "horner") for t in (1, top)]
    if any(c is None for c in cells) or len({len(c.times) for c in cells}) != 1:
        return []
    p1, pk, h1, hk = (c.times for c in cells)
    return [(a / b) / (c / d) for a, b, c, d in zip(p1, pk, h1, hk, strict=True)]


def memory_bound_work_gains_less(quick: bool = False, *, scaling=None):
    """Where one thread already gets most of the memory roof, the memory-bound product gains
    from threads at most ``SPEEDUP_SHARE`` (80%) of what compute-bound horner gains.

    The precondition is measured in the same rounds: one thread's STREAM triad must reach at
    least ``ONE_THREAD_SHARE`` of the all-thread triad. Where it does not (one core streams
    far below what two reach, as on many virtual machines and servers), a second thread
    raises the memory roof itself, the product rises with it like horner, and the claim reads
    n/a with that measured reason: the roofline's point, that a memory-bound kernel follows its
    roof, still holds. It reads n/a as well when horner itself gained less than ``HORNER_GAIN``
    (a busy machine): without a compute-bound gain there is no contrast to judge. The printed
    line gives the spread of the ratio over the rounds.
    Does not apply where the arrays cannot exceed the cache (they would scale like compute).
    """
    quick = validation.flag("quick", quick)
    scaling = _checked_scaling(scaling)
    reason = claims.precondition(cores=2) or memory_precondition()
    if scaling is None and not reason:
        scaling = ew.measure_thread_scaling(*_scaling_arrays(quick), repeat=3 if quick else 5)
    top = _top(scaling) if scaling else 2
    if not reason and top < 2:
        reason = "numba may use only one thread here"
    if not reason and ("triad", 1) in scaling and ("triad", top) in scaling:
        share = scaling["triad", top].best / scaling["triad", 1].best  # one thread's share
        if share < ONE_THREAD_SHARE:
            reason = (f"one thread streams only {share:.0%} of the {top}-thread memory roof here "
                      f"(STREAM triad, needs >= {ONE_THREAD_SHARE:.0%}): the memory roof itself "
                      f"rises {1 / share:.2f}× with threads, so the memory-bound product gains "
                      "like horner; it follows its roof")
    if not reason and _gain(scaling, "horner", top) < HORNER_GAIN:
        reason = (f"horner gained only {_gain(scaling, 'horner', top):.2f}× from {top} threads in "
                  f"this run (the contrast needs >= {HORNER_GAIN:.2f}×: other programs held the "
                  "cores), so there is no compute-bound gain to compare the product's with")
    ratio, statement = None, f"product's thread speedup / horner's, 1 -> {top} threads"
    if not reason:
        ratio = _gain(scaling, "product", top) / _gain(scaling, "horner", top)
        rounds = _round_ratios(scaling, top)
        if len(rounds) > 1:
            statement += (f" (best of {len(rounds)} interleaved rounds; single rounds "
                          f"{min(rounds):.2f}-{max(rounds):.2f})")
    return claims.check("01", statement, ratio, at_most=SPEEDUP_SHARE, not_applicable=reason,
                        cause="horner was slowed by other programs while this ran, or the "
                              "product's one-thread run was (it then gains more than memory "
                              "allows)")


def compiled_product_reaches_the_memory_roof(quick: bool = False, *, arrays=None):
    """The parallel compiled product reaches at least 80% of the measured memory roof.

    The product and STREAM's triad (the same traffic: two reads, one write) are measured in
    rounds, one after the other, so that another program's load falls on both alike; the
    claim is the median over rounds of the product's share of that round's roof (a busy
    moment spoils one round, not the verdict), in as many rounds as it takes to tell the
    median from 80% (``claims.measure_rounds``).
    ``arrays``: (x, y, out) to measure on, instead of new ones (a lesson passes its own, so
    that its memory holds one set, not two); ``out`` is overwritten.
    """
    quick = validation.flag("quick", quick)
    reason = memory_precondition()
    if reason:
        return claims.check("01", "parallel product's share of the memory roof", None,
                            at_least=80, unit="%", not_applicable=reason)
    if arrays is None:
        x, y = _scaling_arrays(quick)
        out = np.empty_like(x)
    else:
        x, y, out = stream.three_arrays("arrays", arrays, written=2)
    n = x.shape[0]

    turn = []

    def product() -> float:
        return timing.measure(ew.product_parallel, x, y, out, repeat=3,
                              nbytes=ew.PRODUCT_BYTES * n).gbps

    def roof() -> float:
        return stream.memory_roof(repeat=3, arrays=(out, x, y)).gbps

    def one_round() -> float:  # the product and the roof back to back, in turn first
        turn.append(None)
        if len(turn) % 2:
            gbps = product()
            return 100 * gbps / roof()
        top = roof()
        return 100 * product() / top

    rounds = claims.measure_rounds(one_round, at_least=80, max_rounds=9 if quick else 25,
                                   budget_s=10 if quick else 20)
    return claims.check_rounds("01", "parallel product's share of the memory roof", rounds,
                               unit="%",
                               cause="another program was using the memory bus while this ran")


CLAIMS = (numpy_beats_the_python_loop, threads_speed_up_compute_bound_work,
          memory_bound_work_gains_less, compiled_product_reaches_the_memory_roof)

