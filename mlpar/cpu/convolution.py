"""Two-dimensional convolution as a CNN layer computes it, serial and on threads.

What is computed: **cross-correlation** in "valid" mode, which is what deep-learning
libraries call convolution (the kernel is *not* flipped). For one image x of shape (H, W) and
one kernel w of shape (kh, kw):

    out[r, s] = sum_{u < kh, v < kw} x[r + u, s + v] * w[u, v],   out shape (H-kh+1, W-kw+1)

This equals ``scipy.signal.correlate2d(x, w, mode="valid")``, and equals the mathematician's
convolution ``scipy.signal.convolve2d(x, w[::-1, ::-1], mode="valid")`` with the kernel flipped.

A convolution layer does this for a batch of N images with C input channels and F filters:

    out[n, f, r, s] = sum_{c, u, v} x[n, c, r + u, s + v] * w[f, c, u, v]

    x: (N, C, H, W)   w: (F, C, kh, kw)   out: (N, F, H-kh+1, W-kw+1)
    flops: 2 · N · F · C · kh · kw · (H-kh+1) · (W-kw+1)

Every output element needs 2·C·kh·kw flops and reads a small window of x, so the layer is
compute-bound and its N·F output planes are independent: ideal for threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mlpar.core import limits, timing, validation

# Imported first for its side effect: numba's thread-safe layer, before any parallel code runs.
from mlpar.core import threads as _threads

#: Each timing sample lasts at least this long (seconds): a layer is a long call.
MIN_SAMPLE_TIME = 1e-2


def _check_layer(images, filters) -> tuple[np.ndarray, np.ndarray]:
    images = validation.array("images", images, ndim=4, dtype=np.float64, min_size=1)
    filters = validation.array("filters", filters, ndim=4, dtype=np.float64, min_size=1)
    if images.shape[1] != filters.shape[1]:
        raise ValueError(
            f"filters: expected {images.shape[1]} input channels (axis 1) to match images "
            f"{images.shape}, got shape {filters.shape}"
        )
    if filters.shape[2] > images.shape[2] or filters.shape[3] > images.shape[3]:
        raise ValueError(
            f"filters: expected a kernel no larger than the image {images.shape[2:]}, "
            f"got {filters.shape[2:]}"
        )
    return images, filters


def output_shape(image_shape, filter_shape) -> tuple[int, int, int, int]:
    """(N, F, H-kh+1, W-kw+1) for images (N, C, H, W) and filters (F, C, kh, kw)."""
    n, c, h, w = _shape("image_shape", image_shape)
    f, fc, kh, kw = _shape("filter_shape", filter_shape)
    if fc != c:
        raise ValueError(f"filter_shape: expected {c} input channels to match image_shape "
                         f"{tuple(image_shape)}, got {fc}")
    if kh > h or kw > w:
        raise ValueError(f"filter_shape: expected a kernel no larger than the image ({h}, {w}), "
                         f"got ({kh}, {kw})")
    return (n, f, h - kh + 1, w - kw + 1)


def _shape(name: str, shape) -> tuple[int, int, int, int]:
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 4:
        raise ValueError(f"{name}: expected a 4-tuple of positive integers, got "
                         f"{validation.describe(shape)}")
    return tuple(validation.positive_int(f"{name}[{i}]", v) for i, v in enumerate(shape))


def conv2d_flops(image_shape, filter_shape) -> int:
    """2 · N · F · C · kh · kw · H_out · W_out multiply-adds counted as two flops each."""
    n, f, ho, wo = output_shape(image_shape, filter_shape)
    _, c, kh, kw = filter_shape
    return 2 * n * f * c * kh * kw * ho * wo


def random_layer(n: int = 4, channels: int = 3, size: int = 64, filters: int = 8,
                 kernel: int = 3, *, seed: int = 0):
    """Images (n, channels, size, size) and filters (filters, channels, kernel, kernel)."""
    n = validation.positive_int("n", n)
    channels = validation.positive_int("channels", channels)
    size = validation.positive_int("size", size)
    filters = validation.positive_int("filters", filters)
    kernel = validation.positive_int("kernel", kernel)
    if kernel > size:
        raise ValueError(f"kernel: expected at most size={size}, got {kernel}")
    limits.elements("n, channels, size", n * channels * size * size)
    limits.elements("filters, channels, kernel", filters * channels * kernel * kernel)
    rng = np.random.default_rng(validation.seed("seed", seed))
    return (rng.standard_normal((n, channels, size, size)),
            rng.standard_normal((filters, channels, kernel, kernel)))


def conv2d_reference(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """Plain numpy: one shifted window per kernel offset (u, v), contracted over channels.

    kh·kw whole-array steps instead of N·F·H·W small ones; each step is a tensordot, i.e. a
    matrix product over the channel axis.
    """
    images, filters = _check_layer(images, filters)
    n, f, ho, wo = output_shape(images.shape, filters.shape)
    out = np.zeros((n, ho, wo, f))
    for u in range(filters.shape[2]):
        for v in range(filters.shape[3]):
            window = images[:, :, u:u + ho, v:v + wo]                    # (N, C, Ho, Wo)
            out += np.tensordot(window, filters[:, :, u, v], axes=([1], [1]))  # (N, Ho, Wo, F)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def conv2d_im2col(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """The convolution written as one matrix product ("im2col"), then BLAS.

    Every output position's C·kh·kw input window becomes one row of a matrix of shape
    (N·Ho·Wo, C·kh·kw); the filters become a (C·kh·kw, F) matrix; one ``@`` does the rest.
    This trades memory (each input is copied kh·kw times) for BLAS speed.
    """
    images, filters = _check_layer(images, filters)
    n, f, ho, wo = output_shape(images.shape, filters.shape)
    kh, kw = filters.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(images, (kh, kw), axis=(2, 3))
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, -1)   # copies here
    out = cols @ filters.reshape(f, -1).T                                  # (N·Ho·Wo, F)
    return np.ascontiguousarray(out.reshape(n, ho, wo, f).transpose(0, 3, 1, 2))


@njit(cache=True, inline="always")
def _plane(x, w, out, b, g):
    # out[b, g] = sum_c correlate(x[b, c], w[g, c]); the innermost loop runs along a row of x
    # and of out (unit stride), the kernel tap w[g, c, u, v] is held in a register.
    c_in, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    ho, wo = out.shape[2], out.shape[3]
    for r in range(ho):
        for s in range(wo):
            out[b, g, r, s] = 0.0
    for c in range(c_in):
        for u in range(kh):
            for v in range(kw):
                tap = w[g, c, u, v]
                for r in range(ho):
                    for s in range(wo):
                        out[b, g, r, s] += tap * x[b, c, r + u, s + v]


@njit(cache=True)
def _conv_serial(x, w, out):
    for b in range(x.shape[0]):
        for g in range(w.shape[0]):
            _plane(x, w, out, b, g)


@njit(parallel=True, cache=True)
def _conv_parallel(x, w, out):
    n_filters = w.shape[0]
    # One task per (image, filter) output plane: N·F independent planes, disjoint writes.
    for task in prange(x.shape[0] * n_filters):
        _plane(x, w, out, task // n_filters, task % n_filters)


def conv2d(images: np.ndarray, filters: np.ndarray, *, parallel: bool = True) -> np.ndarray:
    """A convolution layer (cross-correlation, valid mode, no bias) compiled by numba.

    Parallel strategy: ``prange`` over the N·F output planes (image n, filter f); each plane
    is written by one thread only, so no synchronisation is needed. With ``parallel=False``
    the same loops run on one thread. Thread count: ``mlpar.core.threads.using_threads(k)``.

    images: (N, C, H, W) float64; filters: (F, C, kh, kw) float64 -> (N, F, H-kh+1, W-kw+1).
    """
    images, filters = _check_layer(images, filters)
    parallel = validation.flag("parallel", parallel)
    out = np.empty(output_shape(images.shape, filters.shape))
    x, w = np.ascontiguousarray(images), np.ascontiguousarray(filters)
    (_conv_parallel if parallel else _conv_serial)(x, w, out)
    return out


def correlate2d(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """One single-channel image and one kernel: ``scipy.signal.correlate2d(..., "valid")``."""
    image = validation.array("image", image, ndim=2, dtype=np.float64, min_size=1)
    kernel = validation.array("kernel", kernel, ndim=2, dtype=np.float64, min_size=1)
    if kernel.shape[0] > image.shape[0] or kernel.shape[1] > image.shape[1]:
        # checked here so that the message names this function's arguments, not conv2d's
        raise ValueError(f"kernel: expected a kernel no larger than the image {image.shape}, "
                         f"got {kernel.shape}")
    return conv2d(image[None, None], kernel[None, None], parallel=False)[0, 0]


def measure_thread_speedup(images: np.ndarray, filters: np.ndarray, thread_counts=(1, 2), *,
                           repeat: int = 5) -> timing.SpeedupTable:
    """Time ``conv2d`` at each numba thread count; the first count is the baseline."""
    images, filters = _check_layer(images, filters)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    if isinstance(thread_counts, (str, bytes)) or not hasattr(thread_counts, "__iter__"):
        raise TypeError(f"thread_counts: expected a sequence of thread counts, got "
                        f"{validation.describe(thread_counts)}")
    counts = tuple(validation.positive_int("thread_counts", k) for k in thread_counts)
    if not counts:
        raise ValueError("thread_counts: expected at least one count, got an empty sequence")
    if len(set(counts)) != len(counts):
        # one row per count: a repeated count (e.g. (1, max_threads()) on a one-thread
        # machine) would give two rows with the same name
        raise ValueError(f"thread_counts: expected distinct counts, got {counts}; on a machine "
                         "with one numba thread pass (1,)")
    for k in counts:
        if k > _threads.max_threads():
            raise ValueError(f"thread_counts: expected counts <= {_threads.max_threads()} "
                             f"(numba's NUMBA_NUM_THREADS), got {k}")
    flops = conv2d_flops(images.shape, filters.shape)
    rows = []
    for k in counts:
        with _threads.using_threads(k):
            rows.append(timing.measure(conv2d, images, filters, name=f"numba, {k} thread(s)",
                                       repeat=repeat, flops=flops,
                                       min_sample_time=MIN_SAMPLE_TIME))
    return timing.compare(rows)
