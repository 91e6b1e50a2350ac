"""Benchmark family "gpu": the lesson-10 kernels on a real GPU, or on numba's simulator.

    python -m mlpar.bench gpu            # or, before mlpar.bench exists:
    python -c "from mlpar.benchmarks import gpu as b; print(b.report(b.run()))"

Figures: elementwise-product bandwidth as a share of the device's own copy bandwidth; the
matmul steps (naive, tiled, register-blocked, step 3's 128×128 tiles with a tuned shape) in
GFLOP/s next to cuBLAS through PyTorch or CuPy when one is installed (4096² float32 on a GPU,
and a ladder at 1024², 2048², 4096² beside cuBLAS in FP32 and in TF32), kernel times from CUDA
events, the registers of each compiled matmul kernel and the occupancy they allow; the
time to copy inputs over and results back next to the kernel time; the link's rate from
pageable and from pinned host memory, and copies overlapped with compute on streams. On a machine without a
GPU everything runs on the simulator at small sizes and the report says that the figures are
Python threads on the CPU, not GPU figures. numba picks its CUDA path once per process, so
when this process already imported numba on an unusable path, ``run`` measures in a fresh
Python process instead.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from mlpar.core import validation
from mlpar.gpu import backend as gpu

SIZES = {  # (elements of the product, matmul side, tile, dtype); the simulator needs tiny ones
    ("gpu", False): (1 << 25, 4096, 16, "float32"),
    ("gpu", True): (1 << 22, 2048, 16, "float32"),  # 2048² still fills the GPU (256 blocks)
    ("simulator", False): (2048, 16, 8, "float64"),
    ("simulator", True): (512, 8, 4, "float64"),
}


def _measure(quick: bool) -> dict:
    quick = validation.flag("quick", quick)
    backend = gpu.choose_cuda_backend()
    from mlpar.gpu import matmul, transfers

    n, side, tile, dtype = SIZES[(backend, bool(quick))]
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    a = rng.standard_normal((side, side)).astype(dtype)
    b = rng.standard_normal((side, side)).astype(dtype)
    repeat = 2 if backend == "simulator" else 10
    info = gpu.device_info()
    product = transfers.time_product(x, y, threads_per_block=128 if backend == "gpu" else 64,
                                     repeat=repeat)
    pinned = transfers.time_product(x, y, threads_per_block=128 if backend == "gpu" else 64,
                                    repeat=repeat, pinned=True)
    link = transfers.link_rates(x.nbytes, repeat=repeat)
    overlap = transfers.overlapped_product(x, y, chunks=4, repeat=repeat)
    copy = transfers.device_copy_gbps(3 * x.nbytes, repeat=repeat)
    tiled = transfers.time_matmul(a, b, tile=tile, repeat=repeat)
    naive = transfers.time_matmul(a, b, tile=tile, repeat=repeat, tiled=False)
    register = matmul.kernel_gflops("register", a, b, repeat=repeat)
    if backend == "gpu":
        (best_shape, wide), *_ = matmul.tune(a, b, repeat=repeat)
    else:  # tuning on the simulator would rank Python threads: run the default shape only
        best_shape = matmul.default_shape("wide")
        wide = matmul.kernel_gflops("wide", a, b, shape=best_shape, repeat=repeat)
    blas_name, blas = matmul.cublas_gflops(a, b, repeat=repeat)
    ladder = _ladder(matmul, best_shape, quick) if backend == "gpu" else []
    return {
        "backend": backend,
        "device": info.name,
        "dtype": dtype,
        "n": n,
        "product_kernel_gbps": product.kernel_gbps,
        "device_copy_gbps": copy,
        "product_share_of_copy": product.kernel_gbps / copy,
        "product_to_device_s": product.to_device_s,
        "product_kernel_s": product.kernel_s,
        "product_to_host_s": product.to_host_s,
        "product_transfer_share": product.transfer_share,
        "link_gbps": product.link_gbps,
        "matmul_side": side,
        "tile": tile,
        "tiled_matmul_gflops": tiled.kernel_gflops,
        "naive_matmul_gflops": naive.kernel_gflops,
        "matmul_transfer_share": tiled.transfer_share,
        "register_matmul_gflops": register,
        "wide_matmul_gflops": wide,
        "wide_shape": str(best_shape),
        "cublas_via": blas_name,
        "cublas_gflops": blas,
        "tiled_share_of_cublas": None if blas is None else tiled.kernel_gflops / blas,
        "wide_share_of_cublas": None if blas is None else wide / blas,
        "pageable_to_device_gbps": link.pageable_to_device,
        "pinned_to_device_gbps": link.pinned_to_device,
        "pageable_to_host_gbps": link.pageable_to_host,
        "pinned_to_host_gbps": link.pinned_to_host,
        "pinned_product_transfer_share": pinned.transfer_share,
        "overlap_chunks": overlap.chunks,
        "overlap_correct": bool(np.array_equal(overlap.result, x * y)),
        "overlap_speedup": overlap.speedup,
        "kernel_timer": "CUDA events" if backend == "gpu" else "host clock (simulator)",
        "ladder": ladder,
        "resources": _resources(matmul, best_shape, tile, dtype) if backend == "gpu" else [],
    }


LADDER_SIDES = (1024, 2048, 4096)


def _ladder(matmul, shape, quick: bool) -> list[dict]:
    # Every step at three sizes, float32, kernel alone by CUDA events, beside cuBLAS in true
    # FP32 (the same arithmetic as the kernels) and in TF32 on the tensor cores.
    rng = np.random.default_rng(1)
    rows = []
    for side in LADDER_SIDES[:2] if quick else LADDER_SIDES:
        a = rng.standard_normal((side, side)).astype(np.float32)
        b = rng.standard_normal((side, side)).astype(np.float32)
        row = {"side": side}
        for step in matmul.STEPS:
            row[step] = matmul.kernel_gflops(step, a, b, repeat=5,
                                             shape=shape if step == "wide" else None)
        row["cublas_via"], row["cublas_fp32"] = matmul.cublas_gflops(a, b, repeat=5)
        row["cublas_tf32_via"], row["cublas_tf32"] = matmul.cublas_gflops(a, b, repeat=5,
                                                                          tf32=True)
        rows.append(row)
    return rows


def _registers(kernel) -> int | None:
    # numba's compiled kernel: an int for one signature, or a dict per signature.
    try:
        regs = kernel.get_regs_per_thread()
    except Exception:
        return None
    if isinstance(regs, dict):
        return max(regs.values()) if regs else None
    return int(regs)


def _resources(matmul, shape, tile: int, dtype: str) -> list[dict]:
    # Registers per thread of each compiled kernel, as the device's compiler made them, and
    # the occupancy they allow on this GPU's SM limits (taken as the H100's, cc 9.0).
    from mlpar.gpu import cuda_kernels as ck

    dt = np.dtype(dtype)
    kernels = [("naive", ck.naive_matmul_kernel(dt), tile * tile, 0),
               ("tiled", ck.tiled_matmul_kernel(tile, dt), tile * tile,
                2 * tile * tile * dt.itemsize),
               ("register", matmul.register_blocked_kernel(matmul.REGISTER_SHAPE, dt),
                matmul.REGISTER_SHAPE.threads, matmul.REGISTER_SHAPE.shared_bytes(dt.itemsize)),
               ("wide", matmul.wide_kernel(shape, dt), shape.threads,
                shape.shared_bytes(dt.itemsize))]
    rows = []
    for name, kernel, threads, shared in kernels:
        regs = _registers(kernel)
        occ = gpu.occupancy(threads, regs, shared) if regs else None
        rows.append({"kernel": name, "threads": threads, "registers": regs,
                     "shared_bytes": shared,
                     "occupancy": None if occ is None else occ.occupancy,
                     "limiter": None if occ is None else occ.limiter})
    return rows


def run(quick: bool = False) -> dict:
    """Measure the figures; in a fresh process if numba's CUDA path here is unusable."""
    quick = validation.flag("quick", quick)
    try:
        gpu.choose_cuda_backend()
    except RuntimeError:
        code = ("import json; from mlpar.benchmarks import gpu as b; "
                f"print(json.dumps(b._measure({quick!r})))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, timeout=600)
        return json.loads(done.stdout.strip().splitlines()[-1])
    return _measure(quick)


def report(figures: dict) -> str:
    """The figures as lines of text, with the simulator caveat where it applies."""
    if not isinstance(figures, dict):
        raise TypeError(f"figures: expected the dict from run(), got {type(figures).__name__}")
    validation.choice("figures['backend']", figures.get("backend"), ("gpu", "simulator"))
    f = figures
    lines = []
    if f["backend"] == "simulator":
        lines.append("numba CUDA SIMULATOR (no GPU here): every CUDA thread is a Python thread "
                     "on the CPU; these are not GPU figures, only a check that the code runs.")
    else:
        lines.append(f"GPU: {f['device']}")
    lines += [
        f"elementwise product, n = {f['n']} {f['dtype']}: kernel {f['product_kernel_gbps']:.3g}"
        f" GB/s = {100 * f['product_share_of_copy']:.3g} % of device copy "
        f"{f['device_copy_gbps']:.3g} GB/s",
        f"  to device {f['product_to_device_s'] * 1e3:.3g} ms, kernel "
        f"{f['product_kernel_s'] * 1e3:.3g} ms, to host {f['product_to_host_s'] * 1e3:.3g} ms"
        f" (copies {100 * f['product_transfer_share']:.3g} % of the total; link "
        f"{f['link_gbps']:.3g} GB/s)",
        f"link from pageable memory: {f['pageable_to_device_gbps']:.3g} GB/s to device, "
        f"{f['pageable_to_host_gbps']:.3g} GB/s back; from pinned: "
        f"{f['pinned_to_device_gbps']:.3g} GB/s to device, {f['pinned_to_host_gbps']:.3g} GB/s "
        f"back (copies {100 * f['pinned_product_transfer_share']:.3g} % of the pinned product)",
        f"  {f['overlap_chunks']} chunks on streams: {f['overlap_speedup']:.3g}× the serial "
        f"offload, result equals numpy: {f['overlap_correct']}",
        f"matmul {f['matmul_side']}² {f['dtype']} (kernel alone): naive "
        f"{f['naive_matmul_gflops']:.3g}, tiled (tile {f['tile']}) "
        f"{f['tiled_matmul_gflops']:.3g}, register-blocked {f['register_matmul_gflops']:.3g}, "
        f"step 3 {f['wide_matmul_gflops']:.3g} GFLOP/s ({f['wide_shape']}); copies "
        f"{100 * f['matmul_transfer_share']:.3g} % of the tiled total",
    ]
    if f.get("cublas_gflops") is not None:
        lines.append(f"  {f['cublas_via']}: {f['cublas_gflops']:.3g} GFLOP/s; tiled reaches "
                     f"{100 * f['tiled_share_of_cublas']:.3g} %, step 3 "
                     f"{100 * f['wide_share_of_cublas']:.3g} % of it")
    elif f["backend"] == "gpu":
        lines.append("  cuBLAS: neither CuPy nor PyTorch with CUDA is installed")
    lines.append(f"kernel times by: {f.get('kernel_timer', 'host clock')}")
    for row in f.get("ladder") or []:
        blas = row.get("cublas_fp32")
        steps = ", ".join(
            f"{step} {row[step]:.4g}" + (f" ({100 * row[step] / blas:.3g} %)" if blas else "")
            for step in ("naive", "tiled", "register", "wide"))
        tf32 = row.get("cublas_tf32")
        lines.append(f"  {row['side']}² fp32 GFLOP/s (% of cuBLAS FP32): {steps}; "
                     f"{row.get('cublas_via') or 'cuBLAS n/a'} {blas or float('nan'):.4g}; "
                     f"TF32 {tf32 or float('nan'):.4g}")
    for r in f.get("resources") or []:
        occ = "n/a" if r["occupancy"] is None else f"{100 * r['occupancy']:.3g} % ({r['limiter']})"
        lines.append(f"  {r['kernel']:>8}: {r['threads']} threads/block, {r['registers']} "
                     f"registers/thread, {r['shared_bytes']} B shared: occupancy {occ}")
    return "\n".join(lines)
