"""The roofline model: a kernel runs no faster than min(peak compute, bandwidth × intensity).

Arithmetic intensity I = flops / bytes moved. Below the ridge point I* = peak / bandwidth a
kernel is memory-bound: more threads or wider SIMD cannot beat the memory system. Above it,
compute-bound: cores and vector units are what count (Williams, Waterman & Patterson, 2009).

Both roofs are *measured* on this machine, never taken from a data sheet, and neither is the
rate of a kernel placed under them:

* memory roof: the best STREAM copy/triad rate, bytes counted with write-allocate
  (``mlpar.cpu.stream``, which states the counting rule every kernel here follows);
* compute roof: BLAS's dgemm on a large product (``mlpar.cpu.matmul.blas_peak``), on all
  threads and on one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlpar.core import validation
from mlpar.cpu import figures

#: Figure size of a roofline plot.
FIGSIZE = (6.5, 3.8)


def attainable(intensity, peak_gflops: float, bandwidth_gbps: float):
    """The roofline: min(peak, bandwidth × intensity) in GFLOP/s, elementwise."""
    validation.positive("peak_gflops", peak_gflops)
    validation.positive("bandwidth_gbps", bandwidth_gbps)
    if isinstance(intensity, np.ndarray):
        validation.array("intensity", intensity, numeric=True)  # refuses huge broadcast views
    elif intensity is None or isinstance(intensity, (str, bytes)):
        raise TypeError(f"intensity: expected flops per byte (a number or an array), got "
                        f"{type(intensity).__name__}")
    intensity = np.asarray(intensity, dtype=float)
    if intensity.size == 0 or not np.all(np.isfinite(intensity)):
        raise ValueError("intensity: expected finite flops per byte, got an empty or NaN/inf value")
    if np.any(intensity <= 0):
        raise ValueError("intensity: expected flops per byte > 0, got a value <= 0")
    return np.minimum(peak_gflops, bandwidth_gbps * intensity)


@dataclass(frozen=True)
class Roofs:
    """The two measured roofs of this machine, and the one-core compute roof."""

    bandwidth_gbps: float       # best STREAM rate, write-allocate counted
    peak_gflops: float          # BLAS dgemm, the best of one and all BLAS threads
    peak_one_core_gflops: float  # BLAS dgemm, one thread

    @property
    def ridge(self) -> float:
        """Intensity (flop/byte) where the two roofs meet."""
        return self.peak_gflops / self.bandwidth_gbps

    def __repr__(self) -> str:
        return (f"Roofs(memory {self.bandwidth_gbps:.1f} GB/s (STREAM, write-allocate counted), "
                f"compute {self.peak_gflops:.1f} GFLOP/s (BLAS dgemm, best of 1 and all threads; "
                f"{self.peak_one_core_gflops:.1f} on one), ridge {self.ridge:.2g} flop/B)")


def measure_roofs(*, quick: bool = False, memory_gbps: float | None = None) -> Roofs:
    """Measure both roofs now: STREAM copy and triad, and dgemm on one and on all threads.

    ``memory_gbps``: a memory roof already measured with ``stream.memory_roof`` (skips that).
    """
    from mlpar.cpu import matmul, stream

    quick = validation.flag("quick", quick)
    n, repeat = (512, 2) if quick else (matmul.PEAK_SIZE, 3)
    if memory_gbps is None:
        memory_gbps = stream.memory_roof(repeat=3 if quick else 5).gbps
    memory_gbps = validation.positive("memory_gbps", memory_gbps)
    one = matmul.blas_peak(n, 1, repeat=repeat)
    # On a busy machine all threads can be slower than one; the roof is the best rate seen.
    return Roofs(memory_gbps, max(one, matmul.blas_peak(n, repeat=repeat)), one)


def plot_roofline(
    peak_gflops: float,
    bandwidth_gbps: float,
    points: Sequence[tuple[str, float, float]] = (),
    ax=None,
    *,
    annotate: bool = False,
    extra_peaks: Sequence[tuple[str, float]] = (),
    extra_roofs: Sequence[tuple[str, float, float]] = (),
):
    """Draw both roofs and the measured ``points`` as (name, flops/byte, GFLOP/s).

    ``annotate=True`` writes each point's name beside it instead of in the legend;
    ``extra_peaks`` adds dashed horizontal roofs, e.g. ``[("one core", 40.0)]``;
    ``extra_roofs`` adds whole dashed rooflines ``(name, peak GFLOP/s, bandwidth GB/s)``,
    e.g. the one-thread roofs that one-thread points belong under.
    """
    import matplotlib.pyplot as plt

    validation.positive("peak_gflops", peak_gflops)
    validation.positive("bandwidth_gbps", bandwidth_gbps)
    for name, intensity, _ in points:
        validation.positive(f"intensity of {name}", intensity)
    if ax is None:
        _, ax = plt.subplots(figsize=FIGSIZE)
    ridge = peak_gflops / bandwidth_gbps
    lo = min([ridge / 100] + [p[1] / 3 for p in points])
    hi = max([ridge * 100] + [p[1] * 3 for p in points])
    x = np.geomspace(lo, hi, 200)
    ax.loglog(x, attainable(x, peak_gflops, bandwidth_gbps), color="black", lw=2, label="roofline")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.2g} flop/B", (ridge, peak_gflops), textcoords="offset points",
                xytext=(4, -14), fontsize=8, color="grey")
    for name, peak in extra_peaks:
        ax.loglog(x, attainable(x, peak, bandwidth_gbps), color="grey", ls="--", lw=1,
                  label=f"roofline, {name}")
    for name, peak, bandwidth in extra_roofs:
        validation.positive(f"peak of {name}", peak)
        validation.positive(f"bandwidth of {name}", bandwidth)
        ax.loglog(x, attainable(x, peak, bandwidth), color="grey", ls="--", lw=1,
                  label=f"roofline, {name}")
    for i, (name, intensity, gflops) in enumerate(points):
        if annotate:
            ax.loglog([intensity], [gflops], "o", color=f"C{i}")
            # Of the points at one intensity, the highest is labelled above, the others below,
            # so that two labels never sit on one point.
            higher = any(abs(q[1] / intensity - 1) < 0.01 and q[2] > gflops for q in points)
            ax.annotate(name, (intensity, gflops), textcoords="offset points",
                        xytext=(7, -12 if higher else 5), fontsize=8, color=f"C{i}")
        else:
            ax.loglog([intensity], [gflops], "o", label=name)
    figures.plain_log_ticks(ax.xaxis)
    figures.plain_log_ticks(ax.yaxis)
    ax.set_xlabel("arithmetic intensity [flop/byte] (log scale)")
    ax.set_ylabel("GFLOP/s (log scale)")
    ax.legend(fontsize=8, loc="lower right")
    return ax


def above_roof(points: Sequence[tuple[str, float, float]], peak_gflops: float,
               bandwidth_gbps: float, *, tolerance: float = 0.0) -> list[str]:
    """One sentence per point above its roof by more than ``tolerance`` (a share), or none.

    A kernel cannot beat the roofs of the machine; a point above them means the roof or the
    point was measured at a different moment (another program's load), or counted wrongly.
    """
    tolerance = validation.number("tolerance", tolerance, low=0.0, high=1.0)
    found = []
    for name, intensity, gflops in points:
        roof = float(attainable(intensity, peak_gflops, bandwidth_gbps))
        if gflops > roof * (1 + tolerance):
            found.append(f"{name} lies {gflops / roof - 1:.0%} above its roof ({gflops:.3g} > "
                         f"{roof:.3g} GFLOP/s)")
    return found
