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
(read x, write out). At the lesson's degree (``HORNER_DEGREE``) that is far right of any
machine's ridge point, so memory is not its limit and it *does* scale with threads. Its speed
on one core is set by the latency of its chain of multiply-adds, not by SIMD width.
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


def compiled_kernel(kernel: str = "simd"):
    """The compiled product loop itself, without the wrapper's argument checks: the
    dispatcher ``(x, y, out)`` of the ``"scalar"`` or ``"simd"`` build. On arrays in the
    L1 cache a call takes a few hundred nanoseconds, and the wrapper's checks (several
    microseconds) would be most of what a timing measures."""
    validation.choice("kernel", kernel, ("scalar", "simd"))
    return _scalar_kernel.dispatcher() if kernel == "scalar" else _simd_kernel


def _product_repeated_body(x, y, out, reps):
    # The product ``reps`` times in one compiled call: on arrays in the L1 cache one pass
    # takes tens of nanoseconds, less than a call from Python costs (~0.2 µs), so a timing of
    # single calls would measure the call. out may alias x or y, so LLVM cannot drop a pass.
    for _ in range(reps):
        for i in range(x.shape[0]):
            out[i] = x[i] * y[i]


_scalar_repeated = without_simd(_product_repeated_body,
                                "void(float64[::1], float64[::1], float64[::1], int64)")
_simd_repeated = njit(_product_repeated_body)


def repeated_kernel(kernel: str = "simd"):
    """The compiled product loop run ``reps`` times per call: the dispatcher
    ``(x, y, out, reps)`` of the ``"scalar"`` or ``"simd"`` build. Timing many passes in one
    call leaves out the cost of calling from Python, which dominates on arrays in L1."""
    validation.choice("kernel", kernel, ("scalar", "simd"))
    return _scalar_repeated.dispatcher() if kernel == "scalar" else _simd_repeated


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
    Parallel strategy: ``prange`` over elements, one Horner chain per element. Each step of a
    chain waits for the previous multiply-add, so one chain runs at the latency of that
    instruction; the out-of-order core overlaps the chains of neighbouring elements, which
    is what one core gains. numba compiles the chain to scalar instructions
    (``horner_instructions`` shows them): wider SIMD would not speed it up, more cores do.
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


#: Degree of the polynomial that makes ``horner`` clearly compute-bound: 512 flops per 24
#: bytes (21 flop/byte), far right of the ridge of any current CPU (2-10 flop/byte).
HORNER_DEGREE = 256
#: Rounds of ``measure_thread_scaling``: with 8 thread counts (128 cores) and 3 calls per
#: kernel and round, the product and the triad pass over the arrays 144 times
#: (``stream.PASSES_PER_CELL``).
SCALING_REPEAT = 3
#: The highest degree ``horner_coefficients`` builds (far past any ridge point already).
MAX_DEGREE = 1 << 16
#: Elements ``measure_thread_scaling`` gives to ``horner`` (at most): it is limited by
#: arithmetic, so a short array shows the same rate in less time.
HORNER_LENGTH = 1 << 18


def thread_sweep(top: int | None = None) -> list[int]:
    """1, 2, 4, ... up to ``top`` threads, and ``top`` itself (default: numba's threads)."""
    top = threads.max_threads() if top is None else validation.positive_int("top", top)
    counts = [1 << k for k in range(top.bit_length()) if 1 << k < top]
    return counts + [top]


def horner_instructions() -> list[str]:
    """The multiply-add and multiply instructions in ``horner``'s compiled loop: scalar
    (``sd``) or packed (``pd``), with their registers (see ``multiply_instructions``)."""
    if not _horner_kernel.signatures:
        _horner_kernel(np.ones(8), horner_coefficients(2), np.empty(8))
    asm = "\n".join(_horner_kernel.inspect_asm().values())
    found = re.findall(r"\b(v?(?:fmadd\d*|mul)[sp]d)\b[^\n]*?%([xyz]mm)", asm)
    return sorted({f"{op} {register}" for op, register in found})


def horner_coefficients(degree: int = HORNER_DEGREE) -> np.ndarray:
    """Fixed coefficients of a degree-``degree`` polynomial, small enough to stay finite."""
    degree = validation.positive_int("degree", degree, maximum=MAX_DEGREE)
    return np.linspace(1.0, 0.5, degree + 1)


