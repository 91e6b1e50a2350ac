"""Three CUDA kernels in numba: an elementwise product, a sum reduction, a tiled matmul.

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

import inspect
import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np

from mlpar.core import timing, validation
from mlpar.gpu import backend as gpu

BACKEND = gpu.choose_cuda_backend()

import numba  # noqa: E402  (must follow the backend choice)
from numba import cuda  # noqa: E402
from numba.core.errors import NumbaPerformanceWarning  # noqa: E402

FLOAT_TYPES = (np.float32, np.float64)


def source(func) -> str:
    """Python source of a kernel (GPU dispatcher or simulator kernel) or of a plain function."""
    return inspect.getsource(getattr(func, "py_func", None) or getattr(func, "fn", func))


def _launch(kernel, grid, block, *args) -> None:
    # Lesson-sized problems are deliberately small; numba's "grid too small for this GPU"
    # warning would make the same cell print differently on a GPU and on the simulator.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        kernel[grid, block](*args)
    cuda.synchronize()


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

    On a GPU the cap is 32 blocks per multiprocessor (enough to keep it busy; the grid-stride
    loop does the rest). On the simulator every thread is a Python thread, so 4 blocks that
    loop more are much faster than many blocks that loop once.
    """
    cap = 4 if BACKEND == "simulator" else 32 * int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    return min(gpu.blocks_to_cover(n, threads_per_block), cap)


def elementwise_product(x: np.ndarray, y: np.ndarray, *, threads_per_block: int = 128,
                        blocks: int | None = None) -> np.ndarray:
    """``x * y`` on the device: 1-D float arrays of one shape and dtype → new array."""
    x, y = _pair("x", x, "y", y, 1)
    validation.same_shape("x", x, "y", y)
    tpb = gpu.block_size("threads_per_block", threads_per_block)
    blocks = default_blocks(x.size, tpb) if blocks is None else validation.positive_int(
        "blocks", blocks)
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
    nb_type = numba.from_dtype(np.dtype(dtype))

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
    blocks = default_blocks(x.size, tpb) if blocks is None else validation.positive_int(
        "blocks", blocks)
    kernel = sum_kernel(tpb, x.dtype)
    d_partial = cuda.device_array(blocks, dtype=x.dtype)
    _launch(kernel, blocks, tpb, cuda.to_device(x), d_partial)
    d_total = cuda.device_array(1, dtype=x.dtype)
    _launch(kernel, 1, tpb, d_partial, d_total)
    return d_total.copy_to_host()[0]


# ------------------------------------------------------------------- matrix multiply


