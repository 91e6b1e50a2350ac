"""Matrix multiplication, from a Python triple loop to BLAS.

``C = A @ B`` with ``A`` of shape (n, m) and ``B`` of shape (m, p):

    c[i, j] = sum_k a[i, k] * b[k, j]        2·n·m·p flops (one multiply and one add per term)

Every variant computes the same thing; they differ only in the order the loops visit memory
and in how many cores they use, which is the whole lesson:

========== ====================================================================================
python     the triple loop in the interpreter (tiny sizes only)
ijk        the same loop order compiled by numba; the inner loop walks down a *column* of B,
           a stride of m·8 bytes, so almost every load misses the cache line it just fetched
ikj        the loops swapped: the inner loop walks along a row of B and a row of C, unit
           stride, which the compiler turns into SIMD loads and fused multiply-adds
blocked    ikj inside ``block`` × ``block`` tiles, so the three tiles in use stay in cache
parallel   the blocked kernel with the row-tiles of C shared among threads (``prange``)
packed     parallel, plus what BLAS does next: B is copied transposed ("packed"), and each
           thread computes 4 × 4 blocks of C in registers, so every load feeds 2 multiply-adds
blas       ``numpy.matmul``, which calls the BLAS library numpy was built with
========== ====================================================================================

Run ``python -m mlpar.bench linear_algebra`` for the measured GFLOP/s of each against BLAS.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

# Imported first for its side effect: numba's thread-safe layer, before any parallel code runs.
from . import threads as _threads  # noqa: F401
from . import timing, validation

#: Side of the register block of the ``packed`` kernel (its 4 × 4 = 16 accumulators).
REGISTER_BLOCK = 4


def _check_operands(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = validation.array("a", a, ndim=2, dtype=np.float64, contiguous=True, min_size=1)
    b = validation.array("b", b, ndim=2, dtype=np.float64, contiguous=True, min_size=1)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"b: expected {a.shape[1]} rows to match the {a.shape[1]} columns of a "
            f"(a is {a.shape}), got shape {b.shape}"
        )
    return a, b


def matmul_flops(n: int, m: int, p: int) -> int:
    """Floating-point operations of an (n, m) @ (m, p) product: 2·n·m·p."""
    n = validation.positive_int("n", n)
    m = validation.positive_int("m", m)
    p = validation.positive_int("p", p)
    return 2 * n * m * p


def random_matrices(n: int, m: int | None = None, p: int | None = None, *, seed: int = 0):
    """Two standard-normal float64 matrices of shapes (n, m) and (m, p); square by default."""
    n = validation.positive_int("n", n)
    m = n if m is None else validation.positive_int("m", m)
    p = n if p is None else validation.positive_int("p", p)
    rng = np.random.default_rng(validation.seed("seed", seed))
    return rng.standard_normal((n, m)), rng.standard_normal((m, p))


# ---------------------------------------------------------------------------------------------
# Variants


def matmul_python(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The textbook triple loop, run by the interpreter (keep n below ~100).

    The matrices are turned into lists of Python floats first: indexing a numpy array one
    element at a time is even slower than a list, and would blame numpy for the interpreter.
    """
    a, b = _check_operands(a, b)
    rows, cols = a.tolist(), b.tolist()
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    c = [[0.0] * p for _ in range(n)]
    for i in range(n):
        for j in range(p):
            total = 0.0
            for k in range(m):
                total += rows[i][k] * cols[k][j]
            c[i][j] = total
    return np.array(c)


@njit(cache=True)
def _ijk_kernel(a, b, c):
    n, m = a.shape
    p = b.shape[1]
    for i in range(n):
        for j in range(p):
            total = 0.0
            for k in range(m):  # b[k, j] with k varying: stride of a whole row of B
                total += a[i, k] * b[k, j]
            c[i, j] = total


@njit(cache=True)
def _ikj_kernel(a, b, c):
    n, m = a.shape
    p = b.shape[1]
    for i in range(n):
        for k in range(m):
            aik = a[i, k]
            for j in range(p):  # unit stride in b and c: vectorised by LLVM
                c[i, j] += aik * b[k, j]


