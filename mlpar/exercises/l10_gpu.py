"""Checks for lesson 10's exercises: the grid-stride loop, a CUDA kernel, the tile, the break-even.

The kernel exercise launches the student's ``@cuda.jit`` kernel on whatever CUDA path the
lesson chose (a GPU or numba's simulator); the others are the arithmetic of a launch and run
the same everywhere, with no numba at all.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from mlpar.exercises import call, expect, fmt, passed
from mlpar.gpu import backend as gpu

# (thread_idx, block_idx, block_dim, grid_dim, n): one block, several, n not a multiple of
# the grid, n smaller than the grid (some threads get nothing), n = 0.
_STRIDE_CASES = [(0, 0, 4, 1, 10), (3, 1, 8, 2, 40), (7, 2, 8, 3, 50), (5, 0, 32, 2, 20),
                 (31, 3, 32, 4, 1000), (0, 0, 32, 1, 0)]
_COVER_CASES = [(8, 3, 50), (32, 2, 20), (4, 5, 97)]


def _int_list(ex: str, got) -> list[int]:
    try:
        return [int(i) for i in got]
    except (TypeError, ValueError):
        raise AssertionError(f"{ex}: expected a list of ints, got {fmt(got)}") from None


def check_grid_stride_indices(func) -> None:
    """``func(thread_idx, block_idx, block_dim, grid_dim, n)`` → the elements of one thread."""
    ex = "Exercise 1 (grid-stride indices)"
    for case in _STRIDE_CASES:
        got = _int_list(ex, call(ex, func, *case))
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
        seen = sorted(i for b in range(gd) for t in range(bd)
                      for i in _int_list(ex, call(ex, func, t, b, bd, gd, n)))
        if seen != list(range(n)):
            raise AssertionError(f"{ex}: with blockDim {bd}, gridDim {gd} the threads together "
                                 f"do not visit each of the {n} elements exactly once")
    passed(ex, f"{len(_STRIDE_CASES)} threads and {len(_COVER_CASES)} whole grids agree")


_TILE_CASES = [(48 * 1024, 8), (48 * 1024, 4), (8 * 1024, 8), (4 * 1024, 8), (1024, 4),
               (100, 8), (16, 8)]


def check_largest_tile(func) -> None:
    """``func(shared_bytes, itemsize)`` → the largest power-of-two tile that fits."""
    ex = "Exercise 3 (largest tile)"
    for shared, itemsize in _TILE_CASES:
        got = call(ex, func, shared, itemsize)
        expected = gpu.largest_tile(shared, itemsize)
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            raise AssertionError(f"{ex}: with {shared} bytes and {itemsize}-byte elements got "
                                 f"{fmt(got)}; expected a whole number (the tile side)")
        if got != expected:
            hint = ""
            if isinstance(got, int) and got > 0 and got * got > gpu.MAX_THREADS_PER_BLOCK:
                hint = f"; a {got}×{got} block has more than 1024 threads"
            elif isinstance(got, int) and got > 0 and 2 * got * got * itemsize > shared:
                hint = f"; two {got}×{got} tiles need {2 * got * got * itemsize} bytes"
            raise AssertionError(
                f"{ex}: with {shared} bytes of shared memory and {itemsize}-byte elements "
                f"got {fmt(got)}, expected {expected}{hint}"
            )
    passed(ex, f"{len(_TILE_CASES)} shared-memory budgets")


_EVEN_CASES = [(50.0, 5000.0, 12.0), (100.0, 1000.0, 25.0), (10.0, 20.0, 1.0),
               (80.0, 80.0, 10.0), (200.0, 50.0, 10.0)]


def check_break_even_intensity(func) -> None:
    """``func(cpu_gflops, gpu_gflops, link_gbps)`` → flop per byte where offloading pays."""
    ex = "Exercise 4 (break-even intensity)"
    for case in _EVEN_CASES:
        got = call(ex, func, *case)
        expected = gpu.break_even_intensity(*case)
        number = isinstance(got, (int, float, np.integer, np.floating)) and not isinstance(got, bool)
        ok = number and ((math.isinf(expected) and got == math.inf) or (
            not math.isinf(expected) and math.isclose(float(got), expected, rel_tol=1e-9)))
        if not ok:
            cpu, dev, link = case
            hint = ("; a device no faster than the host never pays: return math.inf"
                    if math.isinf(expected) else
                    "; solve F/P_cpu = B/W + F/P_gpu for F/B")
            raise AssertionError(
                f"{ex}: host {cpu} GFLOP/s, device {dev} GFLOP/s, link {link} GB/s: got "
                f"{fmt(got)}, expected {fmt(expected)}{hint}"
            )
    passed(ex, f"{len(_EVEN_CASES)} machines")


# --- writing a kernel -------------------------------------------------------------------------

# (n, blocks, threads per block): a grid smaller than the array (the loop must stride), a grid
# larger than the array (threads past the end must do nothing), one element.
_AXPY_CASES = [(1000, 2, 32), (50, 4, 32), (1, 1, 32)]
_PAD = 64  # sentinel elements after each array: a write past the end lands here, not in memory
_SENTINEL = 7.0


def check_axpy_kernel(kernel) -> None:
    """``kernel[blocks, threads](a, x, y)`` must update ``y[i] += a * x[i]`` once for every i."""
    ex = "Exercise 2 (a CUDA kernel)"
    if not (hasattr(kernel, "py_func") and hasattr(kernel, "__getitem__")):
        raise AssertionError(f"{ex}: expected a kernel made with @cuda.jit, got "
                             f"{type(kernel).__name__}; put @cuda.jit on the line above def")
    try:
        source = inspect.getsource(kernel.py_func)
    except (OSError, TypeError):
        source = ""
    expect(ex, "NotImplementedError" not in source,
           "not done yet; replace `raise NotImplementedError` with your solution")
    from numba import cuda  # after the lesson chose the CUDA path

    rng = np.random.default_rng(5)
    a = 2.5
    for n, blocks, threads in _AXPY_CASES:
        case = f"n={n}, {blocks} block(s) of {threads} threads"
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        pad = np.full(_PAD, _SENTINEL)
        d_x = cuda.to_device(np.concatenate([x, pad]))
        d_y = cuda.to_device(np.concatenate([y, pad]))
        try:
            with warnings.catch_warnings():  # small launches are the point here, not a problem
                warnings.simplefilter("ignore")
                kernel[blocks, threads](a, d_x[:n], d_y[:n])
                cuda.synchronize()
        except NotImplementedError:
            raise AssertionError(
                f"{ex}: not done yet; replace `raise NotImplementedError` with your solution"
            ) from None
        except IndexError:
            raise AssertionError(
                f"{ex}: {case}: a thread indexed past the end of the arrays; threads whose "
                "index is n or more must do nothing (loop `for i in range(start, n, stride)` "
                "or test `if i < n`)") from None
        except Exception as err:  # noqa: BLE001  (the student's kernel failed to compile or run)
            raise AssertionError(
                f"{ex}: {case}: the kernel raised {type(err).__name__}: {err}") from err
        got = d_y.copy_to_host()
        expect(ex, bool((got[n:] == _SENTINEL).all()),
               f"{case}: the kernel wrote past the end of y; threads whose index is n or more "
               "must do nothing")
        got = got[:n]
        want = y + a * x
        if np.allclose(got, want, rtol=1e-12, atol=1e-12):
            continue
        never = int(np.sum(got == y))
        expect(ex, never == 0,
               f"{case}: {never} of {n} elements were never updated; with fewer threads than "
               "elements each thread must loop with stride cuda.gridsize(1)")
        twice = int(np.sum(np.isclose(got, y + 2 * a * x, rtol=1e-12, atol=1e-12)))
        expect(ex, twice == 0,
               f"{case}: {twice} element(s) were updated more than once; the stride of the loop "
               "is the whole grid, cuda.gridsize(1) = gridDim.x × blockDim.x, not blockDim.x")
        i = int(np.argmax(~np.isclose(got, want, rtol=1e-12, atol=1e-12)))
        raise AssertionError(f"{ex}: {case}: y[{i}] became {fmt(got[i])}, expected "
                             f"y[i] + a * x[i] = {fmt(want[i])}")
    passed(ex, f"{len(_AXPY_CASES)} launch shapes, grids smaller and larger than the array")
