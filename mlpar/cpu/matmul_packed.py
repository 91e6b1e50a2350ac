"""What BLAS does beyond blocking: packing and a register block, then BLAS itself.

========== ====================================================================================
packed     B is copied transposed ("packed") so both operands are read with unit stride, and
           each thread computes 4 × 4 blocks of C in registers, so every load feeds 2
           multiply-adds (Goto & van de Geijn, 2008, describe the full scheme)
blas       ``numpy.matmul``, which calls the BLAS library numpy was built with
========== ====================================================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mlpar.core import threads as _threads  # noqa: F401  (numba's thread-safe layer, first)
from mlpar.cpu.matmul_loops import check_operands

#: Side of the register block of the ``packed`` kernel (its 4 × 4 = 16 accumulators).
REGISTER_BLOCK = 4


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
    a, b = check_operands(a, b)
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
    a, b = check_operands(a, b)
    return a @ b
