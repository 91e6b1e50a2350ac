"""Lesson 00's claims: implicit parallelism (BLAS threads) pays, and pays more on big products.

Both settings (one BLAS thread, every usable core) are timed in interleaved rounds, so a burst
of load from another program hits both alike; each round gives its own speedup, and the claim
prints the range of those beside the best-of figure, so a reader sees how far the noise is
from the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlpar.core import claims, environment, timing, validation

LARGE, SMALL = 1000, 100  # matrix sides: one product well above, one near the threads' break-even
ROUNDS = 5  # interleaved rounds per setting (3 when quick)


@dataclass(frozen=True)
class BlasThreads:
    """An n × n product timed on one BLAS thread and on ``threads`` threads, rounds interleaved."""

    n: int
    threads: int
    one: timing.Timing  # one BLAS thread, one sample per round
    every: timing.Timing  # ``threads`` BLAS threads, one sample per round

    @property
    def speedup(self) -> float:
        """Best time on one thread over best time on every thread."""
        return self.one.best / self.every.best

    @property
    def round_speedups(self) -> np.ndarray:
        """Each round's own speedup, from the two times taken moments apart in that round."""
        return np.asarray(self.one.times) / np.asarray(self.every.times)

    def spread(self) -> str:
        """The range of the per-round speedups, in words: ``"rounds 1.71-1.86×"``."""
        r = self.round_speedups
        return f"{len(r)} interleaved rounds: {r.min():.3g}–{r.max():.3g}×"


def blas_threads(n: int, *, repeat: int = ROUNDS, threads: int | None = None,
                 seed: int = 0) -> BlasThreads:
    """Time ``A @ B`` (n × n) on one BLAS thread and on ``threads`` (default: every usable
    core), alternating the two settings in ``repeat`` rounds after one warm-up of each."""
    from threadpoolctl import threadpool_limits

    n = validation.positive_int("n", n, maximum=10_000)
    repeat = validation.positive_int("repeat", repeat, maximum=100)
    threads = environment.usable_cores() if threads is None else \
        validation.positive_int("threads", threads, maximum=1 << 16)
    rng = np.random.default_rng(validation.seed("seed", seed))
    A, B = rng.random((n, n)), rng.random((n, n))
    samples: dict[int, list[float]] = {1: [], threads: []}  # one key when threads == 1
    first: dict[int, float] = {}
    for _ in range(repeat):
        for count in samples:
            with threadpool_limits(limits=count, user_api="blas"):
                t = timing.measure(np.matmul, A, B, repeat=1)
            first.setdefault(count, t.first_call)
            samples[count].append(t.best)
    flops = 2 * n**3
    one = timing.Timing("BLAS, 1 thread", tuple(samples[1]), first[1], flops=flops)
    every = timing.Timing(f"BLAS, {threads} threads", tuple(samples[threads]), first[threads],
                          flops=flops)
    return BlasThreads(n, threads, one, every)


def blas_speedup(n: int, *, seed: int = 0, repeat: int = 3) -> float:
    """Time of ``A @ B`` (n × n) on one BLAS thread over its time on every usable core."""
    return blas_threads(n, repeat=repeat, seed=seed).speedup


def _not_applicable() -> str:
    """Why BLAS threads cannot be compared with one here (one core, BLAS held to one thread)."""
    return claims.precondition(cores=2, blas_threads=2)


def _measured(table, n: int, quick: bool) -> BlasThreads:
    if table is None:
        return blas_threads(n, repeat=3 if quick else ROUNDS)
    if not isinstance(table, BlasThreads):
        raise TypeError(f"table: expected a BlasThreads (lesson_claims.blas_threads) or None, "
                        f"got {type(table).__name__}")
    if table.n != n or table.threads < 2:
        raise ValueError(f"table: expected a {n}×{n} product timed on 1 and at least 2 threads, "
                         f"got n={table.n} on {table.threads} thread(s)")
    return table


def blas_threads_speed_up_a_large_product(quick: bool = False, *, table=None):
    """A 1000 × 1000 product on every usable core is at least 1.5× faster than on one.

    ``table``: a ``BlasThreads`` of the 1000 × 1000 product already measured (the lesson
    passes the one it shows, so the table and the verdict are one measurement). Without one,
    rounds of one product on each setting until the median speedup is told apart from 1.5×
    (``claims.measure_rounds``).
    """
    quick = validation.flag("quick", quick)
    statement = f"BLAS threads speed up a {LARGE}×{LARGE} matrix product"
    if reason := _not_applicable():  # nothing to speed up: neither held nor broken
        return claims.check("00", statement, None, at_least=1.5, unit="×", not_applicable=reason)
    if table is not None:  # the lesson's table: one measurement, one verdict
        result = _measured(table, LARGE, quick)
        return claims.check("00", f"{statement} ({result.spread()})", result.speedup,
                            at_least=1.5, unit="×")
    def one_round() -> float:  # one product on 1 thread, then one on every core, moments apart
        return float(blas_threads(LARGE, repeat=1).round_speedups[0])

    rounds = claims.measure_rounds(one_round, at_least=1.5, max_rounds=15 if quick else 25,
                                   budget_s=10 if quick else 20)
    return claims.check_rounds("00", statement, rounds, unit="×")


def large_products_gain_more_than_small_ones(quick: bool = False):
    """The speedup from BLAS threads is larger at n = 1000 than at n = 100."""
    quick = validation.flag("quick", quick)
    repeat = 3 if quick else ROUNDS
    statement = f"threads gain more at n={LARGE} than at n={SMALL} (ratio of speedups)"
    if reason := _not_applicable():
        return claims.check("00", statement, None, at_least=1.0, unit="×", not_applicable=reason)
    large, small = blas_threads(LARGE, repeat=repeat), blas_threads(SMALL, repeat=repeat)
    statement += f" (n={LARGE}: {large.speedup:.3g}×, n={SMALL}: {small.speedup:.3g}×)"
    return claims.check("00", statement, large.speedup / small.speedup, at_least=1.0, unit="×",
                        cause="on some machines a product that fits in cache scales as well as "
                              "a large one")


CLAIMS = (blas_threads_speed_up_a_large_product, large_products_gain_more_than_small_ones)
