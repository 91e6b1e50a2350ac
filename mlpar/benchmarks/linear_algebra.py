"""Matrix multiply variants against the measured BLAS peak, BLAS threads, convolution threads.

    python -m mlpar.bench linear_algebra

Every variant in the table runs at the same size n (the interpreter's loop is reported apart,
as a rate at a tiny size). Targets on a 2-core machine: the best numba matmul within 5x of
BLAS at n=512; blocked >= 1.3x ikj once B is 4x the last-level cache; the numba convolution
layer >= 1.7x faster on 2 threads than on 1. BLAS at 1 vs all threads is reported as
measured (implicit parallelism), with no target.
"""

from __future__ import annotations

from mlpar.core import threads, timing, validation
from mlpar.cpu import convolution as cv
from mlpar.cpu import matmul as mm

NUMBA_VARIANTS = ("ijk", "ikj", "blocked", "parallel", "packed")


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    n = 256 if quick else 512
    python_n = 48 if quick else 96
    repeat = 3 if quick else 5
    block = mm.DEFAULT_BLOCK
    names = NUMBA_VARIANTS + ("blas",)
    table = mm.measure_variants(n, names, block=block, repeat=repeat)
    gflops = {v: t.gflops for v, t in zip(names, table.timings, strict=True)}
    python = mm.measure_variant("python", python_n, repeat=repeat).gflops
    plan = mm.plan_blocking()  # the largest B spans 4 caches unless a budget caps it
    sizes = plan.sizes[::-1][:3][::-1] if quick else plan.sizes
    sweep = mm.measure_blocking(sizes, rows=plan.rows, block=block, repeat=2 if quick else 3)
    # The peak is the best BLAS rate of this run: a large product, or the n-sized one if a
    # busy machine made the large one slower.
    peak = max(mm.blas_peak(512 if quick else 1024, repeat=repeat), gflops["blas"])
    best = max(NUMBA_VARIANTS, key=gflops.get)

    blas_counts = sorted({1, mm.blas_threads()})
    blas = mm.measure_blas_threads(n, blas_counts, repeat=repeat)

    layer = (4, 4, 48, 8, 3) if quick else (8, 8, 64, 16, 5)  # N, C, size, F, kernel
    images, filters = cv.random_layer(*layer, seed=0)
    counts = sorted({1, threads.max_threads()})
    conv = cv.measure_thread_speedup(images, filters, counts, repeat=repeat)
    im2col = timing.measure(cv.conv2d_im2col, images, filters, name="im2col + BLAS",
                            repeat=repeat, flops=cv.conv2d_flops(images.shape, filters.shape))
    return {
        "n": n,
        "python_n": python_n,
        "block": block,
        "blas_peak_gflops": peak,
        "gflops": gflops,
        "python_gflops": python,
        "share_of_peak": {v: g / peak for v, g in gflops.items()},
        "speedup_over_ijk": {v: g / gflops["ijk"] for v, g in gflops.items()},
        "blocking": {"rows": sweep.rows, "sizes": list(sweep.sizes), "ikj": list(sweep.ikj),
                     "blocked": list(sweep.blocked), "plan": str(plan)},
        "best_numba": best,
        "blas_over_best_numba": gflops["blas"] / gflops[best],
        "blas_threads_gflops": {str(k): t.gflops for k, t in zip(blas_counts, blas.timings,
                                                                   strict=True)},
        "blas_thread_speedup": blas.speedup(blas.timings[-1].name),
        "conv_layer": dict(zip(("N", "C", "size", "F", "kernel"), layer, strict=True)),
        "conv_threads_gflops": {str(k): t.gflops for k, t in zip(counts, conv.timings,
                                                                   strict=True)},
        "conv_thread_speedup": conv.speedup(conv.timings[-1].name),
        "conv_threads_max": counts[-1],
        "conv_im2col_gflops": im2col.gflops,
    }


def report(f: dict) -> str:
    peak = f["blas_peak_gflops"]
    lines = [f"matmul, every variant at n = {f['n']}, block {f['block']}; "
             f"BLAS peak {peak:.1f} GFLOP/s (best BLAS rate of this run, all threads)",
             f"{'variant':<12}{'GFLOP/s':>10}{'of peak':>10}{'x ijk':>8}"]
    for name, g in f["gflops"].items():
        lines.append(f"{name:<12}{g:>10.3g}{f['share_of_peak'][name]:>10.1%}"
                     f"{f['speedup_over_ijk'][name]:>8.2f}")
    lines.append(f"python loop (n = {f['python_n']}, not comparable in time): "
                 f"{f['python_gflops']:.3g} GFLOP/s")
    sweep = f["blocking"]
    lines.append(f"blocking, one thread, A ({sweep['rows']}, m) @ B (m, m), GFLOP/s "
                 "ikj / blocked (target at the largest: blocked >= 1.3x ikj):")
    lines.append(f"  sizes: {sweep['plan']}")
    for m, i, b in zip(sweep["sizes"], sweep["ikj"], sweep["blocked"], strict=True):
        lines.append(f"  m = {m:>5} (B {8 * m * m / 2**20:g} MiB): {i:.3g} / {b:.3g} = "
                     f"{b / i:.2f}x")
    lines.append(f"best numba: {f['best_numba']}; BLAS / best numba = "
                 f"{f['blas_over_best_numba']:.2f}x (target <= 5x)")
    blas = ", ".join(f"{k} thread(s) {g:.1f}" for k, g in f["blas_threads_gflops"].items())
    lines.append(f"BLAS GFLOP/s by thread count: {blas}; speedup {f['blas_thread_speedup']:.2f}x")
    layer = ", ".join(f"{k}={v}" for k, v in f["conv_layer"].items())
    conv = ", ".join(f"{k} thread(s) {g:.2f}" for k, g in f["conv_threads_gflops"].items())
    lines.append(f"convolution layer ({layer}) GFLOP/s: {conv}")
    lines.append(f"convolution 1 -> {f['conv_threads_max']} threads: "
                 f"{f['conv_thread_speedup']:.2f}x (target >= 1.7x on 2 threads); "
                 f"im2col + BLAS {f['conv_im2col_gflops']:.2f} GFLOP/s")
    return "\n".join(lines)
