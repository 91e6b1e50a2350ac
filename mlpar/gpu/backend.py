"""Which CUDA path a lesson runs on (a real GPU or numba's simulator), and the GPU arithmetic.

numba decides between the real CUDA driver and its pure-Python *CUDA simulator* once, when it
reads ``NUMBA_ENABLE_CUDASIM`` at its first import. So the decision has to be made before
anything imports numba, including ``mlpar.core.threads`` and every numba-compiled lesson module.
This module never imports numba at import time; a notebook's first code cell calls

    >>> from mlpar.gpu import backend as gpu
    >>> backend = gpu.choose_cuda_backend()      # "gpu" where there is one, else "simulator"

and only then imports ``mlpar.gpu.cuda_kernels``. Everything else here is plain arithmetic that
works without a GPU: launch configurations, the grid-stride index map, the shared-memory
budget of a tile, and the break-even arithmetic intensity for offloading work over a link.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

from mlpar.core import environment, validation

CUDA_TARGETS = ("auto", "gpu", "simulator")
WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024  # the limit on every CUDA GPU since compute capability 2.0


def gpu_present() -> bool:
    """True when an NVIDIA GPU looks usable, found *without* importing numba.

    ``CUDA_VISIBLE_DEVICES`` set to "" or "-1" hides every GPU; otherwise a ``/dev/nvidiaN``
    device file or a working ``nvidia-smi -L`` (also on WSL, which has no device files)
    counts as a GPU.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    if environment.gpu_devices():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and "GPU" in done.stdout


def active_backend() -> str | None:
    """The path numba is on in this process: "gpu", "simulator", or None if numba not loaded."""
    if "numba" not in sys.modules:
        return None
    config = sys.modules["numba"].config
    return "simulator" if config.ENABLE_CUDASIM else "gpu"


def choose_cuda_backend(prefer: str = "auto") -> str:
    """Decide the CUDA path for this process before numba is imported; return it.

    Parameters
    ----------
    prefer : {"auto", "gpu", "simulator"}
        "auto" takes the GPU when :func:`gpu_present` finds one and the simulator otherwise;
        an exported ``NUMBA_ENABLE_CUDASIM=1`` is honoured as an explicit request for it.

    Once numba is imported the choice is fixed for the process. Calling again then returns
    the path already taken when it agrees with ``prefer``; when it cannot (numba was loaded
    without the simulator on a machine with no GPU, or the other path is asked for) it
    raises ``RuntimeError`` saying to restart and call this first. Setting the variable late
    is not an option: numba would re-read its whole configuration at the next compile and
    silently undo other settings (such as the threading layer ``mlpar.core.threads`` chooses).
    """
    validation.choice("prefer", prefer, CUDA_TARGETS)
    active = active_backend()
    if active is not None:
        if prefer == "auto" and (active == "simulator" or gpu_present()):
            return active
        if prefer == active:
            return active
        wanted = prefer if prefer != "auto" else "simulator (no GPU was found)"
        raise RuntimeError(
            f"prefer: numba is already imported on the {active!r} path, so {wanted} can no "
            "longer be chosen; restart the kernel (or process) and call "
            "mlpar.gpu.backend.choose_cuda_backend() before importing numba or any numba-based "
            "mlpar module (mlpar.core.threads, mlpar.gpu.cuda_kernels, ...)"
        )
    if prefer == "auto":
        if os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() not in ("", "0"):
            prefer = "simulator"
        else:
            prefer = "gpu" if gpu_present() else "simulator"
    if prefer == "gpu" and not gpu_present():
        raise RuntimeError(
            "prefer: expected a machine with an NVIDIA GPU for 'gpu', found none "
            "(no /dev/nvidiaN, no working nvidia-smi); use 'auto' or 'simulator'"
        )
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if prefer == "simulator" else "0"
    return prefer


