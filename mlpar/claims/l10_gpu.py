"""Lesson 10's claims: the kernels are right everywhere; offloading pays only at high intensity.

Correctness is checked on whatever CUDA path is active (a GPU or numba's simulator). Speed is
claimed only where a GPU measured it: on the simulator the speed claim is "not measured here"
(its timings are of Python threads), and the offload claims use the host's measured rates with
the GPU's *published* figures (``mlpar.gpu.backend.T4``), which the claim's statement names.
The kernels are imported on first use: if numba was imported before the CUDA path could be
chosen, the claims say so instead of failing.
"""

from __future__ import annotations

import warnings

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


_NO_PATH = ("numba was imported before the CUDA back end was chosen; run these claims in a "
            "fresh process (python -m mlpar.bench claims)")


def mismatches(ck, *, seed: int = 0) -> int:
    """How many of the lesson's kernel runs differ from numpy (product, sum, both matmuls)."""
    with warnings.catch_warnings():  # deliberately small launches: numba warns of low occupancy
        warnings.simplefilter("ignore")
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
    big = rng.standard_normal((side, side))
    host = timing.measure(np.matmul, big, big, flops=2 * side**3, repeat=3).gflops
    if ck is not None and ck.BACKEND == "gpu":
        n = 1 << 22
        xs = rng.standard_normal(n).astype(np.float32)
        a = rng.standard_normal((1024, 1024)).astype(np.float32)
        link = ck.time_product(xs, xs, repeat=3).link_gbps
        device = ck.time_matmul(a, a, tile=16, repeat=3).kernel_gflops
        return host, device, link, f"measured on {gpu.device_info().name}"
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
    ck = _kernels()
    if ck is None or ck.BACKEND != "gpu":
        return claims.check("10", "tiled over naive matmul kernel speed", None, at_least=1.0,
                            unit="×", cause="no GPU here: the simulator times Python threads, "
                                            "not a GPU, so this claim is not measured")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    naive = ck.time_matmul(a, a, tile=16, tiled=False, repeat=3).kernel_s
    tiled = ck.time_matmul(a, a, tile=16, tiled=True, repeat=3).kernel_s
    return claims.check("10", f"tiled over naive matmul kernel speed on {gpu.device_info().name}",
                        naive / tiled, at_least=1.0, unit="×",
                        cause="the GPU's caches may serve the naive kernel's repeated loads")


CLAIMS = (kernels_equal_numpy, lone_product_does_not_pay, large_matmul_pays, tiled_beats_naive)
