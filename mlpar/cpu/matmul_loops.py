"""Matrix multiplication by loops: the loop order, cache blocking, and threads over tiles.

``C = A @ B`` with ``A`` of shape (n, m) and ``B`` of shape (m, p):

    c[i, j] = sum_k a[i, k] * b[k, j]        2·n·m·p flops (one multiply and one add per term)

========== ====================================================================================
python     the triple loop in the interpreter (tiny sizes only)
ijk        the same loop order compiled by numba; the inner loop walks down a *column* of B,
           a stride of m·8 bytes, so almost every load misses the cache line it just fetched
ikj        the loops swapped: the inner loop walks along a row of B and a row of C, unit
           stride, which the compiler turns into SIMD loads and fused multiply-adds
blocked    the *same* ikj loop, run tile by tile over ``block`` × ``block`` tiles, so the tile
           of B in use stays in cache while every row of the A-tile reuses it
parallel   the blocked kernel with the row-tiles of C shared among threads (``prange``)
========== ====================================================================================

The faster variants (packing, register blocking, BLAS) are in ``mlpar.cpu.matmul_packed``;
``mlpar.cpu.matmul`` names them all and measures them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mlpar.core import threads as _threads  # noqa: F401  (numba's thread-safe layer, first)
from mlpar.core import validation

#: Default side of a cache tile: three float64 tiles take 3·8·64² bytes = 96 KiB, which fits
#: a typical L2 cache (and one 32 KiB tile of B fits L1).
DEFAULT_BLOCK = 64


def check_operands(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Validate two float64 C-contiguous matrices whose inner dimensions agree."""
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
    if (n * m + m * p) * 8 > validation.memory_bytes() // 2:
        raise ValueError(f"n, m, p: expected matrices that fit in half of this machine's memory, "
                         f"got ({n}, {m}) and ({m}, {p}) = {(n * m + m * p) * 8 / 1e9:,.4g} GB")
    rng = np.random.default_rng(validation.seed("seed", seed))
    return rng.standard_normal((n, m)), rng.standard_normal((m, p))


