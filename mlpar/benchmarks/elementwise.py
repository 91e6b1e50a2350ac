"""Elementwise product variants against numpy ``multiply(out=)`` and the measured memory roof.

Bytes are counted by one rule for every variant (``mlpar.cpu.stream``): reads once, writes
twice (write-allocate), so the product moves 32 bytes per element whether numpy or numba runs
it; the memory roof is the best STREAM copy/triad rate counted the same way.

Targets on a 2-core machine: best variant >= 0.9x numpy out=; Python loop / best >= 100x;
no variant above the memory roof; the compute-bound Horner kernel >= 1.7x faster on all
threads than on one, the memory-bound product's gain at most 0.8 of Horner's. The arrays span
4 last-level caches where the memory and time budgets allow (``stream.plan_beyond_cache``);
the report says when they could not.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import timing, validation
from mlpar.cpu import elementwise as ew
from mlpar.cpu import stream

#: The interpreter loop is timed on a slice this long; rates are compared per element.
LOOP_LENGTH = 1 << 16


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    # Arrays far past the last-level cache (4× it for the three together), else the
    # "memory-bound" product runs from cache and scales like compute-bound code.
    plan = stream.plan_beyond_cache(3)
    n = plan.n
    x, y = ew.random_vectors(n, seed=0)
    out = np.empty_like(x)
    moved = ew.PRODUCT_BYTES * n
    roof = stream.memory_roof(n=n, repeat=3 if quick else 5)
    xs, ys = x[:LOOP_LENGTH].copy(), y[:LOOP_LENGTH].copy()
    loop = timing.measure(ew.product_loop, xs, ys, name="python loop", repeat=3,
                          nbytes=ew.PRODUCT_BYTES * LOOP_LENGTH, flops=LOOP_LENGTH)
    cases = {
        "numpy out=": lambda: np.multiply(x, y, out=out),
        "numpy broadcast": lambda: x * y,
        "numba scalar": lambda: ew.product_scalar(x, y, out),
        "numba simd": lambda: ew.product_simd(x, y, out),
        "numba prange": lambda: ew.product_parallel(x, y, out),
    }
    repeat = 3 if quick else 7
    ts = {name: timing.measure(f, name=name, nbytes=moved, flops=n, repeat=repeat)
          for name, f in cases.items()}
    per_element = {name: t.best / n for name, t in ts.items()}
    per_element["python loop"] = loop.best / LOOP_LENGTH
    best = min(ts, key=lambda k: per_element[k])

    scaling = ew.measure_thread_scaling(x, y, repeat=repeat)
    top = max(k for _, k in scaling)
    return {
        "n": n,
        "plan": str(plan),
        "bytes_per_element": ew.PRODUCT_BYTES,
        "memory_roof_gbps": roof.gbps,
        "memory_roof_rates": {f"{name} {k}t": v for (name, k), v in roof.rates.items()},
        # the loop's time is its measured per-element time scaled to n (see report)
        "seconds": {k: v * n for k, v in per_element.items()},
        "gbps": {k: t.gbps for k, t in ts.items()} | {"python loop": loop.gbps},
        "ratio_to_numpy_out": {k: per_element["numpy out="] / v for k, v in per_element.items()},
        "share_of_memory_roof": {k: t.gbps / roof.gbps for k, t in ts.items()},
        "best_variant": best,
        "python_loop_over_best": per_element["python loop"] / per_element[best],
        "threads_max": top,
        "horner_speedup": scaling["horner", 1].best / scaling["horner", top].best,
        "product_speedup": scaling["product", 1].best / scaling["product", top].best,
        "horner_gflops": {str(k): scaling["horner", k].gflops for k in (1, top)},
    }


def report(f: dict) -> str:
    rates = ", ".join(f"{k} {v:.1f}" for k, v in f["memory_roof_rates"].items())
    lines = [f"n = {f['n']:,} float64 per array; {f['bytes_per_element']} bytes counted per "
             "element (reads once, writes twice: write-allocate counted)",
             f"arrays: {f['plan']}",
             f"memory roof {f['memory_roof_gbps']:.1f} GB/s = best STREAM rate, same count "
             f"({rates})",
             f"{'variant':<18}{'time':>11}{'GB/s':>8}{'x numpy out=':>14}{'of roof':>10}"]
    for name, seconds in f["seconds"].items():
        share = f["share_of_memory_roof"].get(name)
        lines.append(f"{name:<18}{timing.format_seconds(seconds):>11}{f['gbps'][name]:>8.2f}"
                     f"{f['ratio_to_numpy_out'][name]:>14.3f}" + (f"{share:>10.0%}" if share else ""))
    lines.append(f"best variant: {f['best_variant']} "
                 f"({f['ratio_to_numpy_out'][f['best_variant']]:.2f}x numpy out=; target >= 0.9x)")
    lines.append(f"python loop / best: {f['python_loop_over_best']:.0f}x (target >= 100x; "
                 f"loop timed on {LOOP_LENGTH:,} elements, compared per element)")
    lines.append(f"1 -> {f['threads_max']} threads: horner (compute-bound) "
                 f"{f['horner_speedup']:.2f}x (target >= 1.7x), product (memory-bound) "
                 f"{f['product_speedup']:.2f}x = {f['product_speedup'] / f['horner_speedup']:.2f}"
                 " of Horner's (target <= 0.8)")
    return "\n".join(lines)