@cache
def naive_matmul_kernel(dtype: np.dtype):
    """Compile (once per dtype) c = a @ b with one thread per output element, no sharing.

    Thread (x, y) of the 2-D grid computes c[y, x] from row y of a and column x of b:
    2k global loads per output, so every element of a is read p times and of b m times.
    """
    nb_type = numba.from_dtype(np.dtype(dtype))

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
    nb_type = numba.from_dtype(np.dtype(dtype))

    @cuda.jit
    def kernel(a, b, c):
        sa = cuda.shared.array((tile, tile), dtype=nb_type)
        sb = cuda.shared.array((tile, tile), dtype=nb_type)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col = cuda.blockIdx.x * tile + tx
        row = cuda.blockIdx.y * tile + ty
        acc = nb_type(0)
        for t in range((a.shape[1] + tile - 1) // tile):
            ka, kb = t * tile + tx, t * tile + ty
            sa[ty, tx] = a[row, ka] if row < a.shape[0] and ka < a.shape[1] else 0
            sb[ty, tx] = b[kb, col] if kb < b.shape[0] and col < b.shape[1] else 0
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


# --------------------------------------------------------- transfer versus kernel time


@dataclass(frozen=True)
class OffloadTiming:
    """Best-of-``repeat`` seconds for the three stages of offloading one computation.

    ``device_bytes`` is what the kernel moves in device memory; ``link_bytes`` what crosses
    the host–device link (inputs there, result back). Their ratios to ``flops`` are the two
    arithmetic intensities of the roofline: one against device memory, one against the link.
    """

    name: str
    backend: str
    to_device_s: float
    kernel_s: float
    to_host_s: float
    link_bytes: int
    device_bytes: int
    flops: int

    @property
    def transfer_s(self) -> float:
        return self.to_device_s + self.to_host_s

    @property
    def total_s(self) -> float:
        return self.transfer_s + self.kernel_s

    @property
    def transfer_share(self) -> float:
        """Fraction of the end-to-end time spent copying."""
        return self.transfer_s / self.total_s

    @property
    def link_gbps(self) -> float:
        return self.link_bytes / self.transfer_s / 1e9

    @property
    def kernel_gbps(self) -> float:
        return self.device_bytes / self.kernel_s / 1e9

    @property
    def kernel_gflops(self) -> float:
        return self.flops / self.kernel_s / 1e9

    @property
    def end_to_end_gflops(self) -> float:
        return self.flops / self.total_s / 1e9

    @property
    def link_intensity(self) -> float:
        return self.flops / self.link_bytes

    @property
    def device_intensity(self) -> float:
        return self.flops / self.device_bytes

    def __repr__(self) -> str:
        from mlpar.core.timing import format_seconds as fs

        where = "simulator" if self.backend == "simulator" else "GPU"
        return (
            f"OffloadTiming({self.name} on the {where}: to device {fs(self.to_device_s)}, "
            f"kernel {fs(self.kernel_s)}, to host {fs(self.to_host_s)}; "
            f"copies are {100 * self.transfer_share:.3g} % of the total)"
        )


def _time_stages(name, inputs, out_shape, dtype, launch, flops, device_bytes, repeat):
    repeat = validation.positive_int("repeat", repeat)
    d_in = [cuda.to_device(v) for v in inputs]
    d_out = cuda.device_array(out_shape, dtype=dtype)
    host_out = np.empty(out_shape, dtype=dtype)
    launch(*d_in, d_out)  # compile and warm up before any clock starts
    # Copy into the already allocated device arrays: the link, not cudaMalloc, is timed.
    to_device = timing.best_of(
        lambda: [d.copy_to_device(v) for d, v in zip(d_in, inputs, strict=True)],
        repeat,
        sync=cuda.synchronize,
    )
    kernel = timing.best_of(lambda: launch(*d_in, d_out), repeat, sync=cuda.synchronize)
    to_host = timing.best_of(lambda: d_out.copy_to_host(host_out), repeat, sync=cuda.synchronize)
    link_bytes = sum(v.nbytes for v in inputs) + host_out.nbytes
    return OffloadTiming(name, BACKEND, to_device, kernel, to_host, link_bytes,
                         device_bytes, flops)


def time_product(x: np.ndarray, y: np.ndarray, *, threads_per_block: int = 128,
                 blocks: int | None = None, repeat: int = 5) -> OffloadTiming:
    """Time copying x and y over, ``product_kernel``, and copying x·y back, separately."""
    x, y = _pair("x", x, "y", y, 1)
    validation.same_shape("x", x, "y", y)
    tpb = gpu.block_size("threads_per_block", threads_per_block)
    blocks = default_blocks(x.size, tpb) if blocks is None else validation.positive_int(
        "blocks", blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        return _time_stages("elementwise product", [x, y], x.shape, x.dtype,
                            lambda dx, dy, do: product_kernel[blocks, tpb](dx, dy, do),
                            x.size, 3 * x.nbytes, repeat)


def time_matmul(a: np.ndarray, b: np.ndarray, *, tile: int = 16, repeat: int = 3,
                tiled: bool = True) -> OffloadTiming:
    """Time copying a and b over, the (tiled or naive) matmul kernel, and copying c back.

    Counts 2·m·k·p flops and, for device memory, the tiled kernel's global loads plus the
    store of c (the naive kernel's loads when ``tiled=False``).
    """
    tiled = validation.flag("tiled", tiled)
    a, b, tile, grid = _matmul_args(a, b, tile)
    (m, k), p = a.shape, b.shape[1]
    kernel = tiled_matmul_kernel(tile, a.dtype) if tiled else naive_matmul_kernel(a.dtype)
    loads = gpu.matmul_global_loads(m, k, p, tile if tiled else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        return _time_stages(f"{'tiled' if tiled else 'naive'} matmul", [a, b], (m, p), a.dtype,
                            lambda da, db, dc: kernel[grid, (tile, tile)](da, db, dc),
                            2 * m * k * p, (loads + m * p) * a.itemsize, repeat)


def device_copy_gbps(nbytes: int = 1 << 26, repeat: int = 5) -> float:
    """Device-to-device copy bandwidth (read + write counted), the device memory's roof."""
    nbytes = validation.positive_int("nbytes", nbytes)
    src = cuda.to_device(np.ones(max(1, nbytes // 8)))
    dst = cuda.device_array_like(src)
    dst.copy_to_device(src)
    seconds = timing.best_of(lambda: dst.copy_to_device(src), repeat, sync=cuda.synchronize)
    return 2 * src.nbytes / seconds / 1e9
