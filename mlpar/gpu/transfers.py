"""The link between host and GPU: copies timed apart from kernels, pinned memory, streams.

A discrete GPU computes on its own memory, so every offloaded array crosses the link (PCIe or
NVLink) first. Three things decide what that costs:

* **the copies themselves**, timed apart from the kernel (:func:`time_product`,
  :func:`time_matmul`): their share of the total says whether offloading paid;
* **pageable or pinned host memory** (:func:`link_rates`): the driver can only DMA from memory
  the OS will not move, so a copy from an ordinary (pageable) numpy array is first staged
  through a pinned buffer; an array allocated with ``cuda.pinned_array`` skips that step;
* **overlap** (:func:`overlapped_product`): with pinned memory, copies and kernels issued on
  different CUDA streams run at the same time, so chunk ``i + 1`` travels while chunk ``i``
  is computed.

On numba's CUDA simulator all of these run (same results) but the times are of Python code:
use them there to check correctness only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlpar.core import environment, timing, validation
from mlpar.gpu import backend as gpu
from mlpar.gpu import cuda_kernels as ck

cuda = ck.cuda
BACKEND = ck.BACKEND


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
        fs = timing.format_seconds
        where = "simulator" if self.backend == "simulator" else "GPU"
        return (
            f"OffloadTiming({self.name} on the {where}: to device {fs(self.to_device_s)}, "
            f"kernel {fs(self.kernel_s)}, to host {fs(self.to_host_s)}; "
            f"copies are {100 * self.transfer_share:.3g} % of the total)"
        )


def _pinned_copy(v: np.ndarray) -> np.ndarray:
    out = cuda.pinned_array(v.shape, dtype=v.dtype)
    out[...] = v
    return out


def _time_stages(name, inputs, out_shape, dtype, launch, flops, device_bytes, repeat, *,
                pinned=False) -> OffloadTiming:
    """Time copying ``inputs`` over, ``launch(*device_inputs, device_out)``, copying back.

    The kernel is compiled and warmed up before any clock starts, and copies go into arrays
    already allocated on the device: the link, not ``cudaMalloc``, is timed. ``pinned``
    copies from and to page-locked host memory instead of ordinary numpy arrays.
    """
    repeat = validation.positive_int("repeat", repeat)
    pinned = validation.flag("pinned", pinned)
    host_in = [_pinned_copy(v) for v in inputs] if pinned else list(inputs)
    host_out = (cuda.pinned_array(out_shape, dtype=dtype) if pinned
                else np.empty(out_shape, dtype=dtype))
    d_in = [cuda.to_device(v) for v in host_in]
    d_out = cuda.device_array(out_shape, dtype=dtype)
    launch(*d_in, d_out)
    to_device = timing.best_of(
        lambda: [d.copy_to_device(v) for d, v in zip(d_in, host_in, strict=True)],
        repeat, sync=cuda.synchronize)
    # The kernel by CUDA events (device time stamps): on a host clock a 60 µs kernel would be
    # mostly launch overhead. The copies last milliseconds, so the host clock serves them.
    kernel = ck.event_seconds(lambda: launch(*d_in, d_out), repeat)
    if not np.isfinite(kernel):  # the simulator: no device clock to read
        kernel = timing.best_of(lambda: launch(*d_in, d_out), repeat, sync=cuda.synchronize)
    to_host = timing.best_of(lambda: d_out.copy_to_host(host_out), repeat,
                             sync=cuda.synchronize)
    link_bytes = sum(v.nbytes for v in inputs) + host_out.nbytes
    return OffloadTiming(name, BACKEND, to_device, kernel, to_host, link_bytes,
                         device_bytes, flops)


def time_product(x: np.ndarray, y: np.ndarray, *, threads_per_block: int = 128,
                 blocks: int | None = None, repeat: int = 5,
                 pinned: bool = False) -> OffloadTiming:
    """Time copying x and y over, ``product_kernel``, and copying x·y back, separately."""
    x, y = ck._pair("x", x, "y", y, 1)
    validation.same_shape("x", x, "y", y)
    tpb = gpu.block_size("threads_per_block", threads_per_block)
    blocks = ck.default_blocks(x.size, tpb) if blocks is None else ck._grid_blocks(
        "blocks", blocks, tpb)
    # Timing launches fill the device (default_blocks), so no occupancy warning is expected.
    return _time_stages("elementwise product", [x, y], x.shape, x.dtype,
                       lambda dx, dy, do: ck.product_kernel[blocks, tpb](dx, dy, do),
                       x.size, 3 * x.nbytes, repeat, pinned=pinned)


def time_matmul(a: np.ndarray, b: np.ndarray, *, tile: int = 16, repeat: int = 3,
                tiled: bool = True, pinned: bool = False) -> OffloadTiming:
    """Time copying a and b over, the (tiled or naive) matmul kernel, and copying c back.

    Counts 2·m·k·p flops and, for device memory, the tiled kernel's global loads plus the
    store of c (the naive kernel's loads when ``tiled=False``). ``pinned`` copies from and to
    page-locked host memory, as a link roof measured from pinned memory assumes.
    """
    tiled = validation.flag("tiled", tiled)
    a, b, tile, grid = ck._matmul_args(a, b, tile)
    (m, k), p = a.shape, b.shape[1]
    kernel = ck.tiled_matmul_kernel(tile, a.dtype) if tiled else ck.naive_matmul_kernel(a.dtype)
    loads = gpu.matmul_global_loads(m, k, p, tile if tiled else None)
    return _time_stages(f"{'tiled' if tiled else 'naive'} matmul", [a, b], (m, p), a.dtype,
                       lambda da, db, dc: kernel[grid, (tile, tile)](da, db, dc),
                       2 * m * k * p, (loads + m * p) * a.itemsize, repeat, pinned=pinned)


def device_copy_gbps(nbytes: int = 1 << 26, repeat: int = 5) -> float:
    """Device-to-device copy bandwidth (read + write counted), the device memory's roof."""
    # the host array and two device arrays: stay within a quarter of the free memory
    nbytes = validation.positive_int("nbytes", nbytes,
                                     maximum=environment.available_memory_bytes() // 12)
    repeat = validation.positive_int("repeat", repeat)
    src = cuda.to_device(np.ones(max(1, nbytes // 8)))
    dst = cuda.device_array_like(src)
    dst.copy_to_device(src)
    # By CUDA events: 64 MiB each way takes ~40 µs on an H100, about what a host clock would
    # add in call overhead. The simulator has no device clock: its (meaningless) host time.
    seconds = ck.event_seconds(lambda: dst.copy_to_device(src), repeat)
    if not np.isfinite(seconds):
        seconds = timing.best_of(lambda: dst.copy_to_device(src), repeat, sync=cuda.synchronize)
    return 2 * src.nbytes / seconds / 1e9


# ------------------------------------------------------------------ pageable versus pinned


@dataclass(frozen=True)
class LinkRates:
    """GB/s over the link each way, from pageable (numpy) and from pinned host memory."""

    backend: str
    nbytes: int
    pageable_to_device: float
    pinned_to_device: float
    pageable_to_host: float
    pinned_to_host: float

    @property
    def pinned_gain(self) -> float:
        """How much faster pinned memory makes the host-to-device copy."""
        return self.pinned_to_device / self.pageable_to_device

    def __repr__(self) -> str:
        where = "simulator: not a link measurement" if self.backend == "simulator" else "GPU"
        return (f"LinkRates({self.nbytes / 2**20:.3g} MiB, {where}: to device pageable "
                f"{self.pageable_to_device:.3g} GB/s, pinned {self.pinned_to_device:.3g} GB/s; "
                f"to host pageable {self.pageable_to_host:.3g} GB/s, pinned "
                f"{self.pinned_to_host:.3g} GB/s)")


def link_rates(nbytes: int = 1 << 26, repeat: int = 5) -> LinkRates:
    """Measure copies of ``nbytes`` each way from an ordinary array and a pinned one."""
    # two host arrays and one device array of nbytes: within a quarter of the free memory
    nbytes = validation.positive_int("nbytes", nbytes,
                                     maximum=environment.available_memory_bytes() // 12)
    repeat = validation.positive_int("repeat", repeat)
    n = max(1, nbytes // 4)
    pageable = np.ones(n, dtype=np.float32)
    pinned = _pinned_copy(pageable)
    device = cuda.to_device(pageable)
    rates = []
    for host in (pageable, pinned):
        up = timing.best_of(lambda h=host: device.copy_to_device(h), repeat,
                            sync=cuda.synchronize)
        down = timing.best_of(lambda h=host: device.copy_to_host(h), repeat,
                              sync=cuda.synchronize)
        rates.append((pageable.nbytes / up / 1e9, pageable.nbytes / down / 1e9))
    (pg_up, pg_down), (pn_up, pn_down) = rates
    return LinkRates(BACKEND, pageable.nbytes, pg_up, pn_up, pg_down, pn_down)


# ---------------------------------------------------------------- copies overlapped by streams


@dataclass(frozen=True)
class Overlap:
    """The product computed in chunks on streams, and its time against the serial offload."""

    backend: str
    chunks: int
    result: np.ndarray
    serial_s: float
    overlapped_s: float

    @property
    def speedup(self) -> float:
        return self.serial_s / self.overlapped_s

    def __repr__(self) -> str:
        fs = timing.format_seconds
        note = " (simulator: times of Python code)" if self.backend == "simulator" else ""
        return (f"Overlap({self.chunks} chunks on {self.chunks} streams{note}: serial "
                f"{fs(self.serial_s)}, overlapped {fs(self.overlapped_s)}, "
                f"{self.speedup:.3g}×)")


def chunk_bounds(n: int, chunks: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into ``chunks`` contiguous (start, stop) pieces, sizes within one."""
    n = validation.positive_int("n", n)
    chunks = validation.positive_int("chunks", chunks, maximum=n)
    edges = [i * n // chunks for i in range(chunks + 1)]
    return list(zip(edges[:-1], edges[1:], strict=True))


def overlapped_product(x: np.ndarray, y: np.ndarray, *, chunks: int = 4,
                       threads_per_block: int = 128, repeat: int = 3) -> Overlap:
    """x·y offloaded twice from pinned memory: serially, and in chunks on ``chunks`` streams.

    Serial: copy all of x and y over, one kernel, copy all back, one after the other. With
    streams: chunk i's copy in, kernel and copy out are queued on stream i, so the hardware's
    copy engines move one chunk while the multiprocessors compute another. Both results must
    equal ``x * y``; ``result`` is the overlapped one.
    """
    x, y = ck._pair("x", x, "y", y, 1)
    validation.same_shape("x", x, "y", y)
    tpb = gpu.block_size("threads_per_block", threads_per_block)
    pieces = chunk_bounds(x.size, chunks)
    repeat = validation.positive_int("repeat", repeat)
    hx, hy = _pinned_copy(x), _pinned_copy(y)
    out = cuda.pinned_array(x.shape, dtype=x.dtype)
    dx, dy, dout = (cuda.device_array_like(x) for _ in range(3))
    streams = [cuda.stream() for _ in pieces]

    def serial():
        dx.copy_to_device(hx)
        dy.copy_to_device(hy)
        ck.product_kernel[ck.default_blocks(x.size, tpb), tpb](dx, dy, dout)
        dout.copy_to_host(out)

    def overlapped():
        for (lo, hi), s in zip(pieces, streams, strict=True):
            dx[lo:hi].copy_to_device(hx[lo:hi], stream=s)
            dy[lo:hi].copy_to_device(hy[lo:hi], stream=s)
            ck.product_kernel[ck.default_blocks(hi - lo, tpb), tpb, s](
                dx[lo:hi], dy[lo:hi], dout[lo:hi])
            dout[lo:hi].copy_to_host(out[lo:hi], stream=s)
        for s in streams:
            s.synchronize()

    with ck.small_grids():  # a small demonstration size may leave the GPU under-occupied
        serial()
        cuda.synchronize()
        serial_s = timing.best_of(serial, repeat, sync=cuda.synchronize)
        out[...] = 0
        overlapped()
        result = np.array(out)
        overlapped_s = timing.best_of(overlapped, repeat, sync=cuda.synchronize)
    return Overlap(BACKEND, len(pieces), result, serial_s, overlapped_s)
