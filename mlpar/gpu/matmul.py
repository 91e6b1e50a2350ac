"""Faster matmul kernels, step by step, after the shared-memory tiles of ``cuda_kernels``.

Step 1 (``cuda_kernels.tiled_matmul``): a block of ``t × t`` threads shares ``t × t`` tiles of A
and B; each thread computes one element of C, so every multiply-add still costs two loads from
shared memory.

Step 2 (:func:`register_blocked_matmul`, 2-D register blocking or thread coarsening): a block
computes a larger ``bm × bn`` tile of C, and each of its threads a ``tm × tn`` sub-block kept
in registers. At each k it loads ``tm`` values of A and ``tn`` of B from shared memory into
registers and does ``tm · tn`` multiply-adds with them: an outer product. Fewer threads each do
more work, and the arithmetic per shared-memory load grows from 1/2 to ``tm·tn / (tm + tn)``.

Step 3 (:func:`wide_matmul`; the name is historical): bigger register tiles, 128 × 128 of C per
block and 8 × 8 per thread, which halves step 2's global loads; (a) A's tile is stored
transposed in shared memory, so a thread's ``tm`` values of A sit side by side (it cuts the
registers an 8 × 8 thread needs from 198 to 126 with ptxas for sm_90), (b) a thread's ``tn``
columns are spread out so that neighbouring threads read neighbouring words of B's tile (no
bank conflicts on the reads) and write neighbouring elements of C, and (c) a tile shape chosen
by measurement (:func:`tune`). Each thread copies runs of 4 neighbouring elements into the
tiles, the pattern 128-bit vector loads need, but numba offers no way to force vector
instructions and the kernel compiles to scalar loads (``tests/gpu/test_ptx.py`` checks that no
``ld.global.v4`` appears, so the lesson's text stays true); as scalar stores the runs give B's
tile a 4-way shared-memory bank conflict and A's transposed tile a 2-way one. Its gain over
step 2 comes from the bigger tile. How much each step gains is for the measurement on a GPU to
show (kernel times by CUDA events).

Every kernel handles any m, k, p (edge tiles load zeros and skip out-of-range writes) and is
checked against numpy on the simulator at small sizes; speed is measured only on a GPU,
against cuBLAS in FP32 through PyTorch or CuPy (:func:`cublas_gflops`) when one is installed.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from mlpar.core import timing, validation
from mlpar.gpu import backend as gpu
from mlpar.gpu import cuda_kernels as ck

cuda = ck.cuda
BACKEND = ck.BACKEND

# Shapes for a GPU (float32): 256 threads per block, 4 or 8 KiB of shared memory.
REGISTER_SHAPE = gpu.Blocking(64, 64, 8, 4, 4)
WIDE_SHAPE = gpu.Blocking(128, 128, 8, 8, 8)
# Shapes :func:`tune` tries for step 3 (all valid for float32 and float64 in 48 KiB).
TUNE_SHAPES = (gpu.Blocking(128, 128, 8, 8, 8), gpu.Blocking(128, 64, 8, 8, 4),
               gpu.Blocking(64, 128, 8, 4, 8), gpu.Blocking(128, 128, 16, 8, 8),
               gpu.Blocking(64, 64, 16, 4, 4))
# The simulator runs each thread as a Python thread: 16 threads per block keep it quick.
SIMULATOR_SHAPE = gpu.Blocking(16, 16, 4, 4, 4)


def default_shape(step: str) -> gpu.Blocking:
    """The shape a step uses when none is given, on this CUDA path."""
    validation.choice("step", step, ("register", "wide"))
    if BACKEND == "simulator":
        return SIMULATOR_SHAPE
    return REGISTER_SHAPE if step == "register" else WIDE_SHAPE


def _shape(shape, dtype, wide):
    if not isinstance(shape, gpu.Blocking):
        raise TypeError(f"shape: expected a mlpar.gpu.backend.Blocking, got "
                        f"{type(shape).__name__}")
    return gpu.blocking(shape.bm, shape.bn, shape.bk, shape.tm, shape.tn,
                        itemsize=np.dtype(dtype).itemsize, wide=wide)


@cache
def register_blocked_kernel(shape: gpu.Blocking, dtype):
    """Compile (once per shape and dtype) step 2: each thread computes tm × tn outputs.

    Parallel strategy: block (bx, by) owns C[by·bm : (by+1)·bm, bx·bn : (bx+1)·bn]; its
    (bm/tm)·(bn/tn) threads are numbered 1-D and thread t owns the tm × tn sub-block at row
    (t // (bn/tn))·tm, column (t % (bn/tn))·tn. Per k-step all threads copy the bm × bk tile
    of A and the bk × bn tile of B into shared memory (several elements each, neighbouring
    threads on neighbouring addresses), wait, then for each of the bk values of k load tm
    values of A and tn of B into registers and add their outer product to the accumulators.
    """
    nb_type = ck.numba.from_dtype(ck._float_dtype("dtype", dtype))
    bm, bn, bk, tm, tn = (_shape(shape, dtype, False).bm, shape.bn, shape.bk, shape.tm,
                          shape.tn)
    threads = shape.threads
    across = bn // tn  # threads along a row of the block's C tile

    @cuda.jit
    def kernel(a, b, c):
        sa = cuda.shared.array((bm, bk), dtype=nb_type)
        sb = cuda.shared.array((bk, bn), dtype=nb_type)
        acc = cuda.local.array((tm, tn), dtype=nb_type)
        ra = cuda.local.array(tm, dtype=nb_type)
        rb = cuda.local.array(tn, dtype=nb_type)
        t = cuda.threadIdx.x
        zero = nb_type(0)  # a literal 0 would turn the padded loads into float64 work
        r0, c0 = (t // across) * tm, (t % across) * tn
        row0, col0 = cuda.blockIdx.y * bm, cuda.blockIdx.x * bn
        m, kdim, p = a.shape[0], a.shape[1], b.shape[1]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = zero
        for k0 in range(0, kdim, bk):
            for e in range(t, bm * bk, threads):  # A tile, row by row
                r, kk = e // bk, e % bk
                sa[r, kk] = a[row0 + r, k0 + kk] if row0 + r < m and k0 + kk < kdim else zero
            for e in range(t, bk * bn, threads):  # B tile, row by row
                kk, j = e // bn, e % bn
                sb[kk, j] = b[k0 + kk, col0 + j] if k0 + kk < kdim and col0 + j < p else zero
            cuda.syncthreads()
            for kk in range(bk):
                for i in range(tm):
                    ra[i] = sa[r0 + i, kk]
                for j in range(tn):
                    rb[j] = sb[kk, c0 + j]
                for i in range(tm):
                    for j in range(tn):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(tm):
            for j in range(tn):
                if row0 + r0 + i < m and col0 + c0 + j < p:
                    c[row0 + r0 + i, col0 + c0 + j] = acc[i, j]

    return kernel


@cache
def wide_kernel(shape: gpu.Blocking, dtype):
    """Compile (once per shape and dtype) step 3: bigger tiles, copied in runs of 4, A transposed.

    Parallel strategy as in :func:`register_blocked_kernel`, but (a) each thread copies runs
    of 4 neighbouring elements (4 values of k from a row of A, 4 columns from a row of B);
    (b) A's tile is stored transposed, ``sa[k, row]``, so at each k a thread reads its tm
    values of A from neighbouring shared-memory words; (c) a thread's tn columns of C are
    spread bn/tn apart instead of side by side, so at each k the threads of a row of the block
    read neighbouring words of B's tile (no two in one memory bank) and, at the end, write
    neighbouring elements of C.
    """
    nb_type = ck.numba.from_dtype(ck._float_dtype("dtype", dtype))
    bm, bn, bk, tm, tn = (_shape(shape, dtype, True).bm, shape.bn, shape.bk, shape.tm,
                          shape.tn)
    threads = shape.threads
    across = bn // tn
    runs_a, runs_b = bk // 4, bn // 4  # 4-element runs per row of each tile

    @cuda.jit
    def kernel(a, b, c):
        sa = cuda.shared.array((bk, bm), dtype=nb_type)  # transposed: sa[k, row]
        sb = cuda.shared.array((bk, bn), dtype=nb_type)
        acc = cuda.local.array((tm, tn), dtype=nb_type)
        ra = cuda.local.array(tm, dtype=nb_type)
        rb = cuda.local.array(tn, dtype=nb_type)
        t = cuda.threadIdx.x
        zero = nb_type(0)  # a literal 0 would turn the padded loads into float64 work
        r0, c0 = (t // across) * tm, t % across  # rows r0..r0+tm-1; columns c0 + j·across
        row0, col0 = cuda.blockIdx.y * bm, cuda.blockIdx.x * bn
        m, kdim, p = a.shape[0], a.shape[1], b.shape[1]
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = zero
        for k0 in range(0, kdim, bk):
            for e in range(t, bm * runs_a, threads):
                r, kk = e // runs_a, (e % runs_a) * 4
                inside = row0 + r < m
                for q in range(4):
                    sa[kk + q, r] = a[row0 + r, k0 + kk + q] if inside and k0 + kk + q < kdim \
                        else zero
            for e in range(t, bk * runs_b, threads):
                kk, j = e // runs_b, (e % runs_b) * 4
                inside = k0 + kk < kdim
                for q in range(4):
                    sb[kk, j + q] = b[k0 + kk, col0 + j + q] if inside and col0 + j + q < p \
                        else zero
            cuda.syncthreads()
            for kk in range(bk):
                for i in range(tm):
                    ra[i] = sa[kk, r0 + i]
                for j in range(tn):
                    rb[j] = sb[kk, c0 + j * across]
                for i in range(tm):
                    for j in range(tn):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(tm):
            for j in range(tn):
                if row0 + r0 + i < m and col0 + c0 + j * across < p:
                    c[row0 + r0 + i, col0 + c0 + j * across] = acc[i, j]

    return kernel


def _prepare(a, b, shape, step):
    a, b, _, _ = ck._matmul_args(a, b, 1)
    shape = default_shape(step) if shape is None else _shape(shape, a.dtype, step == "wide")
    grid = (gpu.blocks_to_cover(b.shape[1], shape.bn), gpu.blocks_to_cover(a.shape[0], shape.bm))
    factory = register_blocked_kernel if step == "register" else wide_kernel
    return a, b, shape, grid, factory(shape, a.dtype)


def _run(a, b, shape, step):
    a, b, shape, grid, kernel = _prepare(a, b, shape, step)
    d_c = cuda.device_array((a.shape[0], b.shape[1]), dtype=a.dtype)
    ck._launch(kernel, grid, shape.threads, cuda.to_device(a), cuda.to_device(b), d_c)
    return d_c.copy_to_host()


def register_blocked_matmul(a: np.ndarray, b: np.ndarray, *,
                            shape: gpu.Blocking | None = None) -> np.ndarray:
    """``a @ b`` with step 2 (register blocking); ``shape`` defaults to this path's."""
    return _run(a, b, shape, "register")


def wide_matmul(a: np.ndarray, b: np.ndarray, *, shape: gpu.Blocking | None = None) -> np.ndarray:
    """``a @ b`` with step 3 (128×128 tiles, 8×8 per thread, A transposed in shared memory)."""
    return _run(a, b, shape, "wide")


STEPS = ("naive", "tiled", "register", "wide")


def kernel_gflops(step: str, a: np.ndarray, b: np.ndarray, *, tile: int = 16,
                  shape: gpu.Blocking | None = None, repeat: int = 5) -> float:
    """GFLOP/s of one step's kernel alone (inputs already on the device, compiled, warm)."""
    validation.choice("step", step, STEPS)
    repeat = validation.positive_int("repeat", repeat)
    tile = validation.positive_int("tile", tile, maximum=32)  # used by the first two steps
    if shape is not None:  # used by the last two
        _shape(shape, np.float64, False)
    if step in ("naive", "tiled"):
        a, b, tile, grid = ck._matmul_args(a, b, tile)
        kernel = ck.tiled_matmul_kernel(tile, a.dtype) if step == "tiled" else \
            ck.naive_matmul_kernel(a.dtype)
        block = (tile, tile)
    else:
        a, b, shape, grid, kernel = _prepare(a, b, shape, step)
        block = shape.threads
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((a.shape[0], b.shape[1]), dtype=a.dtype)
    kernel[grid, block](d_a, d_b, d_c)  # compile and warm up before the clock starts
    cuda.synchronize()
    seconds = ck.event_seconds(lambda: kernel[grid, block](d_a, d_b, d_c), repeat)
    if not np.isfinite(seconds):  # the simulator has no device clock; its time is Python's
        seconds = timing.best_of(lambda: kernel[grid, block](d_a, d_b, d_c), repeat,
                                 sync=cuda.synchronize)
    return 2 * a.shape[0] * a.shape[1] * b.shape[1] / seconds / 1e9


def tune(a: np.ndarray, b: np.ndarray, *, shapes=TUNE_SHAPES,
         repeat: int = 3) -> list[tuple[gpu.Blocking, float]]:
    """Step 3's GFLOP/s for each candidate shape, fastest first.

    On the simulator a ranking would rank Python threads, so each shape is only run once and
    checked against numpy (``ValueError`` if one differs), and its rate is NaN.
    """
    shapes = list(shapes) if isinstance(shapes, (list, tuple)) else None
    if not shapes:
        raise TypeError("shapes: expected a non-empty list of mlpar.gpu.backend.Blocking")
    repeat = validation.positive_int("repeat", repeat)
    if BACKEND == "simulator":
        for s in shapes:
            if not np.allclose(wide_matmul(a, b, shape=s), np.asarray(a) @ np.asarray(b)):
                raise ValueError(f"shapes: {s} does not compute a @ b")
        return [(s, float("nan")) for s in shapes]
    results = [(s, kernel_gflops("wide", a, b, shape=s, repeat=repeat)) for s in shapes]
    return sorted(results, key=lambda pair: -pair[1])


def cublas_gflops(a: np.ndarray, b: np.ndarray, *, repeat: int = 5,
                  tf32: bool = False) -> tuple[str | None, float | None]:
    """GFLOP/s of ``a @ b`` through cuBLAS, via PyTorch or else CuPy; (None, None) if neither.

    Only the multiply is timed (the framework's own CUDA events), on arrays already on the
    device, as for the numba kernels. The name says which arithmetic cuBLAS used: for float32,
    ``tf32=False`` asks for true FP32 on the CUDA cores (what the numba kernels do), and
    ``tf32=True`` lets cuBLAS round the inputs to TF32 and use the tensor cores (several times
    faster on an H100, with a 10-bit mantissa). CuPy decides TF32 from the ``CUPY_TF32``
    variable when it is imported, so a request it cannot honour is answered (None, None).
    """
    import os

    a, b, _, _ = ck._matmul_args(a, b, 1)
    repeat = validation.positive_int("repeat", repeat)
    tf32 = validation.flag("tf32", tf32)
    if BACKEND == "simulator":
        return None, None
    flops = 2 * a.shape[0] * a.shape[1] * b.shape[1]
    precision = ("TF32 on tensor cores" if tf32 else "FP32 on CUDA cores, TF32 off") \
        if a.dtype == np.float32 else "FP64"
    try:
        import torch

        if not torch.cuda.is_available():
            raise ImportError("no CUDA device for PyTorch")
        da, db = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            best = _framework_event_seconds(lambda: torch.matmul(da, db), repeat,
                                            lambda: torch.cuda.Event(enable_timing=True),
                                            torch.cuda.synchronize)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
        return f"PyTorch {torch.__version__} (cuBLAS, {precision})", flops / best / 1e9
    except Exception:  # PyTorch missing or without a device: try CuPy
        pass
    try:
        import cupy

        if (os.environ.get("CUPY_TF32", "0") == "1") != tf32:
            return None, None
        da, db = cupy.asarray(a), cupy.asarray(b)
        best = _framework_event_seconds(lambda: cupy.matmul(da, db), repeat, cupy.cuda.Event,
                                        cupy.cuda.Device().synchronize)
        return f"CuPy {cupy.__version__} (cuBLAS, {precision})", flops / best / 1e9
    except Exception:
        return None, None


def _framework_event_seconds(multiply, repeat, make_event, sync) -> float:
    # Best of `repeat` multiplies by the framework's CUDA events (after one warm-up).
    multiply()
    sync()
    best = float("inf")
    for _ in range(repeat):
        start, end = make_event(), make_event()
        start.record()
        multiply()
        end.record()
        end.synchronize()
        elapsed = (start.elapsed_time(end) if hasattr(start, "elapsed_time")
                   else _cupy_elapsed(start, end))
        best = min(best, elapsed / 1e3)
    return best


def _cupy_elapsed(start, end) -> float:
    import cupy

    return cupy.cuda.get_elapsed_time(start, end)