@dataclass(frozen=True)
class DeviceInfo:
    """What the chosen CUDA path runs on; the limits a launch configuration must respect."""

    backend: str
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int | None
    max_threads_per_block: int
    max_shared_memory_per_block: int
    cupy: bool

    def __repr__(self) -> str:
        if self.backend == "simulator":
            head = "numba CUDA simulator (Python threads on the CPU; timings are not GPU timings)"
        else:
            head = f"{self.name}, compute capability {self.compute_capability[0]}." \
                   f"{self.compute_capability[1]}, {self.multiprocessors} multiprocessors"
        return (
            f"DeviceInfo({head}; max {self.max_threads_per_block} threads and "
            f"{self.max_shared_memory_per_block // 1024} KiB shared memory per block; "
            f"CuPy {'available' if self.cupy else 'not installed'})"
        )


def device_info() -> DeviceInfo:
    """Describe the device numba's CUDA path uses (imports numba: choose the backend first)."""
    choose_cuda_backend()
    from numba import cuda

    if active_backend() == "simulator":
        # The simulator enforces no hardware limits; report the usual ones so that launch
        # configurations written here also run on a real GPU.
        name, sms, threads, shared = "simulator", None, MAX_THREADS_PER_BLOCK, 48 * 1024
        cc = tuple(int(v) for v in cuda.current_context().compute_capability)
    else:
        dev = cuda.get_current_device()
        cc = tuple(int(v) for v in dev.compute_capability)
        raw = dev.name
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        sms = int(dev.MULTIPROCESSOR_COUNT)
        threads = int(dev.MAX_THREADS_PER_BLOCK)
        shared = int(dev.MAX_SHARED_MEMORY_PER_BLOCK)
    return DeviceInfo(active_backend(), name, cc, sms, threads, shared, cupy_available())


def cupy_available() -> bool:
    """True when CuPy imports and sees a GPU (it is optional; no lesson requires it)."""
    if active_backend() == "simulator":
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # not installed, or installed without a driver: either way, not usable
        return False


# --------------------------------------------------------------------- launch arithmetic


def block_size(name: str, value, *, power_of_two: bool = False) -> int:
    """Validate threads per block: a positive multiple of the warp size (32), at most 1024.

    A block is scheduled in warps of 32 threads; a block of 48 threads still occupies two
    warps, one of them half idle. Tree reductions also need a power of two.
    """
    power_of_two = validation.flag("power_of_two", power_of_two)
    value = validation.positive_int(name, value)
    if value % WARP_SIZE or value > MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"{name}: expected a positive multiple of {WARP_SIZE} (the warp size) up to "
            f"{MAX_THREADS_PER_BLOCK}, got {value}; try 128 or 256"
        )
    if power_of_two and value & (value - 1):
        raise ValueError(
            f"{name}: expected a power of two (the tree reduction halves the block each "
            f"step), got {value}; try {1 << (value.bit_length() - 1)}"
        )
    return value