def measure_thread_scaling(x: np.ndarray, y: np.ndarray, *, degree: int = HORNER_DEGREE,
                           thread_counts=None, repeat: int = SCALING_REPEAT) -> dict:
    """Time the product (memory-bound), STREAM's triad and ``horner`` (compute-bound) on each
    thread count (default 1, 2, 4, ... up to numba's threads: ``thread_sweep()``).

    Returns ``{(kernel, threads): Timing}`` with kernel ``"product"``, ``"triad"`` or
    ``"horner"``, bytes counted by the write-allocate rule. The triad moves the same bytes as
    the product in the same pattern: measured in the same rounds, it is the memory roof the
    product is compared with (a roof measured at another moment can be lower than the product
    on a shared machine). ``horner`` runs on the first ``HORNER_LENGTH`` elements of ``x``.
    The triad overwrites the product's output, which this function allocates itself.
    Every kernel is called once before it is timed (``timing.measure``), so compilation is
    not counted. The ``repeat`` samples of each cell are taken in rounds that visit every
    thread count in turn, and each cell keeps all its samples (``best`` is their minimum): a
    moment when another program holds a core then slows one sample of each count, instead of
    every sample of the count that happened to be measured at that moment.
    """
    out = _check_pair(x, y)
    coefficients = horner_coefficients(degree)
    repeat = validation.positive_int("repeat", repeat, maximum=timing.MAX_REPEAT)
    if thread_counts is None:
        counts = thread_sweep()
    else:
        if isinstance(thread_counts, (str, bytes)) or not hasattr(thread_counts, "__iter__"):
            raise TypeError(f"thread_counts: expected a sequence of thread counts, got "
                            f"{type(thread_counts).__name__}")
        counts = [validation.positive_int("thread_counts", k) for k in thread_counts]
        if not counts:
            raise ValueError("thread_counts: expected at least one count, got an empty sequence")
    n = x.shape[0]
    m = min(n, HORNER_LENGTH)
    hx, hout = x[:m], out[:m]
    triad = stream.KERNELS["triad"]
    kernels = {  # name -> (function, arguments, bytes, flops)
        "product": (product_parallel, (x, y, out), PRODUCT_BYTES * n, n),
        "triad": (stream.triad, (out, x, y, 3.0),
                  stream.bytes_moved(n, reads=triad[0], writes=triad[1]), 2 * n),
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


@dataclasses.dataclass(frozen=True)
class Explored:
    """What the lesson's widget measured: the product and horner at one size and thread count."""

    n: int
    n_threads: int
    product: timing.Timing   # product_parallel on the first n elements (bytes counted)
    horner: timing.Timing    # horner on the first min(n, HORNER_LENGTH) elements (flops counted)
    horner_n: int


def explore(x: np.ndarray, y: np.ndarray, out: np.ndarray, *, log2_size: int,
            n_threads: int, repeat: int = 3) -> Explored:
    """Time the parallel product and horner on the first 2**log2_size elements of the arrays
    with ``n_threads`` numba threads (the lesson's widget). ``out`` is overwritten."""
    x, y, out = stream.three_arrays("arrays", (x, y, out), written=2)
    log2_size = validation.positive_int("log2_size", log2_size, maximum=62)
    n = 1 << log2_size
    if n > x.shape[0]:
        raise ValueError(f"log2_size: expected at most {x.shape[0].bit_length() - 1} (the arrays "
                         f"hold {x.shape[0]:,} elements), got {log2_size}")
    n_threads = validation.positive_int("n_threads", n_threads, maximum=threads.max_threads())
    xs, ys, os_ = x[:n], y[:n], out[:n]
    hn = min(n, HORNER_LENGTH)  # horner's rate does not need more elements than this
    with threads.using_threads(n_threads):
        prod = timing.measure(product_parallel, xs, ys, os_, repeat=repeat,
                              nbytes=PRODUCT_BYTES * n, flops=n)
        poly = timing.measure(horner, xs[:hn], horner_coefficients(), os_[:hn], repeat=repeat,
                              flops=horner_flops(hn, HORNER_DEGREE))
    return Explored(n, n_threads, prod, poly, hn)

