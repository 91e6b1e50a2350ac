"""The elementwise product z = x · y, from a Python loop to SIMD and threads.

Every variant computes ``out[i] = x[i] * y[i]`` for float64 vectors of length n. Per element it
reads 16 bytes and writes 8, which the memory system moves as 32 (the written line is read
first: write-allocate, see ``mlpar.cpu.stream`` for the counting rule), and does 1 flop: an
arithmetic intensity of 1/32 flop/byte, far below any machine's ridge point, so once the loop
is compiled the memory system sets the speed.

Variants, slowest to fastest in principle:

* ``product_loop``: the interpreter runs one bytecode loop per element (boxing floats).
* ``product_broadcast``: numpy's compiled loop; ``out=`` avoids allocating a result.
* ``product_scalar``: compiled by numba with LLVM's vectorizers *switched off*: one ``vmulsd``
  (scalar multiply) per element. It exists to show what SIMD adds.
* ``product_simd``: the same loop compiled normally; LLVM turns it into packed ``vmulpd``
  instructions on 2-8 doubles at once.
* ``product_parallel``: ``prange`` splits the index range into one chunk per thread.

``horner`` is the contrast: a degree-d polynomial per element, 2d flops per 24 bytes counted
(read x, write out), which is compute-bound for large d and so *does* scale with threads.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import numba
import numpy as np
from numba import njit, prange

from mlpar.core import threads, timing, validation  # threads first: numba's thread-safe layer
from mlpar.cpu import stream

#: Bytes counted per element of the product (read x and y, write out with write-allocate).
PRODUCT_BYTES = stream.bytes_moved(1, reads=2, writes=1)
#: Bytes counted per element of ``horner`` (read x, write out with write-allocate).
HORNER_BYTES = stream.bytes_moved(1, reads=1, writes=1)


def _check_pair(x, y, out=None) -> np.ndarray:
    validation.array("x", x, ndim=1, dtype=np.float64)
    validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_shape("x", x, "y", y)
    if out is None:
        return np.empty_like(x)
    validation.output("out", out, ndim=1, dtype=np.float64)
    validation.same_shape("x", x, "out", out)
    return out


def product_loop(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The textbook loop: one element at a time, in the interpreter."""
    out = _check_pair(x, y)
    for i in range(len(x)):
        out[i] = x[i] * y[i]
    return out


