"""Elementwise product variants against numpy ``multiply(out=)`` and the copy bandwidth.

Targets on a 2-core machine: best variant >= 0.9x numpy out=; Python loop / best >= 100x;
the compute-bound Horner kernel >= 1.7x faster on all threads than on one.
"""

from __future__ import annotations

import numpy as np

from .. import elementwise as ew
from .. import roofline, threads, timing


def run(quick: bool = False) -> dict:
    n = 1 << (20 if quick else 22)
    x, y = ew.random_vectors(n, seed=0)
    out = np.empty_like(x)
    moved = 3 * x.nbytes
    bandwidth = roofline.copy_bandwidth(megabytes=32 if quick else 128)
    loop_n = 1 << 16  # the interpreter loop is timed on a slice; rates are per element
    xs, ys = x[:loop_n].copy(), y[:loop_n].copy()
    loop = timing.measure(ew.product_loop, xs, ys, name="python loop", repeat=3,
                          nbytes=3 * xs.nbytes, flops=loop_n)
    cases = {
        "numpy out=": lambda: np.multiply(x, y, out=out),
        "numpy broadcast": lambda: x * y,
        "numba scalar": lambda: ew.product_scalar(x, y, out),
        "numba simd": lambda: ew.product_simd(x, y, out),
        "numba prange": lambda: ew.product_parallel(x, y, out),
    }
    ts = {name: timing.measure(f, name=name, nbytes=moved, flops=n) for name, f in cases.items()}
    per_element = {name: t.best / n for name, t in ts.items()}
    per_element["python loop"] = loop.best / loop_n
    best = min((k for k in ts), key=lambda k: per_element[k])

    coefficients = np.linspace(1.0, 0.5, 33)  # degree 32: 64 flops per 16 bytes
    hx = x[: n // 4].copy()
    hout = np.empty_like(hx)
    horner = {}
    for k in sorted({1, threads.max_threads()}):
        with threads.using_threads(k):
            horner[k] = timing.measure(ew.horner, hx, coefficients, hout, name=f"horner {k}t").best
    return {
        "n": n,
        "copy_bandwidth_gbps": bandwidth,
        # the loop's time is its measured per-element time scaled to n (see report)
        "seconds": {k: v * n for k, v in per_element.items()},
        "gbps": {k: t.gbps for k, t in ts.items()} | {"python loop": loop.gbps},
        "ratio_to_numpy_out": {k: per_element["numpy out="] / v for k, v in per_element.items()},
        "share_of_copy_bandwidth": {k: t.gbps / bandwidth for k, t in ts.items()},
        "best_variant": best,
        "python_loop_over_best": per_element["python loop"] / per_element[best],
        "horner_threads": {str(k): v for k, v in horner.items()},
        "horner_speedup": horner[1] / horner[max(horner)],
        "horner_threads_max": max(horner),
    }


def report(f: dict) -> str:
    lines = [f"n = {f['n']:,} float64; copy bandwidth {f['copy_bandwidth_gbps']:.1f} GB/s (same run)",
             f"{'variant':<18}{'time':>11}{'GB/s':>8}{'x numpy out=':>14}{'of copy bw':>12}"]
    for name, seconds in f["seconds"].items():
        share = f["share_of_copy_bandwidth"].get(name)
        lines.append(f"{name:<18}{timing.format_seconds(seconds):>11}{f['gbps'][name]:>8.2f}"
                     f"{f['ratio_to_numpy_out'][name]:>14.3f}" + (f"{share:>12.0%}" if share else ""))
    lines.append(f"best variant: {f['best_variant']} "
                 f"({f['ratio_to_numpy_out'][f['best_variant']]:.2f}x numpy out=; target >= 0.9x)")
    lines.append(f"python loop / best: {f['python_loop_over_best']:.0f}x (target >= 100x; "
                 "loop timed on 65,536 elements, compared per element)")
    lines.append(f"horner (compute-bound) 1 -> {f['horner_threads_max']} threads: "
                 f"{f['horner_speedup']:.2f}x (target >= 1.7x on 2 threads)")
    return "\n".join(lines)