@njit(cache=True)
def _tile(a, b, c, i0, i1, k0, k1, j0, j1):
    # One tile product c[i0:i1, j0:j1] += a[i0:i1, k0:k1] @ b[k0:k1, j0:j1], in ikj order.
    # The inner loop runs over 1-D row views from index 0: with ``range(j0, j1)`` on the full
    # arrays numba cannot prove the index is non-negative, keeps its negative-index check in
    # the loop, and LLVM then does not vectorise it.
    for i in range(i0, i1):
        c_row = c[i, j0:j1]
        for k in range(k0, k1):
            aik = a[i, k]
            b_row = b[k, j0:j1]
            for j in range(c_row.shape[0]):
                c_row[j] += aik * b_row[j]


@njit(cache=True)
def _blocked_kernel(a, b, c, block):
    n, m = a.shape
    p = b.shape[1]
    for i0 in range(0, n, block):
        for k0 in range(0, m, block):
            for j0 in range(0, p, block):
                # min() handles the edge tiles when a size is not a multiple of block.
                _tile(a, b, c, i0, min(i0 + block, n), k0, min(k0 + block, m),
                      j0, min(j0 + block, p))


@njit(parallel=True, cache=True)
def _parallel_kernel(a, b, c, block):
    n, m = a.shape
    p = b.shape[1]
    n_tiles = (n + block - 1) // block
    # Each thread owns whole row-tiles of C: no two threads ever write the same element,
    # so there is no race and no lock.
    for t in prange(n_tiles):
        i0 = t * block
        i1 = min(i0 + block, n)
        for k0 in range(0, m, block):
            for j0 in range(0, p, block):
                _tile(a, b, c, i0, i1, k0, min(k0 + block, m), j0, min(j0 + block, p))