def matmul_python(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The textbook triple loop, run by the interpreter (keep n below ~100).

    The matrices are turned into lists of Python floats first: indexing a numpy array one
    element at a time is even slower than a list, and would blame numpy for the interpreter.
    """
    a, b = check_operands(a, b)
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
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total = 0.0
            for k in range(a.shape[1]):  # b[k, j] with k varying: stride of a whole row of B
                total += a[i, k] * b[k, j]
            c[i, j] = total


def _dot_rows(a, bt, c):
    # ijk on B transposed: c[i, j] is the dot product of two rows, both read with unit
    # stride, still summed in one running total, one dependency chain per entry. 1-D row
    # views indexed from 0, as in _tile, so that numba's index checks do not block SIMD.
    for i in range(a.shape[0]):
        a_row = a[i]
        for j in range(bt.shape[0]):
            b_row = bt[j]
            total = 0.0
            for k in range(a_row.shape[0]):
                total += a_row[k] * b_row[k]
            c[i, j] = total


#: The same loop twice: as written (one chain: each add waits for the last), and with
#: ``fastmath``, which lets LLVM split the running total into many SIMD partial sums. Not
#: cached: numba would key both on the one Python function and could load one for the other.
_dot_rows_kernel = njit(_dot_rows)
_dot_rows_fastmath_kernel = njit(fastmath=True)(_dot_rows)


def matmul_ijk_transposed(a: np.ndarray, b: np.ndarray, *, fastmath: bool = False) -> np.ndarray:
    """ijk with B transposed first, so the inner loop reads both operands with unit stride.

    Written to separate two causes of ijk's slowness: if it were the stride, this would be
    fast; it is as slow as ijk (outside power-of-two sizes) because ``total += ...`` is one
    dependency chain, lesson 01's single accumulator. ``fastmath=True`` lets the compiler
    reorder the sum into several SIMD chains, and it then runs as fast as ikj.
    """
    a, b = check_operands(a, b)
    bt = np.ascontiguousarray(b.T)
    c = np.empty((a.shape[0], b.shape[1]))
    (_dot_rows_fastmath_kernel if fastmath else _dot_rows_kernel)(a, bt, c)
    return c


@njit(cache=True)
def _tile(a, b, c, i0, i1, k0, k1, j0, j1):
    # c[i0:i1, j0:j1] += a[i0:i1, k0:k1] @ b[k0:k1, j0:j1] in ikj order: for each row i and
    # each k, add a[i, k] times a row of B to a row of C (unit stride: SIMD multiply-adds).
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
def _ikj_kernel(a, b, c):
    # ikj over the whole matrices is one tile as large as the product.
    _tile(a, b, c, 0, a.shape[0], 0, a.shape[1], 0, b.shape[1])


@njit(cache=True)
def _row_tile(a, b, c, i0, i1, block):
    # All tiles of the row-tile c[i0:i1, :]; min() clips the edge tiles when a size is not a
    # multiple of block. The k0 loop is outside the j0 loop, so a tile of B is used by every
    # row of the A-tile while it is in cache.
    m, p = a.shape[1], b.shape[1]
    for k0 in range(0, m, block):
        for j0 in range(0, p, block):
            _tile(a, b, c, i0, i1, k0, min(k0 + block, m), j0, min(j0 + block, p))


@njit(cache=True)
def _blocked_kernel(a, b, c, block):
    n = a.shape[0]
    for i0 in range(0, n, block):
        _row_tile(a, b, c, i0, min(i0 + block, n), block)


@njit(parallel=True, cache=True)
def _parallel_kernel(a, b, c, block):
    n = a.shape[0]
    n_tiles = (n + block - 1) // block
    # Each thread owns whole row-tiles of C: no two threads ever write the same element,
    # so there is no race and no lock.
    for t in prange(n_tiles):
        _row_tile(a, b, c, t * block, min(t * block + block, n), block)


def matmul_ijk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numba, loop order i-j-k: a dot product per element, B read down its columns."""
    a, b = check_operands(a, b)
    c = np.empty((a.shape[0], b.shape[1]))
    _ijk_kernel(a, b, c)
    return c


def matmul_ikj(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numba, loop order i-k-j: row ``i`` of C accumulates ``a[i, k]`` times row ``k`` of B."""
    a, b = check_operands(a, b)
    c = np.zeros((a.shape[0], b.shape[1]))
    _ikj_kernel(a, b, c)
    return c


def matmul_blocked(a: np.ndarray, b: np.ndarray, block: int = DEFAULT_BLOCK) -> np.ndarray:
    """Numba, ikj within ``block`` × ``block`` tiles (cache blocking), one thread.

    ikj reads all of B once per row of A; the blocked loop reads each tile of B once per
    row-tile of A, ``block`` rows at a time: ``block`` times less traffic for B, which matters
    once B no longer fits in the cache.
    """
    a, b = check_operands(a, b)
    block = validation.positive_int("block", block)
    c = np.zeros((a.shape[0], b.shape[1]))
    _blocked_kernel(a, b, c, block)
    return c


def matmul_parallel(a: np.ndarray, b: np.ndarray, block: int = DEFAULT_BLOCK) -> np.ndarray:
    """Numba ``prange`` over row-tiles of C, each computed by the blocked kernel.

    Parallel strategy: the ``ceil(n / block)`` row-tiles are independent (they read all of B
    but write disjoint rows of C), so numba's scheduler hands them to its threads. Use
    ``mlpar.core.threads.using_threads(k)`` to choose the thread count.
    """
    a, b = check_operands(a, b)
    block = validation.positive_int("block", block)
    c = np.zeros((a.shape[0], b.shape[1]))
    _parallel_kernel(a, b, c, block)
    return c
