"""What BLAS does beyond blocking: packing and a register block, then BLAS itself.

========== ====================================================================================
packed     B is copied transposed ("packed") so both operands are read with unit stride, B is
           walked in panels that stay in the L2 cache, and each thread computes 4 × 4 blocks
           of C in registers, so every load feeds 2 multiply-adds (Goto & van de Geijn, 2008,
           describe the full scheme)
blas       ``numpy.matmul``, which calls the BLAS library numpy was built with
========== ====================================================================================
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange

from mlpar.core import threads as _threads  # noqa: F401  (numba's thread-safe layer, first)
from mlpar.cpu.matmul_loops import check_operands

#: Side of the register block of the ``packed`` kernel (its 4 × 4 = 16 accumulators).
REGISTER_BLOCK = 4
#: Bytes of packed B one panel holds: half of a 512 KiB L2 cache (the smallest common today;
#: many cores have 1-2 MiB), so the panel stays there while every strip of A passes over it.
#: A is then read once per panel. Past m = 8192 even a 4-row panel is larger (there is no
#: blocking along k, as BLAS has): the kernel still runs, with B from a slower cache.
PANEL_BYTES = 256 * 1024


#: Packing buffers up to this size are kept for the next call (larger ones are freed).
KEPT_BUFFER_BYTES = 32 * 2**20
_BUFFERS = threading.local()  # one per thread: two threads packing at once must not share it


def _packing_buffer(rows: int, cols: int) -> np.ndarray:
    """A (rows, cols) float64 work array, the same memory from call to call where it fits.

    BLAS libraries allocate their packing buffers once and reuse them. A fresh megabyte-sized
    array on every call costs page faults (the allocator returns freed memory to the operating
    system) on every call, a cost BLAS does not pay.
    """
    if rows * cols * 8 > KEPT_BUFFER_BYTES:
        return np.empty((rows, cols))
    kept = getattr(_BUFFERS, "array", None)
    if kept is None or kept.size < rows * cols:
        kept = _BUFFERS.array = np.empty(max(rows * cols, 2**16))
    return kept[:rows * cols].reshape(rows, cols)


def panel_rows(m: int) -> int:
    """Rows of packed B (columns of B) in one panel: PANEL_BYTES of them, a multiple of 4."""
    return max(REGISTER_BLOCK, PANEL_BYTES // (8 * m) // REGISTER_BLOCK * REGISTER_BLOCK)


@njit(parallel=True, cache=True)
def _pack_transposed(b, bt):
    # bt[j, k] = b[k, j]: each thread writes whole rows of bt, so the writes are disjoint.
    m, p = b.shape
    for j in prange(p):
        for k in range(m):
            bt[j, k] = b[k, j]


@njit(parallel=True, fastmath=True, cache=True)
def _packed_kernel(ap, bt, c, panel):
    # ap: (n4, m) rows of A, bt: (p4, m) rows of B transposed; n4, p4 and panel multiples of 4.
    # Without panels, every strip of A streams all of bt (p4 × m × 8 bytes, megabytes) from the
    # last-level cache or memory; with them, each panel is loaded once and read by every strip.
    n4, m = ap.shape
    p4 = bt.shape[0]
    for j0 in range(0, p4, panel):
        for ib in prange(n4 // 4):
            _strip_times_panel(ap, bt, c, 4 * ib, j0, min(j0 + panel, p4), m)


@njit(fastmath=True, cache=True, inline="always")
def _strip_times_panel(ap, bt, c, i, j0, j1, m):
    for j in range(j0, j1, 4):
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


def matmul_packed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numba ``prange`` with packing and a 4 × 4 register block: the best of the numba variants.

    Optimizations:
      * packing: B is copied *transposed* (and A zero-padded to a multiple of 4 rows when it
        is not one), so the inner loop reads both operands with unit stride;
      * panels: B is walked in panels of columns small enough to stay in the L2 cache
        (``PANEL_BYTES``), and every strip of A is multiplied by one panel before the next
        panel is read, so B comes from the slow caches once per panel, not once per strip;
      * register blocking: a 4 × 4 block of C is summed in 16 scalars over the whole k loop,
        so C is written once instead of m times, and each loaded number is used 4 times;
      * ``fastmath``: lets the 16 sums be reordered, which is what allows SIMD over k
        (the result therefore differs from BLAS in the last bits, as BLAS's own order does);
      * parallel strategy: ``prange`` over the 4-row strips of C within a panel, disjoint
        writes, no locks.
    """
    a, b = check_operands(a, b)
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    r = REGISTER_BLOCK
    n4, p4 = -(-n // r) * r, -(-p // r) * r
    # Zero padding makes every strip a full 4 × 4 block; the padded rows add zeros.
    if n4 == n:
        ap = a  # check_operands made it C-contiguous: rows of unit stride, nothing to copy
    else:
        ap = np.zeros((n4, m))
        ap[:n] = a
    bt = _packing_buffer(p4, m)
    _pack_transposed(b, bt)  # numpy's b.T copy runs on one thread; this one on all of them
    bt[p:] = 0.0
    c = np.empty((n4, p4))
    _packed_kernel(ap, bt, c, panel_rows(m))
    return c if (n4, p4) == (n, p) else np.ascontiguousarray(c[:n, :p])


def matmul_blas(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``: numpy hands the product to its BLAS (OpenBLAS, MKL, Accelerate...)."""
    a, b = check_operands(a, b)
    return a @ b