@njit(parallel=True, fastmath=True, cache=True)
def _packed_kernel(ap, bt, c):
    # ap: (n4, m) rows of A, bt: (p4, m) rows of B transposed; n4 and p4 multiples of 4.
    n4, m = ap.shape
    p4 = bt.shape[0]
    for ib in prange(n4 // 4):
        i = 4 * ib
        for j in range(0, p4, 4):
            # 16 scalar accumulators live in registers for the whole k loop; fastmath lets
            # LLVM reorder the sums and vectorise the k loop (8 loads feed 16 multiply-adds).
            s00 = s01 = s02 = s03 = 0.0
            s10 = s11 = s12 = s13 = 0.0
            s20 = s21 = s22 = s23 = 0.0
            s30 = s31 = s32 = s33 = 0.0
            for k in range(m):
                a0 = ap[i, k]
                a1 = ap[i + 1, k]
                a2 = ap[i + 2, k]
                a3 = ap[i + 3, k]
                b0 = bt[j, k]
                b1 = bt[j + 1, k]
                b2 = bt[j + 2, k]
                b3 = bt[j + 3, k]
                s00 += a0 * b0
                s01 += a0 * b1
                s02 += a0 * b2
                s03 += a0 * b3
                s10 += a1 * b0
                s11 += a1 * b1
                s12 += a1 * b2
                s13 += a1 * b3
                s20 += a2 * b0
                s21 += a2 * b1
                s22 += a2 * b2
                s23 += a2 * b3
                s30 += a3 * b0
                s31 += a3 * b1
                s32 += a3 * b2
                s33 += a3 * b3
            c[i, j], c[i, j + 1], c[i, j + 2], c[i, j + 3] = s00, s01, s02, s03
            c[i + 1, j], c[i + 1, j + 1], c[i + 1, j + 2], c[i + 1, j + 3] = s10, s11, s12, s13
            c[i + 2, j], c[i + 2, j + 1], c[i + 2, j + 2], c[i + 2, j + 3] = s20, s21, s22, s23
            c[i + 3, j], c[i + 3, j + 1], c[i + 3, j + 2], c[i + 3, j + 3] = s30, s31, s32, s33


def matmul_ijk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numba, loop order i-j-k: a dot product per element, B read down its columns."""
    a, b = _check_operands(a, b)
    c = np.empty((a.shape[0], b.shape[1]))
    _ijk_kernel(a, b, c)
    return c


def matmul_ikj(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numba, loop order i-k-j: row ``i`` of C accumulates ``a[i, k]`` times row ``k`` of B."""
    a, b = _check_operands(a, b)
    c = np.zeros((a.shape[0], b.shape[1]))
    _ikj_kernel(a, b, c)
    return c


def matmul_blocked(a: np.ndarray, b: np.ndarray, block: int = 64) -> np.ndarray:
    """Numba, ikj within ``block`` × ``block`` tiles (cache blocking), one thread.

    Three float64 tiles take 3·8·block² bytes: 96 KiB at block=64, which fits a typical L2
    cache, so each element of a tile is reused ``block`` times per trip from memory.
    """
    a, b = _check_operands(a, b)
    block = validation.positive_int("block", block)
    c = np.zeros((a.shape[0], b.shape[1]))
    _blocked_kernel(a, b, c, block)
    return c


def matmul_parallel(a: np.ndarray, b: np.ndarray, block: int = 64) -> np.ndarray:
    """Numba ``prange`` over row-tiles of C, each computed by the blocked kernel.

    Parallel strategy: the ``ceil(n / block)`` row-tiles are independent (they read all of B
    but write disjoint rows of C), so numba's scheduler hands them to its threads. Use
    ``mlpar.threads.using_threads(k)`` to choose the thread count.
    """
    a, b = _check_operands(a, b)
    block = validation.positive_int("block", block)
    c = np.zeros((a.shape[0], b.shape[1]))
    _parallel_kernel(a, b, c, block)
    return c


def matmul_packed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numba ``prange`` with packing and a 4 × 4 register block: the best of the numba variants.

    Optimizations:
      * packing: A is copied (zero-padded to a multiple of 4 rows) and B is copied
        *transposed*, so the inner loop reads both operands with unit stride;
      * register blocking: a 4 × 4 block of C is summed in 16 scalars over the whole k loop,
        so C is written once instead of m times, and each loaded number is used 4 times;
      * ``fastmath``: lets the 16 sums be reordered, which is what allows SIMD over k
        (the result therefore differs from BLAS in the last bits, as BLAS's own order does);
      * parallel strategy: ``prange`` over the 4-row strips of C, disjoint writes, no locks.
    """
    a, b = _check_operands(a, b)
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    r = REGISTER_BLOCK
    n4, p4 = -(-n // r) * r, -(-p // r) * r
    # Zero padding makes every strip a full 4 × 4 block; the padded rows add zeros.
    ap = np.zeros((n4, m))
    ap[:n] = a
    bt = np.zeros((p4, m))
    bt[:p] = b.T
    c = np.empty((n4, p4))
    _packed_kernel(ap, bt, c)
    return np.ascontiguousarray(c[:n, :p])


def matmul_blas(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``: numpy hands the product to its BLAS (OpenBLAS, MKL, Accelerate...)."""
    a, b = _check_operands(a, b)
    return a @ b


#: name -> function(a, b); ``block`` is passed to the variants that take one.
VARIANTS = {
    "python": matmul_python,
    "ijk": matmul_ijk,
    "ikj": matmul_ikj,
    "blocked": matmul_blocked,
    "parallel": matmul_parallel,
    "packed": matmul_packed,
    "blas": matmul_blas,
}
_TAKES_BLOCK = ("blocked", "parallel")


def matmul(a: np.ndarray, b: np.ndarray, variant: str = "blas", block: int = 64) -> np.ndarray:
    """Multiply with the named variant (one of ``VARIANTS``)."""
    validation.choice("variant", variant, VARIANTS)
    if variant in _TAKES_BLOCK:
        return VARIANTS[variant](a, b, block)
    return VARIANTS[variant](a, b)


# ---------------------------------------------------------------------------------------------
# Measurements


def measure_variant(variant: str, n: int, *, block: int = 64, repeat: int = 3, seed: int = 0):
    """Time one variant on two random n × n matrices; the Timing carries its flops.

    The name reads like ``"blocked(64) n=512"``: the variant, its block size if it has one,
    and the matrix size.
    """
    validation.choice("variant", variant, VARIANTS)
    a, b = random_matrices(n, seed=seed)
    label = variant if variant not in _TAKES_BLOCK else f"{variant}({block})"
    return timing.measure(matmul, a, b, variant, block, name=f"{label} n={n}", repeat=repeat,
                          flops=matmul_flops(n, n, n), min_sample_time=1e-2)


def measure_variants(
    n: int,
    variants: Sequence[str] = ("ijk", "ikj", "blocked", "parallel", "packed", "blas"),
    *,
    python_n: int = 64,
    block: int = 64,
    repeat: int = 3,
    seed: int = 0,
) -> timing.SpeedupTable:
    """Time several variants at size ``n`` (the Python loop at the tiny ``python_n``).

    GFLOP/s, not seconds, is what compares across the two sizes. The baseline of the table is
    the first variant listed.
    """
    n = validation.positive_int("n", n)
    python_n = validation.positive_int("python_n", python_n)
    if not variants:
        raise ValueError("variants: expected at least one variant name, got an empty sequence")
    rows = []
    for v in variants:
        size = python_n if v == "python" else n
        rows.append(measure_variant(v, size, block=block, repeat=repeat, seed=seed))
    return timing.compare(rows)


def blas_peak(n: int = 1024, repeat: int = 3, seed: int = 0) -> float:
    """The BLAS's GFLOP/s on a large square product with all its threads: the practical peak.

    A data-sheet peak (cores × clock × SIMD width × 2) is never reached; the best rate the
    machine's own BLAS achieves is the honest yardstick for the other variants.
    """
    n = validation.positive_int("n", n)
    a, b = random_matrices(n, seed=seed)
    t = timing.measure(np.matmul, a, b, name="blas peak", repeat=repeat,
                       flops=matmul_flops(n, n, n), min_sample_time=1e-2)
    return t.gflops


def blas_threads() -> int:
    """How many threads the BLAS behind numpy uses by default (from ``threadpoolctl``)."""
    from threadpoolctl import threadpool_info

    counts = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return max(counts) if counts else 1


def measure_blas_threads(
    n: int = 512, thread_counts: Sequence[int] | None = None, *, repeat: int = 3, seed: int = 0
) -> timing.SpeedupTable:
    """Implicit parallelism: time the same ``a @ b`` with the BLAS limited to each thread count.

    ``threadpoolctl.threadpool_limits`` changes the BLAS's thread count for the ``with`` block
    and restores it afterwards; numpy's code is unchanged, only the library underneath runs
    on fewer or more cores. The first count is the baseline.
    """
    from threadpoolctl import threadpool_limits

    n = validation.positive_int("n", n)
    counts = (1, blas_threads()) if thread_counts is None else tuple(thread_counts)
    if not counts:
        raise ValueError("thread_counts: expected at least one count, got an empty sequence")
    counts = tuple(dict.fromkeys(validation.positive_int("thread_counts", k) for k in counts))
    a, b = random_matrices(n, seed=seed)
    rows = []
    for k in counts:
        with threadpool_limits(limits=k, user_api="blas"):
            rows.append(timing.measure(np.matmul, a, b, name=f"BLAS, {k} thread(s)",
                                       repeat=repeat, flops=matmul_flops(n, n, n),
                                       min_sample_time=1e-2))
    return timing.compare(rows)


def plot_gflops(table: timing.SpeedupTable, peak_gflops: float, ax=None):
    """Bars of GFLOP/s per variant (log scale) with the measured BLAS peak as a line."""
    import matplotlib.pyplot as plt

    peak_gflops = validation.positive("peak_gflops", peak_gflops)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.4))
    names = [t.name for t in table.timings]
    values = [t.gflops for t in table.timings]
    bars = ax.barh(names, values, color="tab:blue")
    ax.bar_label(bars, labels=[f"{v:.3g} ({100 * v / peak_gflops:.2g}% of peak)" for v in values],
                 padding=3, fontsize=8)
    ax.axvline(peak_gflops, color="tab:red", ls="--", label="measured BLAS peak")
    ax.set_xscale("log")
    ax.set_xlabel("GFLOP/s (log scale)")
    ax.invert_yaxis()
    ax.margins(x=0.4)
    ax.legend(fontsize=8, loc="upper right")
    return ax
