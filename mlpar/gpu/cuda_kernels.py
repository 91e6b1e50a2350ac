"""Three CUDA kernels in numba: an elementwise product, a sum reduction, a tiled matmul.

Timing them (copies apart from kernels, pinned memory, streams) is ``mlpar.gpu.transfers``;
faster matmul kernels, step by step, are ``mlpar.gpu.matmul``.

Each kernel has a host wrapper that validates its inputs, copies them to the device, launches
and copies the result back; each equals a numpy reference (``x * y``, ``x.sum()``, ``a @ b``).
They run on a real GPU or, with no GPU, on numba's CUDA simulator, which executes every CUDA
thread as a Python thread: same results, no GPU speed, so use small sizes there.

Importing this module imports ``numba.cuda``, so it first calls
:func:`mlpar.gpu.backend.choose_cuda_backend` (a GPU if present, else the simulator) when nobody
chose yet; call that yourself first if you want a particular path.

    >>> from mlpar.gpu import backend as gpu; gpu.choose_cuda_backend()
    >>> from mlpar.gpu import cuda_kernels as ck
    >>> ck.tiled_matmul(a, b, tile=8)
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from functools import cache

import numpy as np

from mlpar.core import validation
from mlpar.gpu import backend as gpu
from mlpar.gpu import stack

BACKEND = gpu.choose_cuda_backend()
STACK_NOTES = stack.require_usable(BACKEND)  # refuses numba-cuda with numpy >= 2.5, says why

import numba  # noqa: E402  (must follow the backend choice)
from numba import cuda  # noqa: E402
from numba.core.errors import NumbaPerformanceWarning  # noqa: E402

FLOAT_TYPES = (np.float32, np.float64)
# The simulator runs every CUDA thread as a Python thread: more than this many in one launch
# would take hours, so it is refused instead. A GPU's limit is its grid size, 2^31 - 1 blocks.
SIMULATOR_MAX_THREADS = 1 << 16
GPU_MAX_BLOCKS = 2**31 - 1


def _performance_warning_classes() -> tuple[type[Warning], ...]:
    """numba's NumbaPerformanceWarning, and numba-cuda's own copy of it when that exists."""
    classes = [NumbaPerformanceWarning]
    try:  # numba-cuda >= 0.20 keeps its own errors module; its warning is another class
        from numba.cuda.core.errors import NumbaPerformanceWarning as cuda_warning
    except ImportError:
        cuda_warning = None
    if cuda_warning is not None and cuda_warning not in classes:
        classes.append(cuda_warning)
    return tuple(classes)


PERFORMANCE_WARNINGS = _performance_warning_classes()
# numba's text for a grid of fewer than 128 blocks (its CUDA_LOW_OCCUPANCY_WARNINGS check).
# numba-cuda 0.30 wraps it in a terminal's bold escape ("\x1b[1mGrid size ..."), and a filter's
# message must match from the start, so the escape is allowed in front (found on an H100).
OCCUPANCY_MESSAGE = r"(?:\x1b\[[\d;]*m)?Grid size \d+ will likely result in GPU under-utili[sz]ation"


@contextlib.contextmanager
def small_grids():
    """Silence numba's low-occupancy warning, and only it, inside the ``with`` block.

    A grid of a few blocks leaves most of a GPU's multiprocessors idle, and numba says so at
    every launch. For a correctness demonstration on a tiny array that is expected, so the
    lesson wraps those launches in ``with ck.small_grids():``; timing launches fill the device
    and are never wrapped. Nothing is filtered outside the block.
    """
    with warnings.catch_warnings():
        for category in PERFORMANCE_WARNINGS:
            warnings.filterwarnings("ignore", message=OCCUPANCY_MESSAGE, category=category)
        yield


def source(func) -> str:
    """Python source of a kernel (GPU dispatcher or simulator kernel) or of a plain function."""
    return inspect.getsource(getattr(func, "py_func", None) or getattr(func, "fn", func))


def _float_dtype(name: str, value) -> np.dtype:
    """``value`` as float32 or float64, the dtypes the kernels are compiled for; else TypeError."""
    try:
        dtype = None if value is None else np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is None or dtype not in FLOAT_TYPES:
        raise TypeError(f"{name}: expected float32 or float64, got {value!r}")
    return dtype


def _grid_blocks(name: str, value, threads_per_block: int) -> int:
    """Validate a launch's block count against the path's limit (see SIMULATOR_MAX_THREADS)."""
    threads_per_block = validation.positive_int("threads_per_block", threads_per_block)
    limit = (max(1, SIMULATOR_MAX_THREADS // threads_per_block) if BACKEND == "simulator"
             else GPU_MAX_BLOCKS)
    value = validation.positive_int(name, value)
    if value > limit:
        where = ("on the simulator, where each CUDA thread is a Python thread"
                 if BACKEND == "simulator" else "(the GPU's largest grid)")
        raise ValueError(f"{name}: expected at most {limit:,} blocks of {threads_per_block} "
                         f"threads {where}, got {value:,}")
    return value


def _launch(kernel, grid, block, *args) -> None:
    kernel[grid, block](*args)
    cuda.synchronize()


def event_seconds(launch, repeat: int = 5, *, launches: int = 1) -> float:
    """Best device time of ``launches`` back-to-back ``launch()`` calls, per launch, in seconds,
    read from CUDA events; NaN on the simulator, whose times describe Python threads.

    Two events recorded in the stream before and after the launches are time-stamped by the
    GPU itself, so the host's launch overhead (tens of microseconds in numba) is not counted
    as kernel time, as it would be by a host clock around ``launch(); cuda.synchronize()``.
    Call it after a warm-up launch: the first one compiles.
    """
    validation.callable_("launch", launch)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    launches = validation.positive_int("launches", launches, maximum=10_000)
    if BACKEND == "simulator":
        return float("nan")
    best = float("inf")
    for _ in range(repeat):
        start, end = cuda.event(timing=True), cuda.event(timing=True)
        start.record()
        for _ in range(launches):
            launch()
        end.record()
        end.synchronize()
        best = min(best, cuda.event_elapsed_time(start, end) / 1e3 / launches)  # ms → s
    return best


def _pair(name_x, x, name_y, y, ndim):
    x = validation.array(name_x, x, ndim=ndim, dtype=FLOAT_TYPES, contiguous=True, min_size=1)
    y = validation.array(name_y, y, ndim=ndim, dtype=x.dtype, contiguous=True, min_size=1)
    return x, y


# ------------------------------------------------------------------ elementwise product


@cuda.jit
def product_kernel(x, y, out):
    """out[i] = x[i] * y[i] for every i, with a grid-stride loop.

    Parallel strategy: thread g of a grid of G threads handles i = g, g + G, g + 2G, ...
    so any grid size covers any n, and at each step a warp reads 32 neighbouring elements
    (coalesced). 1 flop per 3 elements moved: memory-bound on every GPU.
    """
    start = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    stride = cuda.gridsize(1)  # gridDim.x * blockDim.x
    for i in range(start, x.shape[0], stride):
        out[i] = x[i] * y[i]


def default_blocks(n: int, threads_per_block: int) -> int:
    """Grid size used when none is given: enough blocks for one element per thread, capped.

    On a GPU the cap is 32 blocks per multiprocessor (enough to keep every one busy; the
    grid-stride loop does the rest). On the simulator every thread is a Python thread, so 4
    blocks that loop more are much faster than many blocks that loop once.
    """
    n = validation.integer("n", n, minimum=0)
    threads_per_block = gpu.block_size("threads_per_block", threads_per_block)
    cap = 4 if BACKEND == "simulator" else 32 * multiprocessors()
    return min(gpu.blocks_to_cover(n, threads_per_block), cap)


def multiprocessors() -> int | None:
    """Streaming multiprocessors of this GPU; None on the simulator (it has none)."""
    if BACKEND == "simulator":
        return None
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def occupancy_warnings(blocks: int = 3, threads_per_block: int = 128) -> list[str]:
    """Launch ``product_kernel`` on ``blocks`` blocks, unfiltered; numba's warnings, as text.

    On a GPU numba warns when a grid has fewer than 128 blocks; the simulator never warns.
    """
    tpb = gpu.block_size("threads_per_block", threads_per_block)
    blocks = _grid_blocks("blocks", blocks, tpb)
    x = np.ones(blocks * tpb)
    d_x, d_out = cuda.to_device(x), cuda.device_array_like(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _launch(product_kernel, blocks, tpb, d_x, d_x, d_out)
    return [f"{w.category.__name__}: {w.message}" for w in caught
            if issubclass(w.category, PERFORMANCE_WARNINGS)]


def elementwise_product(x: np.ndarray, y: np.ndarray, *, threads_per_block: int = 128,
                        blocks: int | None = None) -> np.ndarray:
    """``x * y`` on the device: 1-D float arrays of one shape and dtype → new array."""
    x, y = _pair("x", x, "y", y, 1)
    validation.same_shape("x", x, "y", y)
    tpb = gpu.block_size("threads_per_block", threads_per_block)
    blocks = default_blocks(x.size, tpb) if blocks is None else _grid_blocks(
        "blocks", blocks, tpb)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)
    d_out = cuda.device_array_like(x)
    _launch(product_kernel, blocks, tpb, d_x, d_y, d_out)
    return d_out.copy_to_host()


# ------------------------------------------------------------------------- reduction


@cache
def sum_kernel(threads_per_block: int, dtype: np.dtype):
    """Compile (once per block size and dtype) a kernel writing one partial sum per block.

    Parallel strategy: (1) each thread adds up its grid-stride share in a register; (2) the
    block's threads put those sums in shared memory and add them pairwise in a tree, halving
    the active threads each step (log2(threads_per_block) steps, a barrier after each);
    (3) thread 0 writes the block's total. A second launch with one block adds the partials.
    The shared array's size must be a compile-time constant, hence one kernel per block size.
    """
    tpb = gpu.block_size("threads_per_block", threads_per_block, power_of_two=True)
    nb_type = numba.from_dtype(_float_dtype("dtype", dtype))

    @cuda.jit
    def kernel(x, partial):
        shared = cuda.shared.array(tpb, dtype=nb_type)
        tid = cuda.threadIdx.x
        acc = nb_type(0)
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            acc += x[i]
        shared[tid] = acc
        cuda.syncthreads()
        step = tpb // 2
        while step > 0:
            if tid < step:
                shared[tid] += shared[tid + step]
            cuda.syncthreads()  # every thread, not only the active ones, must reach it
            step //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = shared[0]

    return kernel


def reduce_sum(x: np.ndarray, *, threads_per_block: int = 128, blocks: int | None = None):
    """``x.sum()`` on the device, as a numpy scalar of x's dtype (1-D float array)."""
    x = validation.array("x", x, ndim=1, dtype=FLOAT_TYPES, contiguous=True, min_size=1)
    tpb = gpu.block_size("threads_per_block", threads_per_block, power_of_two=True)
    blocks = default_blocks(x.size, tpb) if blocks is None else _grid_blocks(
        "blocks", blocks, tpb)
    kernel = sum_kernel(tpb, x.dtype)
    d_partial = cuda.device_array(blocks, dtype=x.dtype)
    _launch(kernel, blocks, tpb, cuda.to_device(x), d_partial)
    d_total = cuda.device_array(1, dtype=x.dtype)
    with small_grids():  # adding up the partial sums takes one block by design
        _launch(kernel, 1, tpb, d_partial, d_total)
    return d_total.copy_to_host()[0]


