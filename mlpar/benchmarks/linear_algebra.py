"""Matrix multiply variants against the measured BLAS peak, BLAS threads, convolution threads.

    python -m mlpar.bench linear_algebra

Targets on a 2-core machine: the best numba matmul within 5x of BLAS at n=512; the numba
convolution layer >= 1.7x faster on 2 threads than on 1. BLAS at 1 vs all threads is reported
as measured (implicit parallelism), with no target.
"""

from __future__ import annotations

from .. import convolution as cv
from .. import matmul as mm
from .. import threads, timing

NUMBA_VARIANTS = ("ijk", "ikj", "blocked", "parallel", "packed")


def run(quick: bool = False) -> dict:
    n = 256 if quick else 512
    python_n = 48 if quick else 96
    repeat = 3 if quick else 5
    block = 64
    names = ("python",) + NUMBA_VARIANTS + ("blas",)
    table = mm.measure_variants(n, names, python_n=python_n, block=block, repeat=repeat)
    gflops = {v: t.gflops for v, t in zip(names, table.timings, strict=True)}
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
        "share_of_peak": {v: g / peak for v, g in gflops.items()},
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
    lines = [f"matmul n = {f['n']} (python loop at n = {f['python_n']}), block {f['block']}; "
             f"BLAS peak {peak:.1f} GFLOP/s (best BLAS rate of this run, all threads)",
             f"{'variant':<12}{'GFLOP/s':>10}{'of peak':>10}"]
    for name, g in f["gflops"].items():
        lines.append(f"{name:<12}{g:>10.3g}{f['share_of_peak'][name]:>10.1%}")
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
