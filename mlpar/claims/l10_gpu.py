"""Lesson 10's claims: the kernels are right everywhere; offloading pays only at high intensity.

Correctness is checked on whatever CUDA path is active (a GPU or numba's simulator). Speed is
claimed only where a GPU measured it: on the simulator the speed claim is "not measured here"
(its timings are of Python threads), and the offload claims use the host's measured rates with
the GPU's *published* figures (``mlpar.gpu.backend.T4``), which the claim's statement names.
The kernels are imported on first use: if numba was imported before the CUDA path could be
chosen, the claims say so instead of failing.
"""

from __future__ import annotations

import numpy as np

from mlpar.core import claims, timing, validation
from mlpar.gpu import backend as gpu


def _kernels():
    """``mlpar.gpu.cuda_kernels``, or None when numba's CUDA path can no longer be chosen."""
    try:
        gpu.choose_cuda_backend()
        from mlpar.gpu import cuda_kernels
    except RuntimeError:
        return None
    return cuda_kernels


def _on_gpu():
    """(cuda_kernels, transfers, matmul) on a GPU path, or the reason a GPU claim is n/a."""
    reason = claims.precondition(gpu=True)
    ck = _kernels()
    if ck is None:
        return None, reason or _NO_PATH
    if ck.BACKEND != "gpu":
        return None, reason or "no GPU: numba runs on its CUDA simulator here"
    from mlpar.gpu import matmul, transfers

    return (ck, transfers, matmul), ""


_NO_PATH = ("numba was imported before the CUDA back end was chosen; run these claims in a "
            "fresh process (python -m mlpar.bench claims)")


def mismatches(ck, *, seed: int = 0) -> int:
    """How many of the lesson's kernel runs differ from numpy (product, sum, four matmuls)."""
    seed = validation.seed("seed", seed)
    if getattr(ck, "small_grids", None) is None:
        raise TypeError(f"ck: expected the module mlpar.gpu.cuda_kernels, got {ck!r}")
    with ck.small_grids():  # deliberately small launches: numba warns of low occupancy
        return _mismatches(ck, seed)


def _mismatches(ck, seed: int) -> int:
    rng = np.random.default_rng(seed)
    wrong = 0
    for n, threads, blocks in [(1000, 128, None), (1000, 32, 3), (37, 32, 1)]:
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        wrong += not np.array_equal(ck.elementwise_product(x, y, threads_per_block=threads,
                                                           blocks=blocks), x * y)
        wrong += not np.isclose(ck.reduce_sum(x, threads_per_block=threads), x.sum(), rtol=1e-12)
    for (m, k, p), tile in [((13, 11, 9), 4), ((16, 16, 16), 8)]:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, p))
        wrong += not np.allclose(ck.tiled_matmul(a, b, tile=tile), a @ b, rtol=1e-12, atol=1e-12)
        wrong += not np.allclose(ck.naive_matmul(a, b, tile=tile), a @ b, rtol=1e-12, atol=1e-12)
    from mlpar.gpu import matmul

    shape = gpu.Blocking(8, 16, 4, 2, 4)  # not square, sizes not multiples of it
    for m, k, p in [(13, 11, 9), (16, 16, 16)]:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, p))
        for step in (matmul.register_blocked_matmul, matmul.wide_matmul):
            wrong += not np.allclose(step(a, b, shape=shape), a @ b, rtol=1e-12, atol=1e-12)
    return int(wrong)


def kernels_equal_numpy(quick: bool = False):
    """Every kernel (product, sum, naive and tiled matmul) agrees with numpy on this CUDA path."""
    quick = validation.flag("quick", quick)
    ck = _kernels()
    if ck is None:
        return claims.check("10", "kernels that differ from numpy", None, at_most=0, cause=_NO_PATH)
    return claims.check("10", f"kernels that differ from numpy on the {ck.BACKEND}", mismatches(ck),
                        at_most=0, cause="a kernel bug: a missing bounds check or barrier")


def offload_rates(quick: bool = False) -> tuple[float, float, float, str]:
    """(host GFLOP/s measured, device GFLOP/s, link GB/s, where the device figures come from)."""
    quick = validation.flag("quick", quick)
    ck = _kernels()
    rng = np.random.default_rng(0)
    side = 256 if quick else 384
    big = rng.standard_normal((side, side)).astype(np.float32)  # float32, like the device's
    host = timing.measure(np.matmul, big, big, flops=2 * side**3, repeat=3).gflops
    if ck is not None and ck.BACKEND == "gpu":
        from mlpar.gpu import transfers

        a = rng.standard_normal((1024, 1024)).astype(np.float32)
        # the link rate from pinned memory: what an offload that cares about the link uses
        link = transfers.link_rates(1 << 24, repeat=3).pinned_to_device
        device = transfers.time_matmul(a, a, tile=16, repeat=3).kernel_gflops
        return host, device, link, f"measured on {gpu.device_info().name}, pinned link"
    spec = gpu.T4
    return host, spec.fp32_gflops, spec.link_gbps, f"{spec.name}, published figures"