def blocks_to_cover(n: int, threads_per_block: int) -> int:
    """Blocks needed for one thread per element: ceil(n / threads_per_block), at least 1."""
    n = validation.integer("n", n, minimum=0)
    threads_per_block = validation.positive_int("threads_per_block", threads_per_block)
    return max(1, -(-n // threads_per_block))


def grid_stride_indices(thread_idx: int, block_idx: int, block_dim: int, grid_dim: int,
                        n: int) -> list[int]:
    """Elements one thread handles in a grid-stride loop over ``n`` elements.

    The global thread number is ``g = block_idx * block_dim + thread_idx`` and the grid holds
    ``G = grid_dim * block_dim`` threads, so the thread visits ``g, g + G, g + 2G, ... < n``.
    Neighbouring threads touch neighbouring elements at every step, which is what lets the
    hardware merge a warp's 32 loads into a few wide memory transactions (coalescing).
    """
    block_dim = validation.positive_int("block_dim", block_dim)
    grid_dim = validation.positive_int("grid_dim", grid_dim)
    thread_idx = validation.integer("thread_idx", thread_idx, minimum=0, maximum=block_dim - 1)
    block_idx = validation.integer("block_idx", block_idx, minimum=0, maximum=grid_dim - 1)
    n = validation.integer("n", n, minimum=0)
    start, stride = block_idx * block_dim + thread_idx, grid_dim * block_dim
    count = max(0, -(-(n - start) // stride))
    limit = validation.memory_bytes() // 256  # a Python int in a list costs ~36 bytes
    if count > limit:
        raise ValueError(f"n: expected at most {limit * stride:,} elements (a list of "
                         f"{limit:,} indices for this thread), got {n:,}")
    return list(range(start, n, stride))


def grid_stride_owners(n: int, threads_per_block: int, blocks: int):
    """For each of ``n`` elements: (block, thread in block, loop step) that handles it.

    Returns three int arrays of length ``n``; the inverse of :func:`grid_stride_indices`.
    """
    n = validation.positive_int("n", n)
    threads_per_block = validation.positive_int("threads_per_block", threads_per_block)
    blocks = validation.positive_int("blocks", blocks)
    validation.positive_int("n", n, maximum=validation.memory_bytes() // 48)  # three int64 arrays
    i = np.arange(n)
    g = i % (threads_per_block * blocks)
    return g // threads_per_block, g % threads_per_block, i // (threads_per_block * blocks)


def largest_tile(shared_bytes: int, itemsize: int,
                 max_threads: int = MAX_THREADS_PER_BLOCK) -> int:
    """Largest power-of-two tile ``t`` a tiled matmul block can use.

    One block runs ``t × t`` threads (at most ``max_threads``) and keeps two ``t × t`` tiles,
    of A and of B, in shared memory: ``2 t² itemsize <= shared_bytes``.
    """
    shared_bytes = validation.positive_int("shared_bytes", shared_bytes)
    itemsize = validation.positive_int("itemsize", itemsize)
    max_threads = validation.positive_int("max_threads", max_threads)
    if 2 * itemsize > shared_bytes:
        raise ValueError(
            f"shared_bytes: expected at least {2 * itemsize} bytes (two 1×1 tiles of "
            f"itemsize={itemsize}), got {shared_bytes}"
        )
    t = 1
    while (2 * t) ** 2 <= max_threads and 2 * (2 * t) ** 2 * itemsize <= shared_bytes:
        t *= 2
    return t


def matmul_global_loads(m: int, k: int, p: int, tile: int | None = None) -> int:
    """Elements read from global memory by an (m×k)·(k×p) matmul kernel.

    Naive (``tile=None``): each of the m·p threads reads a row of A and a column of B,
    ``2 k`` elements. Tiled: each block of ``tile × tile`` outputs reads ``ceil(k/tile)``
    pairs of tiles, so every element is read about ``tile`` times less often.
    """
    m, k, p = (validation.positive_int(nm, v) for nm, v in (("m", m), ("k", k), ("p", p)))
    if tile is None:
        return 2 * m * p * k
    tile = validation.positive_int("tile", tile)
    blocks = math.ceil(m / tile) * math.ceil(p / tile)
    return blocks * math.ceil(k / tile) * 2 * tile * tile


@dataclass(frozen=True)
class PublishedGPU:
    """A GPU's figures from its maker's data sheet: what a lesson shows where no GPU is present.

    These are *published* peak rates, not measurements; a lesson that uses them says so and
    cites ``source``. Where a GPU is present, the lesson measures instead.
    """

    name: str
    fp32_gflops: float
    memory_gbps: float
    link_gbps: float
    source: str


# The GPU of Colab's free tier, so students can compare with what they may run on.
T4 = PublishedGPU(
    name="NVIDIA T4",
    fp32_gflops=8100.0,
    memory_gbps=320.0,
    link_gbps=15.75,
    source="NVIDIA T4 Tensor Core GPU data sheet (2019): 8.1 TFLOPS FP32, 320 GB/s GDDR6; "
           "PCI Express 3.0 x16: 15.75 GB/s each way",
)


# The occupancy example of lesson 10: the GPU of the course's reference runs.
H100_MULTIPROCESSORS = 132
H100_SOURCE = "NVIDIA H100 Tensor Core GPU architecture whitepaper (2022): 132 SMs in the H100 SXM5"


def break_even_intensity(cpu_gflops: float, gpu_gflops: float, link_gbps: float) -> float:
    """Arithmetic intensity (flop per byte sent over the link) above which offloading pays.

    With F flops on B bytes: the CPU needs ``F / P_cpu``; the GPU needs ``B / W + F / P_gpu``
    (send, then compute). Offloading wins when ``F / B > P_cpu P_gpu / (W (P_gpu - P_cpu))``
    (rates in GFLOP/s and GB/s, so the 1e9s cancel); never (``inf``) when the GPU is no
    faster than the CPU. As ``P_gpu → ∞`` this tends to ``P_cpu / W``: the link alone sets it.
    """
    cpu = validation.positive("cpu_gflops", cpu_gflops)
    gpu = validation.positive("gpu_gflops", gpu_gflops)
    link = validation.positive("link_gbps", link_gbps)
    if gpu <= cpu:
        return math.inf
    return cpu * gpu / (link * (gpu - cpu))


# ------------------------------------------------------------------------- occupancy


# numba warns at every launch of a grid with fewer blocks than this (CUDA_LOW_OCCUPANCY_WARNINGS)
NUMBA_LOW_OCCUPANCY_BLOCKS = 128


def idle_multiprocessors(blocks: int, multiprocessors: int) -> int:
    """Multiprocessors left with no block at all: a block runs on one SM, never split."""
    blocks = validation.positive_int("blocks", blocks)
    multiprocessors = validation.positive_int("multiprocessors", multiprocessors)
    return max(0, multiprocessors - blocks)


def blocks_to_fill(multiprocessors: int, blocks_per_multiprocessor: int = 1) -> int:
    """Blocks a grid needs so that every multiprocessor runs ``blocks_per_multiprocessor``.

    One resident block per SM is the least that keeps none idle; hiding memory latency wants
    several (as many as registers and shared memory allow), so grids of thousands of blocks,
    or a grid-stride loop over a few per SM, are the norm.
    """
    multiprocessors = validation.positive_int("multiprocessors", multiprocessors)
    per = validation.positive_int("blocks_per_multiprocessor", blocks_per_multiprocessor)
    return multiprocessors * per


# ------------------------------------------------------------ occupancy


@dataclass(frozen=True)
class MultiprocessorLimits:
    """What one streaming multiprocessor can hold at once (per compute capability)."""

    name: str
    max_warps: int          # resident warps per SM
    max_blocks: int         # resident blocks per SM
    registers: int          # 32-bit registers per SM
    register_unit: int      # registers are given to a warp in units of this many
    shared_bytes: int       # shared memory per SM usable by blocks
    shared_per_block_reserved: int  # bytes the system keeps per resident block


# CUDA C Programming Guide, "Compute Capabilities" table, compute capability 9.0.
H100_SM = MultiprocessorLimits("H100 (compute capability 9.0)", max_warps=64, max_blocks=32,
                               registers=65536, register_unit=256,
                               shared_bytes=228 * 1024, shared_per_block_reserved=1024)

# ptxas -v on the lesson's float32 kernels, compiled for sm_90 by numba 0.68.1's CUDA target
# with CUDA 13.0's NVVM and ptxas: registers per thread. tests/gpu/test_ptx.py recompiles them
# and fails when a count differs, so the table cannot drift from the code silently. On a GPU
# the lesson reads the counts from the compiled kernels instead.
PTXAS_REGISTERS_SM90 = {"product": 28, "naive": 28, "tiled 16×16": 32,
                        "register 64×64, 4×4": 126, "wide 128×128, 8×8": 126}
PTXAS_SOURCE = "ptxas -v, sm_90 (numba 0.68.1's CUDA target, CUDA 13.0)"


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM for one kernel launch shape, and what limits them."""

    blocks: int
    warps: int
    occupancy: float  # resident warps / the SM's maximum
    limiter: str      # "threads", "blocks", "registers" or "shared memory"


def occupancy(threads_per_block: int, registers_per_thread: int, shared_bytes: int = 0, *,
              sm: MultiprocessorLimits = H100_SM) -> Occupancy:
    """Occupancy: the warps an SM holds at once divided by the most it can hold.

    Each resource gives a number of blocks that fit: warps (``max_warps`` over the block's
    warps), blocks (``max_blocks``), registers (a warp takes ``32 × registers`` rounded up to
    ``register_unit``) and shared memory (``shared_bytes`` plus a reserved kilobyte per block).
    The smallest wins. It says how many warps the SM can switch between to hide the latency
    of loads; it is not how many SMs a grid keeps busy (that is the grid's size).
    """
    threads_per_block = validation.positive_int("threads_per_block", threads_per_block,
                                                maximum=MAX_THREADS_PER_BLOCK)
    registers_per_thread = validation.positive_int("registers_per_thread",
                                                   registers_per_thread, maximum=255)
    shared_bytes = validation.integer("shared_bytes", shared_bytes, minimum=0,
                                      maximum=sm.shared_bytes)
    warps_per_block = math.ceil(threads_per_block / WARP_SIZE)
    per_warp = math.ceil(registers_per_thread * WARP_SIZE / sm.register_unit) * sm.register_unit
    fits = {
        "threads": sm.max_warps // warps_per_block,
        "blocks": sm.max_blocks,
        "registers": (sm.registers // per_warp) // warps_per_block,
        "shared memory": (sm.shared_bytes // (shared_bytes + sm.shared_per_block_reserved)
                          if shared_bytes else sm.max_blocks),
    }
    limiter = min(fits, key=lambda k: fits[k])
    blocks = fits[limiter]
    warps = blocks * warps_per_block
    return Occupancy(blocks, warps, warps / sm.max_warps, limiter)


# ------------------------------------------------------------ register-blocked matmul shape


@dataclass(frozen=True)
class Blocking:
    """Shape of a register-blocked matmul: a block computes ``bm × bn`` of C, walking k in
    steps of ``bk``; each of its threads computes a ``tm × tn`` sub-block in registers."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    def shared_bytes(self, itemsize: int) -> int:
        """Shared memory per block: one ``bm × bk`` tile of A and one ``bk × bn`` of B."""
        return (self.bm + self.bn) * self.bk * itemsize

    def global_loads(self, m: int, k: int, p: int) -> int:
        """Elements read from global memory for an (m×k)·(k×p) product (edge tiles padded)."""
        blocks = math.ceil(m / self.bm) * math.ceil(p / self.bn)
        return blocks * math.ceil(k / self.bk) * (self.bm + self.bn) * self.bk

    def __str__(self) -> str:
        return (f"block {self.bm}×{self.bn} of C, k-step {self.bk}, {self.tm}×{self.tn} per "
                f"thread ({self.threads} threads)")


def blocking(bm: int, bn: int, bk: int, tm: int, tn: int, *, itemsize: int = 4,
             shared_bytes: int = 48 * 1024, wide: bool = False) -> Blocking:
    """Validate a register-blocking shape; ``wide`` adds the 4-element loads' constraint.

    tm divides bm and tn divides bn; the block has at most 1024 threads, a multiple of the
    warp where it has more than one warp; both tiles fit ``shared_bytes``; wide loads copy
    4 neighbouring elements, so bk, bn (and bm) must be multiples of 4.
    """
    bm, bn, bk, tm, tn = (validation.positive_int(name, v, maximum=1024) for name, v in
                          (("bm", bm), ("bn", bn), ("bk", bk), ("tm", tm), ("tn", tn)))
    itemsize = validation.positive_int("itemsize", itemsize, maximum=16)
    shared_bytes = validation.positive_int("shared_bytes", shared_bytes, maximum=1 << 20)
    wide = validation.flag("wide", wide)
    for name, outer, inner in (("tm", bm, tm), ("tn", bn, tn)):
        if outer % inner:
            raise ValueError(f"{name}: expected a divisor of b{name[1]} = {outer}, got {inner}")
    shape = Blocking(bm, bn, bk, tm, tn)
    if shape.threads > MAX_THREADS_PER_BLOCK or (shape.threads > WARP_SIZE
                                                 and shape.threads % WARP_SIZE):
        raise ValueError(f"tm: expected (bm/tm)·(bn/tn) threads to be at most "
                         f"{MAX_THREADS_PER_BLOCK} and whole warps of {WARP_SIZE}, got "
                         f"{shape.threads}")
    if shape.shared_bytes(itemsize) > shared_bytes:
        raise ValueError(f"bk: expected (bm + bn)·bk·itemsize <= {shared_bytes} bytes of shared "
                         f"memory, got {shape.shared_bytes(itemsize)}")
    if wide and (bk % 4 or bn % 4 or bm % 4):
        raise ValueError(f"bk: expected bm, bn and bk to be multiples of 4 for 4-wide loads, "
                         f"got bm={bm}, bn={bn}, bk={bk}")
    return shape