def product_broadcast(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """numpy's ufunc: one compiled, vectorized loop; pass ``out`` to skip the allocation."""
    out = _check_pair(x, y, out)
    return np.multiply(x, y, out=out)


def _product_body(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i]


_SIGNATURE = "void(float64[::1], float64[::1], float64[::1])"


def without_simd(pyfunc, signature: str):
    """``pyfunc`` compiled with LLVM's loop and SLP vectorizers off (scalar instructions only).

    numba reads these two settings when it optimises a function, so they are switched off for
    one eager compilation and restored at once. The compilation happens on the first call, not
    at import. A pending change to a ``NUMBA_*`` environment variable is applied first: numba
    would otherwise reload its whole configuration in the middle of the compilation and switch
    the vectorizers back on.
    """
    validation.callable_("pyfunc", pyfunc)
    if not isinstance(signature, str):
        raise TypeError(f"signature: expected a numba signature string such as "
                        f"'void(f8[:], f8[:], f8[:])', got {type(signature).__name__}")

    @functools.cache
    def compiled():
        numba.core.config.reload_config()
        saved = numba.config.LOOP_VECTORIZE, numba.config.SLP_VECTORIZE
        numba.config.LOOP_VECTORIZE, numba.config.SLP_VECTORIZE = 0, 0
        try:
            return njit(signature)(pyfunc)
        finally:
            numba.config.LOOP_VECTORIZE, numba.config.SLP_VECTORIZE = saved

    def run(*args):
        return compiled()(*args)

    run.dispatcher = compiled
    return run


_scalar_kernel = without_simd(_product_body, _SIGNATURE)
_simd_kernel = njit(_product_body)


@njit(parallel=True)
def _parallel_kernel(x, y, out):
    # prange hands each thread one contiguous chunk; inside a chunk LLVM still emits SIMD.
    for i in prange(x.shape[0]):
        out[i] = x[i] * y[i]


def product_scalar(x, y, out=None):
    """Compiled loop, scalar instructions (vectorizers off)."""
    out = _check_pair(x, y, out)
    for name, part in (("x", x), ("y", y), ("out", out)):  # compiled for C-contiguous arrays
        validation.array(name, part, contiguous=True)
    _scalar_kernel(x, y, out)
    return out


def product_simd(x, y, out=None):
    """Compiled loop, auto-vectorized by LLVM (packed SIMD instructions)."""
    out = _check_pair(x, y, out)
    _simd_kernel(x, y, out)
    return out


def product_parallel(x, y, out=None):
    """Compiled, vectorized and split over numba's threads with ``prange``."""
    out = _check_pair(x, y, out)
    _parallel_kernel(x, y, out)
    return out


def multiply_instructions(kernel: str = "simd") -> list[str]:
    """The multiply instructions in a compiled variant's assembly ('scalar' or 'simd').

    ``mulsd`` multiplies one double ("scalar double"), ``mulpd`` several ("packed double");
    ``xmm`` registers hold 2 doubles, ``ymm`` 4 and ``zmm`` 8.
    """
    validation.choice("kernel", kernel, ("scalar", "simd"))
    dispatcher = _scalar_kernel.dispatcher() if kernel == "scalar" else _simd_kernel
    if not dispatcher.signatures:
        n = 8
        dispatcher(np.ones(n), np.ones(n), np.empty(n))
    asm = "\n".join(dispatcher.inspect_asm().values())
    found = re.findall(r"\b(v?mul[sp]d)\b[^\n]*?%([xyz]mm)", asm)
    return sorted({f"{op} {register}" for op, register in found})


# --- the compute-bound contrast ------------------------------------------------------------

@njit(parallel=True, fastmath=True)
def _horner_kernel(x, coefficients, out):
    d = coefficients.shape[0]
    for i in prange(x.shape[0]):
        acc = coefficients[0]
        v = x[i]
        for k in range(1, d):
            acc = acc * v + coefficients[k]
        out[i] = acc


def horner(x: np.ndarray, coefficients: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Evaluate the polynomial with ``coefficients`` (highest power first) at every ``x[i]``.

    2·(d-1) flops per element for d coefficients, ``HORNER_BYTES`` (24) bytes counted:
    intensity (d-1)/12 flop/byte.
    Parallel strategy: ``prange`` over elements, a Horner chain per element; fastmath lets LLVM
    interleave several elements' chains in SIMD registers.
    """
    validation.array("x", x, ndim=1, dtype=np.float64)
    validation.array("coefficients", coefficients, ndim=1, dtype=np.float64, min_size=1)
    if out is None:
        out = np.empty_like(x)
    else:
        validation.output("out", out, ndim=1, dtype=np.float64)
        validation.same_shape("x", x, "out", out)
    _horner_kernel(x, coefficients, out)
    return out


def horner_flops(n: int, degree: int) -> int:
    """Floating-point operations of ``horner`` on n points for a degree-``degree`` polynomial."""
    validation.positive_int("n", n)
    validation.positive_int("degree", degree)
    return 2 * degree * n


def random_vectors(n: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two float64 vectors of length ``n`` with values in [0.5, 1.5), reproducible by ``seed``."""
    n = validation.positive_int("n", n, maximum=validation.memory_bytes() // 32)  # two vectors
    rng = np.random.default_rng(validation.seed("seed", seed))
    return rng.random(n) + 0.5, rng.random(n) + 0.5


#: Degree of the polynomial that makes ``horner`` compute-bound (64 flops per 24 bytes).
HORNER_DEGREE = 32
#: Share of the arrays that ``measure_thread_scaling`` gives to ``horner``.
HORNER_SHARE = 1 / 8


def horner_coefficients(degree: int = HORNER_DEGREE) -> np.ndarray:
    """Fixed coefficients of a degree-``degree`` polynomial, small enough to stay finite."""
    degree = validation.positive_int("degree", degree)
    return np.linspace(1.0, 0.5, degree + 1)


def measure_thread_scaling(x: np.ndarray, y: np.ndarray, *, degree: int = HORNER_DEGREE,
                           thread_counts=None, repeat: int = 5) -> dict:
    """Time the product (memory-bound) and ``horner`` (compute-bound) on each thread count.

    Returns ``{(kernel, threads): Timing}`` with kernel ``"product"`` or ``"horner"``, bytes
    counted by the write-allocate rule. ``horner`` runs on the first ``HORNER_SHARE`` of
    ``x``: it is limited by arithmetic, so a shorter array shows the same rate in less time.
    Every kernel is called once before it is timed (``timing.measure``), so compilation is
    not counted. The ``repeat`` samples of each cell are taken in rounds that visit every
    thread count in turn, and each cell keeps all its samples (``best`` is their minimum): a
    moment when another program holds a core then slows one sample of each count, instead of
    every sample of the count that happened to be measured at that moment.
    """
    out = _check_pair(x, y)
    coefficients = horner_coefficients(degree)
    repeat = validation.positive_int("repeat", repeat, maximum=timing.MAX_REPEAT)
    counts = sorted({1, threads.max_threads()}) if thread_counts is None else list(thread_counts)
    n = x.shape[0]
    m = max(1, int(n * HORNER_SHARE))
    hx, hout = x[:m], out[:m]
    kernels = {  # name -> (function, arguments, bytes, flops)
        "product": (product_parallel, (x, y, out), PRODUCT_BYTES * n, n),
        "horner": (horner, (hx, coefficients, hout), HORNER_BYTES * m, horner_flops(m, degree)),
    }
    found = {}
    for _ in range(repeat):
        for k in counts:
            with threads.using_threads(k):
                for name, (func, args, nbytes, flops) in kernels.items():
                    t = timing.measure(func, *args, repeat=1, name=f"{name}, {k} thread(s)",
                                       nbytes=nbytes, flops=flops)
                    old = found.get((name, k))
                    found[name, k] = t if old is None else dataclasses.replace(
                        old, times=old.times + t.times)
    return found
