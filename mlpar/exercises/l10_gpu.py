"""Checks for lesson 10's exercises: the grid-stride loop, a CUDA kernel, occupancy, the
break-even, and a predicted offload of the elementwise product.

The kernel exercise launches the student's ``@cuda.jit`` kernel on whatever CUDA path the
lesson chose (a GPU or numba's simulator); the others are the arithmetic of a launch and run
the same everywhere, with no numba at all. The offload prediction is graded against the model
only; its measurement is reported, never graded.
"""

from __future__ import annotations

import inspect
import math
import numbers
import types
import warnings

import numpy as np

from mlpar.exercises import call_refusing, case_seed, expect, fmt, passed
from mlpar.gpu import backend as gpu

# (thread_idx, block_idx, block_dim, grid_dim, n): one block, several, n not a multiple of
# the grid, n smaller than the grid (some threads get nothing), n = 0.
_STRIDE_CASES = [(0, 0, 4, 1, 10), (3, 1, 8, 2, 40), (7, 2, 8, 3, 50), (5, 0, 32, 2, 20),
                 (31, 3, 32, 4, 1000), (0, 0, 32, 1, 0)]
_COVER_CASES = [(8, 3, 50), (32, 2, 20), (4, 5, 97)]

# The library's own versions of what Exercises 1, 3 and 4 ask the student to write: an answer
# that calls one of them is refused by name (mlpar.exercises.call_refusing follows the call
# however it is spelled).
_LIBRARY = {
    "stride": {gpu.grid_stride_indices: "the library's grid_stride_indices",
               gpu.grid_stride_owners: "the library's grid_stride_owners"},
    "occupancy": {gpu.occupancy: "the library's occupancy"},
    "break-even": {gpu.break_even_intensity: "the library's break_even_intensity"},
}


def _int_list(ex: str, got) -> list[int]:
    try:
        return [int(i) for i in got]
    except (TypeError, ValueError):
        raise AssertionError(f"{ex}: expected a list of ints, got {fmt(got)}") from None


def check_grid_stride_indices(func) -> None:
    """``func(thread_idx, block_idx, block_dim, grid_dim, n)`` → the elements of one thread."""
    ex = "Exercise 1 (grid-stride indices)"
    for case in _STRIDE_CASES:
        got = _int_list(ex, call_refusing(ex, func, _LIBRARY["stride"], *case))
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
                      for i in _int_list(ex, call_refusing(ex, func, _LIBRARY["stride"],
                                                           t, b, bd, gd, n)))
        if seen != list(range(n)):
            raise AssertionError(f"{ex}: with blockDim {bd}, gridDim {gd} the threads together "
                                 f"do not visit each of the {n} elements exactly once")
    passed(ex, f"{len(_STRIDE_CASES)} threads and {len(_COVER_CASES)} whole grids agree")


# Exercise 3: (threads per block, registers per thread, shared bytes per block), each with the
# resource that limits it on an H100 SM; the grader adds random launch shapes (case_seed).
# A block of 130 threads is 5 warps. 56 KiB + 1 KB fits into 228 KB exactly 4 times, 57,376 B
# + 1 KB just under 4 times and 7,624 B + 1 KB just under 27 times, so the reserved kilobyte and
# the 228 KB must be read exactly, not roughly.
_OCCUPANCY_CASES = [(256, 32, 0), (256, 126, 8192), (128, 36, 0), (32, 16, 0), (32, 16, 1024),
                    (192, 84, 0), (96, 64, 0), (512, 72, 4096), (256, 32, 45 * 1024),
                    (80, 24, 0), (130, 16, 0), (128, 32, 56 * 1024), (128, 32, 57376),
                    (32, 16, 7624), (1024, 30, 0), (32, 255, 0)]


