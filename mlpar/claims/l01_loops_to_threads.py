"""Lesson 01's claims: compiled code beats the interpreter by far; threads help compute-bound
work and not memory-bound work; the best compiled product runs at the memory roof.

Each function measures, then returns a ``Claim`` (✓/✗, the figure, the threshold, and on ✗
the likely cause measured on this machine). The lesson calls the same functions.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import claims, timing, validation
from mlpar.cpu import elementwise as ew
from mlpar.cpu import stream

#: Length of the arrays in the quick claims: the product must still stream from memory.
QUICK_LENGTH = 1 << 23


def _scaling_arrays(quick: bool):
    quick = validation.flag("quick", quick)
    n = max(QUICK_LENGTH, stream.beyond_cache_length(3)) if quick else stream.beyond_cache_length(3)
    return ew.random_vectors(n, seed=0)


def numpy_beats_the_python_loop(quick: bool = False):
    """numpy's broadcast product is at least 100× faster than the Python loop over elements."""
    quick = validation.flag("quick", quick)
    x, y = ew.random_vectors(20_000 if quick else 100_000, seed=0)
    loop = timing.measure(ew.product_loop, x, y, repeat=3)
    vector = timing.measure(ew.product_broadcast, x, y, repeat=7)
    return claims.check("01", "numpy's broadcast product vs the Python loop", loop.best / vector.best,
                        at_least=100, unit="×",
                        cause="numpy may be running on a slow or emulated CPU")


def threads_speed_up_compute_bound_work(quick: bool = False, *, scaling=None):
    """horner (64 flops per 24 bytes) runs at least 1.7× faster on 2+ threads than on one."""
    quick = validation.flag("quick", quick)
    scaling = scaling or ew.measure_thread_scaling(*_scaling_arrays(quick), repeat=3 if quick else 5)
    top = max(k for _, k in scaling)
    # With one thread there is no speedup to measure: the claim is neither held nor broken.
    speedup = scaling["horner", 1].best / scaling["horner", top].best if top >= 2 else None
    cause = ("numba may use only one thread here" if top < 2 else
             "the other cores were busy with other programs while this ran")
    return claims.check("01", f"compute-bound horner, 1 -> {top} threads", speedup,
                        at_least=1.7, unit="×", cause=cause)


def memory_bound_work_gains_less(quick: bool = False, *, scaling=None):
    """The memory-bound product gains at most 1.4× from all threads (horner's gain is above).

    Fails where one core cannot saturate memory by itself (common on large servers); the
    cause printed then gives the share of the memory roof that one thread reached.
    """
    quick = validation.flag("quick", quick)
    scaling = scaling or ew.measure_thread_scaling(*_scaling_arrays(quick),
                                                   repeat=3 if quick else 5)
    top = max(k for _, k in scaling)
    speedup = scaling["product", 1].best / scaling["product", top].best if top >= 2 else None
    cause = "numba may use only one thread here"
    if top >= 2 and speedup > 1.4:  # measure the roof only to explain a failure
        n = scaling["product", 1].nbytes // ew.PRODUCT_BYTES
        roof = stream.memory_roof(n=n, repeat=3).gbps
        cause = (f"one thread reached only {scaling['product', 1].gbps / roof:.0%} of the "
                 f"memory roof ({roof:.1f} GB/s), so more cores still add bandwidth here")
    return claims.check("01", f"memory-bound product, 1 -> {top} threads", speedup,
                        at_most=1.4, unit="×", cause=cause)


def compiled_product_reaches_the_memory_roof(quick: bool = False, *, arrays=None):
    """The parallel compiled product reaches at least 80% of the measured memory roof.

    The product and STREAM's triad (the same traffic: two reads, one write) are measured in
    turns, so that another program's load falls on both alike; each keeps its best rate.
    ``arrays``: (x, y, out) to measure on, instead of new ones (a lesson passes its own, so
    that its memory holds one set, not two); ``out`` is overwritten.
    """
    quick = validation.flag("quick", quick)
    if arrays is None:
        x, y = _scaling_arrays(quick)
        out = np.empty_like(x)
    else:
        x, y, out = stream.three_arrays("arrays", arrays, written=2)
    n = x.shape[0]
    product, roof = 0.0, 0.0
    for _ in range(2 if quick else 3):
        t = timing.measure(ew.product_parallel, x, y, out, repeat=3, nbytes=ew.PRODUCT_BYTES * n)
        product = max(product, t.gbps)
        roof = max(roof, stream.memory_roof(repeat=3, arrays=(out, x, y)).gbps)
    return claims.check("01", "parallel product's share of the memory roof", 100 * product / roof,
                        at_least=80, unit="%",
                        cause="another program was using the memory bus while this ran")


CLAIMS = (numpy_beats_the_python_loop, threads_speed_up_compute_bound_work,
          memory_bound_work_gains_less, compiled_product_reaches_the_memory_roof)

