"""Checks for lesson 10's exercises: the grid-stride loop, the tile size, the break-even.

All three are about the arithmetic of a launch rather than about compiled kernels, so they
run the same on a GPU machine, on the simulator, and with no numba at all.
"""

from __future__ import annotations

import math

from .. import gpu
from . import call, passed

# (thread_idx, block_idx, block_dim, grid_dim, n): one block, several, n not a multiple of
# the grid, n smaller than the grid (some threads get nothing), n = 0.
_STRIDE_CASES = [(0, 0, 4, 1, 10), (3, 1, 8, 2, 40), (7, 2, 8, 3, 50), (5, 0, 32, 2, 20),
                 (31, 3, 32, 4, 1000), (0, 0, 32, 1, 0)]
_COVER_CASES = [(8, 3, 50), (32, 2, 20), (4, 5, 97)]


def check_grid_stride_indices(func) -> None:
    """``func(thread_idx, block_idx, block_dim, grid_dim, n)`` → the elements of one thread."""
    ex = "grid-stride indices"
    for case in _STRIDE_CASES:
        got = call(ex, func, *case)
        try:
            got = [int(i) for i in got]
        except TypeError:
            raise AssertionError(
                f"{ex}: expected a list of ints, got {type(got).__name__}") from None
        expected = gpu.grid_stride_indices(*case)
        if got != expected:
            t, b, bd, gd, n = case
            hint = ""
            if got[:1] == expected[:1] and len(got) > 1 and got[1] - got[0] == bd:
                hint = "; the stride is the whole grid, gridDim × blockDim, not blockDim"
            elif got[:1] != expected[:1]:
                hint = "; the first element is blockIdx × blockDim + threadIdx"
            raise AssertionError(
                f"{ex}: thread {t} of block {b} (blockDim {bd}, gridDim {gd}, n {n}) got "
                f"{got[:6]}{'...' if len(got) > 6 else ''}, expected "
                f"{expected[:6]}{'...' if len(expected) > 6 else ''}{hint}"
            )
    for bd, gd, n in _COVER_CASES:
        seen = sorted(i for b in range(gd) for t in range(bd) for i in func(t, b, bd, gd, n))
        if seen != list(range(n)):
            raise AssertionError(f"{ex}: with blockDim {bd}, gridDim {gd} the threads together "
                                 f"do not visit each of the {n} elements exactly once")
    passed(ex, f"{len(_STRIDE_CASES)} threads and {len(_COVER_CASES)} whole grids agree")


_TILE_CASES = [(48 * 1024, 8), (48 * 1024, 4), (8 * 1024, 8), (4 * 1024, 8), (1024, 4),
               (100, 8), (16, 8)]


def check_largest_tile(func) -> None:
    """``func(shared_bytes, itemsize)`` → the largest power-of-two tile that fits."""
    ex = "largest tile"
    for shared, itemsize in _TILE_CASES:
        got = call(ex, func, shared, itemsize)
        expected = gpu.largest_tile(shared, itemsize)
        if got != expected:
            hint = ""
            if isinstance(got, int) and got > 0 and got * got > gpu.MAX_THREADS_PER_BLOCK:
                hint = f"; a {got}×{got} block has more than 1024 threads"
            elif isinstance(got, int) and got > 0 and 2 * got * got * itemsize > shared:
                hint = f"; two {got}×{got} tiles need {2 * got * got * itemsize} bytes"
            raise AssertionError(
                f"{ex}: with {shared} bytes of shared memory and {itemsize}-byte elements "
                f"got {got!r}, expected {expected}{hint}"
            )
    passed(ex, f"{len(_TILE_CASES)} shared-memory budgets")


_EVEN_CASES = [(50.0, 5000.0, 12.0), (100.0, 1000.0, 25.0), (10.0, 20.0, 1.0),
               (80.0, 80.0, 10.0), (200.0, 50.0, 10.0)]


def check_break_even_intensity(func) -> None:
    """``func(cpu_gflops, gpu_gflops, link_gbps)`` → flop per byte where offloading pays."""
    ex = "break-even intensity"
    for case in _EVEN_CASES:
        got = call(ex, func, *case)
        expected = gpu.break_even_intensity(*case)
        ok = (math.isinf(expected) and got == math.inf) or (
            not math.isinf(expected) and isinstance(got, (int, float))
            and math.isclose(got, expected, rel_tol=1e-9))
        if not ok:
            cpu, dev, link = case
            hint = ("; a device no faster than the host never pays: return math.inf"
                    if math.isinf(expected) else
                    "; solve F/P_cpu = B/W + F/P_gpu for F/B")
            raise AssertionError(
                f"{ex}: host {cpu} GFLOP/s, device {dev} GFLOP/s, link {link} GB/s: got "
                f"{got!r}, expected {expected:.6g}{hint}"
            )
    passed(ex, f"{len(_EVEN_CASES)} machines")
