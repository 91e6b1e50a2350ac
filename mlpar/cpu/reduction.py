"""Summing a vector: instruction-level parallelism (ILP) and why ``fastmath`` matters.

A sum ``s = s + x[i]`` is one long dependency chain: each addition must wait for the previous
one to leave the adder, which takes several cycles (its *latency*) even though the core could
start a new addition every cycle (its *throughput*). Independent chains fill that gap:

* ``sum_one_accumulator``: one chain, scalar instructions. Latency-bound.
* ``sum_four_accumulators``: four independent partial sums, still scalar. The out-of-order core
  overlaps the four chains: ILP without SIMD.
* ``sum_fastmath``: one chain in the source, but ``fastmath=True`` allows LLVM to reassociate
  the additions (floating-point addition is not associative, so it may not otherwise), which
  it uses to keep several SIMD registers of partial sums: SIMD and ILP together.

The first two are compiled with the vectorizers off (``elementwise.without_simd``) so that the
only difference between them is the number of chains. Results differ from ``math.fsum`` in the
last bits, and differently per variant, because the additions happen in different orders.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mlpar.core import validation
from mlpar.cpu.elementwise import without_simd


def _one(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def _four(x):
    s0 = s1 = s2 = s3 = 0.0
    n = x.shape[0]
    m = n - n % 4
    for i in range(0, m, 4):
        s0 += x[i]
        s1 += x[i + 1]
        s2 += x[i + 2]
        s3 += x[i + 3]
    for i in range(m, n):
        s0 += x[i]
    return (s0 + s1) + (s2 + s3)


_one_kernel = without_simd(_one, "float64(float64[::1])")
_four_kernel = without_simd(_four, "float64(float64[::1])")
_fastmath_kernel = njit(fastmath=True)(_one)


def _check(x):
    return validation.array("x", x, ndim=1, dtype=np.float64, contiguous=True)


def sum_one_accumulator(x: np.ndarray) -> float:
    """Sum with one dependency chain, scalar instructions."""
    return _one_kernel(_check(x))


def sum_four_accumulators(x: np.ndarray) -> float:
    """Sum with four independent chains (ILP), scalar instructions."""
    return _four_kernel(_check(x))


def sum_fastmath(x: np.ndarray) -> float:
    """Sum that LLVM may reassociate: vectorized, several partial-sum registers."""
    return _fastmath_kernel(_check(x))