# ------------------------------------------------------------------- matrix multiply


@cache
def naive_matmul_kernel(dtype: np.dtype):
    """Compile (once per dtype) c = a @ b with one thread per output element, no sharing.

    Thread (x, y) of the 2-D grid computes c[y, x] from row y of a and column x of b:
    2k global loads per output, so every element of a is read p times and of b m times.
    """
    nb_type = numba.from_dtype(_float_dtype("dtype", dtype))

    @cuda.jit
    def kernel(a, b, c):
        col, row = cuda.grid(2)  # x runs along a row of c, so a warp writes neighbours
        if row < c.shape[0] and col < c.shape[1]:
            acc = nb_type(0)
            for j in range(a.shape[1]):
                acc += a[row, j] * b[j, col]
            c[row, col] = acc

    return kernel


@cache
def tiled_matmul_kernel(tile: int, dtype: np.dtype):
    """Compile (once per tile and dtype) c = a @ b through shared-memory tiles.

    Parallel strategy: block (bx, by) of ``tile × tile`` threads owns the output tile whose
    top-left corner is (by·tile, bx·tile); thread (tx, ty) owns one element of it. The block
    walks along k one tile at a time: all threads copy one element each of a's and b's tile
    into shared memory, wait (barrier), each adds ``tile`` products from the fast shared
    copies, wait again (so nobody overwrites a tile still being read). Every global element
    is loaded ``tile`` times less often than in the naive kernel. Edges: threads outside a,
    b or c load zeros and skip the write, so any m, k, p work, multiples of ``tile`` or not.
    """
    tile = validation.positive_int("tile", tile, maximum=32)  # tile*tile threads <= 1024
    nb_type = numba.from_dtype(_float_dtype("dtype", dtype))

    @cuda.jit
    def kernel(a, b, c):
        sa = cuda.shared.array((tile, tile), dtype=nb_type)
        sb = cuda.shared.array((tile, tile), dtype=nb_type)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        zero = nb_type(0)  # a literal 0 would make each padded load a float64 (slow on a GPU)
        col = cuda.blockIdx.x * tile + tx
        row = cuda.blockIdx.y * tile + ty
        acc = nb_type(0)
        for t in range((a.shape[1] + tile - 1) // tile):
            ka, kb = t * tile + tx, t * tile + ty
            sa[ty, tx] = a[row, ka] if row < a.shape[0] and ka < a.shape[1] else zero
            sb[ty, tx] = b[kb, col] if kb < b.shape[0] and col < b.shape[1] else zero
            cuda.syncthreads()
            for j in range(tile):
                acc += sa[ty, j] * sb[j, tx]
            cuda.syncthreads()
        if row < c.shape[0] and col < c.shape[1]:
            c[row, col] = acc

    return kernel


def _matmul_args(a, b, tile):
    a, b = _pair("a", a, "b", b, 2)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"b: expected {a.shape[1]} rows to match a's {a.shape[1]} columns, got shape "
            f"{b.shape}"
        )
    tile = validation.positive_int("tile", tile)
    if tile * tile > gpu.MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"tile: expected tile × tile <= {gpu.MAX_THREADS_PER_BLOCK} threads per block "
            f"(tile <= 32), got {tile}"
        )
    grid = (gpu.blocks_to_cover(b.shape[1], tile), gpu.blocks_to_cover(a.shape[0], tile))
    return a, b, tile, grid


def tiled_matmul(a: np.ndarray, b: np.ndarray, *, tile: int = 16) -> np.ndarray:
    """``a @ b`` for (m, k) and (k, p) float arrays of one dtype, via shared-memory tiles."""
    a, b, tile, grid = _matmul_args(a, b, tile)
    d_c = cuda.device_array((a.shape[0], b.shape[1]), dtype=a.dtype)
    _launch(tiled_matmul_kernel(tile, a.dtype), grid, (tile, tile),
            cuda.to_device(a), cuda.to_device(b), d_c)
    return d_c.copy_to_host()


def naive_matmul(a: np.ndarray, b: np.ndarray, *, tile: int = 16) -> np.ndarray:
    """``a @ b`` with the naive kernel, launched in ``tile × tile`` blocks (no shared memory)."""
    a, b, tile, grid = _matmul_args(a, b, tile)
    d_c = cuda.device_array((a.shape[0], b.shape[1]), dtype=a.dtype)
    _launch(naive_matmul_kernel(a.dtype), grid, (tile, tile),
            cuda.to_device(a), cuda.to_device(b), d_c)
    return d_c.copy_to_host()
