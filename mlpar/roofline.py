"""The roofline model: a kernel runs no faster than min(peak compute, bandwidth × intensity).

Arithmetic intensity I = flops / bytes moved. Below the ridge point I* = peak / bandwidth a
kernel is memory-bound: more threads or wider SIMD cannot beat the memory system. Above it,
compute-bound: cores and vector units are what count. Both roofs are *measured* on the machine
(``copy_bandwidth`` here; a compute-heavy kernel or BLAS for the peak), never taken from a
data sheet.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from . import threads, timing, validation  # noqa: F401  (threads: thread-safe layer)


@njit(parallel=True)
def _parallel_copy(dst, src):
    for i in prange(src.shape[0]):
        dst[i] = src[i]


def copy_bandwidth(megabytes: int = 128, repeat: int = 5, parallel: bool = False) -> float:
    """Sustained memory bandwidth in GB/s, from copying a ``megabytes`` array.

    ``parallel=False`` copies with numpy on one core; ``parallel=True`` splits the copy over
    all of numba's threads. On many machines one core cannot keep the memory system busy, so
    the two differ; the roofline's memory roof is the parallel figure. Counts 2 bytes moved per
    byte copied (one read, one write). The array should be much larger than the last-level
    cache, or the probe measures the cache instead.
    """
    megabytes = validation.positive_int("megabytes", megabytes)
    repeat = validation.positive_int("repeat", repeat)
    n = megabytes * (1 << 20) // 8
    src = np.ones(n)
    dst = np.empty_like(src)
    copy = _parallel_copy if parallel else np.copyto
    t = timing.measure(copy, dst, src, name="copy", repeat=repeat, nbytes=2 * src.nbytes)
    return t.gbps


def attainable(intensity, peak_gflops: float, bandwidth_gbps: float):
    """The roofline: min(peak, bandwidth × intensity) in GFLOP/s, elementwise."""
    validation.positive("peak_gflops", peak_gflops)
    validation.positive("bandwidth_gbps", bandwidth_gbps)
    intensity = np.asarray(intensity, dtype=float)
    if np.any(intensity <= 0):
        raise ValueError("intensity: expected flops per byte > 0, got a value <= 0")
    return np.minimum(peak_gflops, bandwidth_gbps * intensity)


def plot_roofline(
    peak_gflops: float,
    bandwidth_gbps: float,
    points: Sequence[tuple[str, float, float]] = (),
    ax=None,
):
    """Draw both roofs and the measured ``points`` as (name, flops/byte, GFLOP/s)."""
    import matplotlib.pyplot as plt

    validation.positive("peak_gflops", peak_gflops)
    validation.positive("bandwidth_gbps", bandwidth_gbps)
    for name, intensity, _ in points:
        validation.positive(f"intensity of {name}", intensity)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.6))
    ridge = peak_gflops / bandwidth_gbps
    lo = min([ridge / 100] + [p[1] / 3 for p in points])
    hi = max([ridge * 100] + [p[1] * 3 for p in points])
    x = np.geomspace(lo, hi, 200)
    ax.loglog(x, attainable(x, peak_gflops, bandwidth_gbps), color="black", lw=2, label="roofline")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.2g} flop/B", (ridge, peak_gflops), textcoords="offset points",
                xytext=(4, -14), fontsize=8, color="grey")
    for name, intensity, gflops in points:
        ax.loglog([intensity], [gflops], "o", label=name)
    ax.set_xlabel("arithmetic intensity [flop/byte]")
    ax.set_ylabel("GFLOP/s")
    ax.legend(fontsize=8, loc="lower right")
    return ax