def _occupancy_cases() -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(case_seed(3))
    drawn = [(int(rng.integers(1, 33)) * 32, int(rng.integers(16, 129)),
              int(rng.choice([0, 1024 * int(rng.integers(1, 100))]))) for _ in range(6)]
    return _OCCUPANCY_CASES + [c for c in drawn
                               if gpu.occupancy(*c).blocks > 0]  # each can be launched


def _occupancy_hint(threads: int, regs: int, shared: int, got: float) -> str:
    """Name the misreading whose result ``got`` is, where one matches."""
    sm = gpu.H100_SM
    warps = math.ceil(threads / 32)
    unit = sm.register_unit
    per_warp = math.ceil(regs * 32 / unit) * unit
    by_shared = (sm.shared_bytes // (shared + sm.shared_per_block_reserved) if shared
                 else sm.max_blocks)
    by_threads, by_regs = sm.max_warps // warps, sm.registers // per_warp // warps

    def occ(blocks):
        return blocks * warps / sm.max_warps

    right = occ(min(by_threads, sm.max_blocks, by_regs, by_shared))
    readings = [
        (occ(min(by_threads, sm.max_blocks, sm.registers // (regs * threads), by_shared)),
         "registers go to each warp in units of 256 (32·r rounded up), not per thread"),
        (occ(min(by_threads, sm.max_blocks, by_regs,
                 sm.shared_bytes // shared if shared else sm.max_blocks)),
         "each resident block also costs the 1 KB of shared memory the system reserves"),
        (occ(min(by_threads, by_regs, by_shared)),
         "an SM holds at most 32 blocks, however small they are"),
        (min(sm.max_warps * 32 // threads, sm.max_blocks, by_regs, by_shared) * threads / 32
         / sm.max_warps,
         f"a block of {threads} threads takes {warps} whole warps (the last one part idle)"),
        (min(by_threads * warps, sm.registers // per_warp,
             by_shared * warps) / sm.max_warps,
         "a block is resident whole or not at all: count whole blocks first, then their warps"),
        (occ(min(sm.max_blocks, by_regs, by_shared)),
         "the SM holds at most 64 warps (2,048 threads)"),
        (min(by_threads, sm.max_blocks, by_regs, by_shared),
         "that is the number of resident blocks; occupancy is resident warps over 64"),
        (100 * right, "that is a percentage; return a fraction between 0 and 1"),
    ]
    for value, why in readings:
        if not math.isclose(value, right) and math.isclose(got, value, rel_tol=1e-9):
            return "; " + why
    return ""


def check_occupancy(func) -> None:
    """``func(threads_per_block, registers_per_thread, shared_bytes)`` → occupancy on an H100."""
    ex = "Exercise 3 (occupancy)"
    for threads, regs, shared in _occupancy_cases():
        got = call_refusing(ex, func, _LIBRARY["occupancy"], threads, regs, shared)
        expected = gpu.occupancy(threads, regs, shared)
        number = (isinstance(got, numbers.Real) and not isinstance(got, (bool, np.bool_))
                  and math.isfinite(float(got)))  # a Fraction or np.float32 is a number too
        if number and math.isclose(float(got), expected.occupancy, rel_tol=1e-9):
            continue
        hint = _occupancy_hint(threads, regs, shared, float(got)) if number else (
            "; expected one number, resident warps / 64")
        raise AssertionError(
            f"{ex}: {threads} threads per block, {regs} registers per thread, {shared:,} bytes "
            f"of shared memory per block: got {fmt(got)}, expected {fmt(expected.occupancy)} "
            f"({expected.blocks} resident blocks, limited by {expected.limiter}){hint}")
    passed(ex, f"{len(_occupancy_cases())} launch shapes, each limit binding in at least one")


_EVEN_CASES = [(50.0, 5000.0, 12.0), (100.0, 1000.0, 25.0), (10.0, 20.0, 1.0),
               (80.0, 80.0, 10.0), (200.0, 50.0, 10.0)]


def check_break_even_intensity(func) -> None:
    """``func(cpu_gflops, gpu_gflops, link_gbps)`` → flop per byte where offloading pays."""
    ex = "Exercise 4 (break-even intensity)"
    for case in _EVEN_CASES:
        got = call_refusing(ex, func, _LIBRARY["break-even"], *case)
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
    for n, blocks, threads in _AXPY_CASES:
        _expect_grid_stride_split(ex, kernel, n, blocks, threads)
    passed(ex, f"{len(_AXPY_CASES)} launch shapes, grids smaller and larger than the array; "
               "each thread g handled elements g, g + G, g + 2G, ... (G threads in the grid)")


# ---- Exercise 2's work split: which thread handled which element ----------------------------
#
# Right values say nothing about how the work was shared: one thread looping over every element,
# or only block 0 working, or each thread taking a contiguous chunk (uncoalesced: a warp's 32
# loads land far apart) all give y + a x. So the check also runs the kernel's Python body once
# per (block, thread), one after another, with a stand-in for numba.cuda that knows the thread's
# indices, on an array that records the global thread id of every write. It runs the same on a
# GPU and on the simulator, and reads no clock.

class _Dim3:
    def __init__(self, x: int):
        self.x, self.y, self.z = x, 0, 0


class _Unmodelled(Exception):
    pass


class _OneThread(types.SimpleNamespace):
    """What a kernel sees as ``cuda`` for one thread of a 1-D launch."""

    def __init__(self, blocks: int, threads: int):
        super().__init__(blockDim=_Dim3(threads), gridDim=_Dim3(blocks), threadIdx=_Dim3(0),
                         blockIdx=_Dim3(0))
        self.blockDim.y = self.blockDim.z = self.gridDim.y = self.gridDim.z = 1

    def grid(self, ndim):
        if ndim != 1:
            raise _Unmodelled(f"cuda.grid({ndim}) (this kernel is 1-D: cuda.grid(1))")
        return self.blockIdx.x * self.blockDim.x + self.threadIdx.x

    def gridsize(self, ndim):
        if ndim != 1:
            raise _Unmodelled(f"cuda.gridsize({ndim}) (this kernel is 1-D: cuda.gridsize(1))")
        return self.gridDim.x * self.blockDim.x

    def syncthreads(self):
        pass  # threads run one after another here, so a barrier has nothing to wait for

    def __getattr__(self, name):
        raise _Unmodelled(f"cuda.{name}")


class _Recorded(np.ndarray):
    """An array that notes the global id of the thread behind every element write."""

    def __new__(cls, values, cuda_now, budget):
        out = np.asarray(values, dtype=np.float64).copy().view(cls)
        out.owners = [[] for _ in range(len(values))]
        out.cuda_now, out.budget = cuda_now, [budget]
        return out

    def __array_finalize__(self, obj):
        pass

    def __setitem__(self, key, value):
        index = int(key) if isinstance(key, (int, np.integer)) else None
        if index is None or not -len(self) <= index < len(self):
            raise IndexError(f"index {key!r} is outside 0..{len(self) - 1}")
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise _Unmodelled("more than 4 writes per element (does a loop never end?)")
        self.owners[index].append(self.cuda_now.grid(1))
        super().__setitem__(index, value)


def _with_cuda(func, fake):
    # The kernel's Python function with every global or closed-over numba.cuda (and numba)
    # replaced by the stand-in.
    import numba
    from numba import cuda as real_cuda

    numba_stand_in = types.SimpleNamespace(cuda=fake)

    def swap(value):
        if value is real_cuda:
            return fake
        if value is numba:
            return numba_stand_in
        return value

    namespace = {k: swap(v) for k, v in func.__globals__.items()}
    closure = (tuple(types.CellType(swap(c.cell_contents)) for c in func.__closure__)
               if func.__closure__ else None)
    return types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__,
                              closure)


def thread_owners(kernel, n: int, blocks: int, threads: int, *, a: float = 2.5, seed: int = 0):
    """Run ``kernel``'s body for every thread of a ``blocks × threads`` launch, in turn, and
    return, for every element of y, the list of global thread ids that wrote it."""
    fake = _OneThread(blocks, threads)
    body = _with_cuda(kernel.py_func, fake)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = _Recorded(rng.standard_normal(n), fake, budget=4 * n + 4)
    for b in range(blocks):
        for t in range(threads):
            fake.blockIdx.x, fake.threadIdx.x = b, t
            body(a, x, y)
    return y.owners


def _expect_grid_stride_split(ex: str, kernel, n: int, blocks: int, threads: int) -> None:
    grid = blocks * threads
    case = f"n={n}, {blocks} block(s) of {threads} threads (G = {grid})"
    try:
        owners = thread_owners(kernel, n, blocks, threads)
    except _Unmodelled as what:
        raise AssertionError(
            f"{ex}: {case}: the kernel uses {what}, which this exercise does not need and the "
            "check cannot follow; index with cuda.grid(1) and cuda.gridsize(1) (or threadIdx, "
            "blockIdx, blockDim, gridDim)") from None
    except Exception as err:  # noqa: BLE001  (the values already passed on the real launch)
        raise AssertionError(f"{ex}: {case}: following the work split, the kernel raised "
                             f"{type(err).__name__}: {err}") from err
    first = np.array([o[0] if o else -1 for o in owners])
    expected = np.arange(n) % grid
    if np.array_equal(first, expected) and all(len(o) == 1 for o in owners):
        return
    busy = sorted(set(first[first >= 0].tolist()))
    if len(busy) == 1 and n > 1:
        raise AssertionError(
            f"{ex}: {case}: thread {busy[0]} handled all {n} elements and the other threads none; "
            f"the work must be shared: thread g handles g, g + G, g + 2G, ...")
    if blocks > 1 and max(busy) < threads:
        raise AssertionError(
            f"{ex}: {case}: only block 0's threads handled elements; the other {blocks - 1} "
            "block(s) did nothing. Start at cuda.grid(1) and step by cuda.gridsize(1), the "
            "whole grid, so that every block takes its share")
    if n > grid and np.all(np.diff(first) >= 0):
        raise AssertionError(
            f"{ex}: {case}: each thread handled a contiguous chunk (thread {first[0]} took "
            f"elements 0..{int(np.sum(first == first[0])) - 1}); then the 32 threads of a warp "
            "load elements a chunk apart, which the memory cannot merge into one transaction "
            "(uncoalesced). In a grid-stride loop thread g handles g, g + G, g + 2G, ..., so a "
            "warp reads 32 neighbouring elements at every step")
    i = int(np.flatnonzero(first != expected)[0]) if np.any(first != expected) else int(
        next(k for k, o in enumerate(owners) if len(o) != 1))
    raise AssertionError(
        f"{ex}: {case}: element {i} was handled by thread(s) {owners[i]}, expected thread "
        f"{i % grid} (i mod G): in a grid-stride loop thread g handles g, g + G, g + 2G, ...")


# --- Exercise 5: predict, then measure ------------------------------------------------------

def offload_model(n: int, itemsize: int, link_gbps: float, device_gbps: float) -> float:
    """Seconds to offload the elementwise product of ``n`` elements of ``itemsize`` bytes.

    x and y cross the link to the device, the kernel reads x and y and writes x·y in device
    memory, and x·y crosses back: 3·n·itemsize bytes at ``link_gbps``, then the same bytes at
    ``device_gbps``, one after the other (a serial offload: no streams, no overlap).
    """
    nbytes = 3 * n * itemsize
    return nbytes / (link_gbps * 1e9) + nbytes / (device_gbps * 1e9)


def _parts(n, itemsize, link_gbps, device_gbps) -> tuple[float, float]:
    """(copy seconds, kernel seconds) of :func:`offload_model`."""
    nbytes = 3 * n * itemsize
    return nbytes / (link_gbps * 1e9), nbytes / (device_gbps * 1e9)


def _misread(how):
    return lambda *case: how(*_parts(*case))


_GIB = 2**30 / 1e9
_BITS = ("bits and bytes mixed: GB/s is gigaBYTES per second and itemsize is in bytes, so no "
         "factor 8 belongs in the prediction")
_GIBS = ("GB and GiB mixed: GB/s means 10^9 bytes per second, so no 2^30 belongs in the "
         "prediction")
OFFLOAD_MISREADINGS = (
    (_misread(lambda c, k: 8 * c + k), _BITS),
    (_misread(lambda c, k: c / 8 + k), _BITS),
    (_misread(lambda c, k: 8 * (c + k)), _BITS),
    (_misread(lambda c, k: (c + k) / 8), _BITS),
    (_misread(lambda c, k: (c + k) / _GIB), _GIBS),
    (_misread(lambda c, k: (c + k) * _GIB), _GIBS),
    (lambda n, itemsize, link, device: 3 * n / (link * 1e9) + 3 * n / (device * 1e9),
     "itemsize left out: n elements of itemsize bytes are n·itemsize bytes, and rates in "
     "GB/s divide bytes"),
    (_misread(lambda c, k: c / 3 + k),
     "only one array crossed the link in your prediction; x and y go to the device and x·y "
     "comes back: three arrays of n·itemsize bytes"),
    (_misread(lambda c, k: 2 * c / 3 + k),
     "two arrays crossed the link in your prediction: did you forget the copy back? x and y "
     "go over and x·y comes back: three arrays of n·itemsize bytes"),
    (_misread(lambda c, k: c + 2 * k / 3),
     "your kernel moves two arrays in device memory; it reads x and y and writes x·y: three"),
    (_misread(lambda c, k: c + k / 3),
     "your kernel moves one array in device memory; it reads x and y and writes x·y: three"),
    (_misread(lambda c, k: c),
     "that is the copies alone (or copies and kernel overlapped, where the copies are the "
     "longer); the offload here is serial, copy in, kernel, copy back, so the kernel's time "
     "in device memory comes on top"),
    (_misread(lambda c, k: k),
     "that is the kernel alone; the copies over the link come on top, and they dominate"),
    (_misread(lambda c, k: 1 / (c + k)),
     "inverted: that is a rate (operations per second), not seconds; time = bytes / rate"),
    (_misread(lambda c, k: 1 / c + 1 / k),
     "inverted: rate / bytes is not a time; each stage takes bytes / rate seconds"),
    (_misread(lambda c, k: (c + k) * 1e9),
     "that is in nanoseconds: GB/s is 10^9 bytes per second, so divide the bytes by "
     "rate × 10^9 to get seconds"),
    (_misread(lambda c, k: (c + k) / 1e9),
     "10^9 used twice: bytes / (rate in GB/s × 10^9) is already in seconds"),
)

#: Section 8's offload of the product: 2^24 float32 elements.
OFFLOAD_N = 1 << 24
OFFLOAD_ITEMSIZE = 4


def check_offload_prediction(predict_offload_seconds) -> None:
    """``predict_offload_seconds(n, itemsize, link_gbps, device_gbps)``: the serial offload's
    seconds for an elementwise product, graded against :func:`offload_model` exactly, at
    random sizes and rates; each misreading (bits, GiB, copies miscounted, ...) is refused by name.
    """
    from mlpar.exercises import grade_prediction

    name = "Exercise 5 (predict the offload of a product)"
    rng = np.random.default_rng(case_seed(10))
    cases = [(int(rng.integers(10**5, 10**8)), int(rng.choice([4, 8])),
              float(np.round(rng.uniform(4.0, 64.0), 2)),
              float(np.round(rng.uniform(150.0, 3500.0), 1))) for _ in range(4)]
    cases.append((OFFLOAD_N, OFFLOAD_ITEMSIZE, 15.75, 320.0))  # the T4 of section 8
    refusing = {offload_model: "the check's model (checks.offload_model)"}

    def answer(*args):
        return call_refusing(name, predict_offload_seconds, refusing, *args)

    grade_prediction(name, answer, cases, offload_model, OFFLOAD_MISREADINGS,
                     what="the predicted seconds",
                     names=("n", "itemsize", "link_gbps", "device_gbps"))
    passed(name, f"3·n·itemsize bytes over the link, then through device memory, at "
                 f"{len(cases)} sizes and rates; now compare with a measurement")


def report_offload_prediction(predict_offload_seconds, *, link_gbps: float, device_gbps: float,
                              measured=None, n: int = OFFLOAD_N,
                              itemsize: int = OFFLOAD_ITEMSIZE) -> float | None:
    """Print the predicted offload of the product, and how far ``measured`` fell from it.

    ``measured``: the :class:`mlpar.gpu.transfers.OffloadTiming` of the same product measured
    on a GPU, or ``None`` (no GPU: the simulator's times mean nothing, and it says so). Timing
    never grades: this only reports. The prediction used is the student's where it matches the
    model, else the model's (and it says so). Returns measured / predicted seconds, or None.
    """
    from mlpar.core import validation

    link_gbps = validation.positive("link_gbps", link_gbps)
    device_gbps = validation.positive("device_gbps", device_gbps)
    n = validation.positive_int("n", n)
    itemsize = validation.positive_int("itemsize", itemsize)
    if measured is not None:
        if not all(hasattr(measured, a) for a in ("total_s", "transfer_share", "link_bytes")):
            raise TypeError(f"measured: expected an OffloadTiming (transfers.time_product) or "
                            f"None, got {validation.describe(measured)}")
        if measured.link_bytes != 3 * n * itemsize:
            raise ValueError(f"measured: expected the offload of {n:,} elements of {itemsize} "
                             f"bytes ({3 * n * itemsize:,} bytes over the link), got one of "
                             f"{measured.link_bytes:,} bytes; pass its n and itemsize")
    predicted = offload_model(n, itemsize, link_gbps, device_gbps)
    copies, kernel = _parts(n, itemsize, link_gbps, device_gbps)
    note = ""
    try:
        got = float(predict_offload_seconds(n, itemsize, link_gbps, device_gbps))
    except Exception:  # noqa: BLE001 - a broken prediction is graded by the check, not here
        got = float("nan")
    if not math.isclose(got, predicted, rel_tol=1e-9):
        note = " (your function's value differs from the model; the model's is used)"
    share = copies / predicted
    print(f"predicted {predicted * 1e3:.3g} ms for {n:,} × {itemsize} B at link {link_gbps:.4g} "
          f"GB/s, device {device_gbps:.4g} GB/s: copies {100 * share:.3g} % of it{note}")
    if measured is None:
        print("measured: none; simulator: no meaningful timing (its times describe Python "
              "threads on the CPU, not a GPU)")
        return None
    ratio = measured.total_s / predicted
    print(f"measured  {measured.total_s * 1e3:.3g} ms: {ratio:.0%} of the prediction; copies "
          f"{100 * measured.transfer_share:.3g} % of it")
    if ratio > 1.25:
        why = ("slower than predicted: the copy back (device to host) is often slower than "
               "the copy in whose rate was used, each copy and launch has a fixed cost, and "
               "the product kernel reaches less than a copy's bandwidth")
    elif ratio < 0.8:
        why = ("faster than predicted: the rates passed in were measured at a busier moment, "
               "or on other sizes, than this offload")
    else:
        why = ("within the band [80 %, 125 %]: the copies dominate, and bytes over the link "
               "predict them")
    print(f"why: {why}")
    return ratio
