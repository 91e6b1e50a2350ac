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


def _not_applicable() -> str:
    """Why BLAS threads cannot be compared with one here (one core, BLAS held to one thread)."""
    return claims.precondition(cores=2, blas_threads=2)


def blas_threads_speed_up_a_large_product(quick: bool = False):
    """A 1000 × 1000 product on every usable core is at least 1.5× faster than on one."""
    quick = validation.flag("quick", quick)
    statement = f"BLAS threads speed up a {LARGE}×{LARGE} matrix product"
    if reason := _not_applicable():  # nothing to speed up: neither held nor broken
        return claims.check("00", statement, None, at_least=1.5, unit="×", not_applicable=reason)
    return claims.check("00", statement, blas_speedup(LARGE, repeat=2 if quick else 3),
                        at_least=1.5, unit="×")


def large_products_gain_more_than_small_ones(quick: bool = False):
    """The speedup from BLAS threads is larger at n = 1000 than at n = 100."""
    quick = validation.flag("quick", quick)
    repeat = 2 if quick else 3
    statement = f"threads gain more at n={LARGE} than at n={SMALL} (ratio of speedups)"
    if reason := _not_applicable():
        return claims.check("00", statement, None, at_least=1.0, unit="×", not_applicable=reason)
    ratio = blas_speedup(LARGE, repeat=repeat) / blas_speedup(SMALL, repeat=repeat)
    return claims.check("00", statement, ratio, at_least=1.0, unit="×",
                        cause="on some machines a product that fits in cache scales as well as "
                              "a large one")


CLAIMS = (blas_threads_speed_up_a_large_product, large_products_gain_more_than_small_ones)
