"""Lesson 00's claims: implicit parallelism (BLAS threads) pays, and pays more on big products."""

from __future__ import annotations

import numpy as np

from mlpar.core import claims, environment, timing, validation

LARGE, SMALL = 1000, 100  # matrix sides: one product well above, one near the threads' break-even


def blas_speedup(n: int, *, seed: int = 0, repeat: int = 3) -> float:
    """Time of ``A @ B`` (n × n) on one BLAS thread over its time on every usable core."""
    from threadpoolctl import threadpool_limits

    n = validation.positive_int("n", n, maximum=10_000)
    repeat = validation.positive_int("repeat", repeat, maximum=100)
    rng = np.random.default_rng(validation.seed("seed", seed))
    A, B = rng.random((n, n)), rng.random((n, n))
    cores = environment.usable_cores()
    # interleave the two settings so a burst of outside load hits both alike
    best = {1: float("inf"), cores: float("inf")}
    for _ in range(repeat):
        for threads in best:
            with threadpool_limits(limits=threads, user_api="blas"):
                t = timing.measure(np.matmul, A, B, repeat=1)
            best[threads] = min(best[threads], t.best)
    return best[1] / best[cores]


def _blas_cap() -> str:
    """A cause worth naming when BLAS itself runs one thread, or '' when it does not."""
    threads = [lib["threads"] for lib in environment.blas_info()]
    if threads and max(threads) == 1:
        return ("BLAS runs one thread here (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or "
                "MKL_NUM_THREADS may be set to 1)")
    return ""


def blas_threads_speed_up_a_large_product(quick: bool = False):
    """A 1000 × 1000 product on every usable core is at least 1.5× faster than on one."""
    quick = validation.flag("quick", quick)
    one = environment.usable_cores() < 2  # nothing to speed up: neither held nor broken
    return claims.check("00", f"BLAS threads speed up a {LARGE}×{LARGE} matrix product",
                        None if one else blas_speedup(LARGE, repeat=2 if quick else 3),
                        at_least=1.5, unit="×",
                        cause="this process may use one core" if one else _blas_cap())


def large_products_gain_more_than_small_ones(quick: bool = False):
    """The speedup from BLAS threads is larger at n = 1000 than at n = 100."""
    quick = validation.flag("quick", quick)
    repeat = 2 if quick else 3
    one = environment.usable_cores() < 2
    ratio = None if one else blas_speedup(LARGE, repeat=repeat) / blas_speedup(SMALL, repeat=repeat)
    return claims.check("00", f"threads gain more at n={LARGE} than at n={SMALL} (ratio of speedups)",
                        ratio, at_least=1.0, unit="×",
                        cause="this process may use one core" if one else (
                            _blas_cap() or "on some machines a product that fits in cache "
                                           "scales as well as a large one"))


CLAIMS = (blas_threads_speed_up_a_large_product, large_products_gain_more_than_small_ones)
