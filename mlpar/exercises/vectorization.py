"""Checks for lesson 01: a compiled parallel axpy, two accumulators, arithmetic intensity."""

from __future__ import annotations

import math

import numpy as np

from . import call, expect_close, passed


def check_axpy(axpy) -> None:
    """``axpy(a, x, y, out)`` must write ``a * x + y`` into ``out`` for any length."""
    name = "Exercise 1 (parallel axpy)"
    if not hasattr(axpy, "signatures"):
        raise AssertionError(f"{name}: decorate axpy with @njit(parallel=True) so numba compiles it")
    rng = np.random.default_rng(1)
    for n in (1, 7, 1000, 100_003):
        x, y = rng.random(n), rng.random(n)
        out = np.full(n, np.nan)
        call(name, axpy, 2.5, x, y, out)
        expect_close(name, out, 2.5 * x + y, what=f"out for n={n}")
    passed(name, "matches 2.5 * x + y for n = 1, 7, 1000 and 100003")


def check_sum_two_accumulators(sum_two_accumulators) -> None:
    """The sum must be right for even and odd lengths (the tail is the usual slip)."""
    name = "Exercise 2 (two accumulators)"
    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 3, 10, 1001):
        x = rng.random(n)
        got = call(name, sum_two_accumulators, x)
        expected = math.fsum(x)
        if not math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-12):
            hint = " Did you add the last element when n is odd?" if n % 2 else ""
            raise AssertionError(f"{name}: for n={n} you returned {got!r}, expected {expected!r}.{hint}")
    passed(name, "correct for lengths 0, 1, 2, 3, 10 and 1001")


def check_axpy_intensity(axpy_intensity) -> None:
    """flops per byte moved of ``out = a * x + y`` on float64 arrays."""
    name = "Exercise 3 (arithmetic intensity)"
    got = call(name, axpy_intensity)
    expected = 2 / 24  # one multiply and one add; read x and y, write out: 3 x 8 bytes
    if not isinstance(got, (int, float)) or not math.isclose(got, expected, rel_tol=1e-9):
        raise AssertionError(
            f"{name}: got {got!r}. Count the flops per element (a multiply and an add) and the "
            "bytes per element (which arrays are read, which written, 8 bytes each)."
        )
    passed(name, "2 flops per 24 bytes")