def product_intensity() -> float:
    """Flop per byte sent over the link by an offloaded float32 elementwise product."""
    return 1 / (3 * 4)  # one multiply per element; x and y go over, x·y comes back


def matmul_intensity(side: int) -> float:
    """Flop per byte sent for a float32 side × side matmul: 2n³ flops, 3n² numbers of 4 bytes."""
    side = validation.positive_int("side", side)
    return 2 * side**3 / (3 * side**2 * 4)


def lone_product_does_not_pay(quick: bool = False):
    """An offloaded elementwise product sits below the break-even intensity."""
    quick = validation.flag("quick", quick)
    host, device, link, where = offload_rates(quick)
    even = gpu.break_even_intensity(host, device, link)
    return claims.check("10", f"elementwise product's intensity over the break-even ({where})",
                        product_intensity() / even, at_most=1.0, unit="×",
                        cause="a host much slower than its link to the GPU")


def large_matmul_pays(quick: bool = False):
    """A 1024 × 1024 matmul sits above the break-even intensity."""
    quick = validation.flag("quick", quick)
    host, device, link, where = offload_rates(quick)
    even = gpu.break_even_intensity(host, device, link)
    return claims.check("10", f"1024×1024 matmul's intensity over the break-even ({where})",
                        matmul_intensity(1024) / even, at_least=1.0, unit="×",
                        cause="a host as fast as the GPU, or a very slow link")


def tiled_beats_naive(quick: bool = False):
    """On a GPU, the shared-memory tiled matmul is faster than the naive kernel."""
    quick = validation.flag("quick", quick)
    found, reason = _on_gpu()
    if found is None:
        return claims.check("10", "tiled over naive matmul kernel speed", None, at_least=1.0,
                            unit="×", not_applicable=reason)
    from mlpar.gpu import transfers

    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    # Interleaved rounds (kernel times by CUDA events), so a busy moment hits both alike; the
    # statement carries the spread of the per-round ratios.
    ratios = []
    for _ in range(3):
        naive = transfers.time_matmul(a, a, tile=16, tiled=False, repeat=3).kernel_s
        tiled = transfers.time_matmul(a, a, tile=16, tiled=True, repeat=3).kernel_s
        ratios.append(naive / tiled)
    return claims.check("10", f"tiled over naive matmul kernel speed on {gpu.device_info().name}"
                        f" (median of 3 rounds; {min(ratios):.2f}–{max(ratios):.2f}×)",
                        sorted(ratios)[1], at_least=1.0, unit="×",
                        cause="the GPU's L1 and L2 caches serve the naive kernel's repeated "
                              "loads, so the gain is far below the load-count ratio")


def wide_reaches_half_of_cublas(quick: bool = False):
    """On a GPU, step 3 of the matmul reaches half of cuBLAS at 4096² float32 (2048² quick)."""
    quick = validation.flag("quick", quick)
    statement = "step 3 matmul (128×128 tiles, 8×8 per thread) over cuBLAS at 4096² float32"
    found, reason = _on_gpu()
    if found is None:
        return claims.check("10", statement, None, at_least=0.5, unit="×",
                            not_applicable=reason)
    _, _, matmul = found
    side = 2048 if quick else 4096
    rng = np.random.default_rng(0)
    a = rng.standard_normal((side, side)).astype(np.float32)
    b = rng.standard_normal((side, side)).astype(np.float32)
    via, blas = matmul.cublas_gflops(a, b, repeat=5)
    if blas is None:
        return claims.check("10", statement, None, at_least=0.5, unit="×",
                            not_applicable="neither CuPy nor PyTorch can call cuBLAS here")
    best = max(g for _, g in matmul.tune(a, b, repeat=3))
    return claims.check("10", f"{statement.replace('4096', str(side))} ({via})", best / blas,
                        at_least=0.5, unit="×",
                        cause="25 % occupancy (126 registers per thread) with scalar loads "
                              "and a 4-way bank conflict on B's tile store: see the registers "
                              "and the ladder in python -m mlpar.bench gpu")


def pinned_beats_pageable(quick: bool = False):
    """On a GPU, copies to the device from pinned host memory are faster than from pageable."""
    quick = validation.flag("quick", quick)
    statement = "host-to-device copy rate, pinned over pageable memory"
    found, reason = _on_gpu()
    if found is None:
        return claims.check("10", statement, None, at_least=1.0, unit="×",
                            not_applicable=reason)
    _, transfers, _ = found
    rates = transfers.link_rates(1 << (24 if quick else 26), repeat=5)
    return claims.check("10", statement, rates.pinned_gain, at_least=1.0, unit="×",
                        cause="a driver that already stages pageable copies well, or a link "
                              "slower than the staging copy")


CLAIMS = (kernels_equal_numpy, lone_product_does_not_pay, large_matmul_pays, tiled_beats_naive,
          wide_reaches_half_of_cublas, pinned_beats_pageable)
