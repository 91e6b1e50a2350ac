"""Sparse classification problems whose density is a knob, and the Hogwild sparsity measures.

Hogwild (Niu, Recht, Ré and Wright, 2011) writes the objective as a sum over *edges*,
``f(w) = Σ_{e∈E} f_e(w_e)``: each term reads and writes only the coordinates ``e`` it
touches. For a linear model the edge of sample ``i`` is the set of its nonzero features, the
column indices of row ``i`` of ``X``. How often two concurrent updates touch the same
coordinate depends only on this hypergraph, and three numbers summarise it (here
``E`` = the non-empty rows, ``n`` = ``n_features``, ``deg(v) = |{e ∈ E : v ∈ e}|``):

* ``Ω = max_{e∈E} |e|``: the most coordinates one update writes (max nonzeros in a row);
* ``Δ = max_{1≤v≤n} deg(v) / |E|``: the largest fraction of updates that touch one
  coordinate (the normalised maximum column degree);
* ``ρ = max_{e∈E} |{ê ∈ E : ê ∩ e ≠ ∅}| / |E|``: the largest fraction of updates that share
  at least one coordinate with one update (``e`` counts itself, so ``ρ ≥ 1/|E|``).

Small ``Ω``, ``Δ`` and ``ρ`` mean that two updates running at the same time rarely meet, so
leaving out the lock costs little; as the density grows they approach 1.

    >>> problem = make_sparse_problem(1000, 200, 0.02, seed=0)
    >>> sparsity(problem)
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from mlpar.core import limits, validation


@dataclass(frozen=True, repr=False)
class SparseProblem:
    """A sparse binary classification problem in CSR form, labels in {-1, +1}.

    Row ``i`` of ``X`` has values ``data[indptr[i]:indptr[i+1]]`` at columns
    ``indices[indptr[i]:indptr[i+1]]`` (sorted). Shapes: ``indptr`` (n_samples + 1,),
    ``indices`` and ``data`` (nnz,), ``y`` (n_samples,), ``w_true`` (n_features,).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    y: np.ndarray
    w_true: np.ndarray
    n_features: int
    density: float

    @property
    def n_samples(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def actual_density(self) -> float:
        """The share of nonzeros, ``nnz / (n_samples · n_features)``. Above ``density`` when
        ``n_features · density`` is small: every row gets at least one nonzero."""
        return self.nnz / (self.n_samples * self.n_features)

    def to_scipy(self):
        """The design matrix as a ``scipy.sparse.csr_matrix`` (for scikit-learn)."""
        from scipy import sparse

        shape = (self.n_samples, self.n_features)
        return sparse.csr_matrix((self.data, self.indices, self.indptr), shape=shape)

    def __repr__(self) -> str:
        return (
            f"SparseProblem(n_samples={self.n_samples}, n_features={self.n_features}, "
            f"density={self.density:g} (actual {self.actual_density:.3g}), nnz={self.nnz}, "
            f"mean nonzeros per row={self.nnz / self.n_samples:.2f})"
        )


@numba.njit(cache=True)
def _choose_columns(counts, uniforms, n_features):
    # Floyd's algorithm: k distinct columns out of n from exactly k uniforms per row, so the
    # result depends only on the numbers numpy's seeded generator drew. Plain loops only:
    # numpy functions inside numba cost seconds of compile time each.
    indices = np.empty(uniforms.size, dtype=np.int64)
    stamp = np.empty(n_features, dtype=np.int64)
    for v in range(n_features):
        stamp[v] = -1
    pos = 0
    for i in range(counts.size):
        for j in range(n_features - counts[i], n_features):
            t = np.int64(uniforms[pos] * (j + 1))
            if t > j:  # guard the (measure-zero) u == 1.0 rounding case
                t = j
            pick = j if stamp[t] == i else t
            stamp[pick] = i
            indices[pos] = pick
            pos += 1
    return indices


def make_sparse_problem(
    n_samples: int,
    n_features: int,
    density: float,
    *,
    seed: int,
    label_noise: float = 0.1,
) -> SparseProblem:
    """A random sparse logistic-regression problem with a planted weight vector.

    Each row ``i`` has ``k_i = max(1, Binomial(n_features, density))`` nonzeros at distinct
    random columns (so no row is empty and the expected share of nonzeros is about
    ``density``), values ``N(0, 1) / sqrt(k_i)`` (rows of norm about 1, so one step size suits
    every density), and label ``y_i = sign(x_i · w_true)`` with ``w_true ~ N(0, I)``, flipped
    with probability ``label_noise`` so that the classes overlap and the loss has a finite
    minimiser.
    """
    n_samples = validation.positive_int("n_samples", n_samples)
    n_features = validation.positive_int("n_features", n_features)
    density = validation.number("density", density, low=0.0, high=1.0, low_open=True)
    seed = validation.seed("seed", seed)
    label_noise = validation.number("label_noise", label_noise, low=0.0, high=0.5)
    limits.elements("n_features", n_features)
    limits.elements("n_samples", int(n_samples * max(1.0, n_features * density)) * 3)

    rng = np.random.default_rng(seed)
    counts = np.maximum(rng.binomial(n_features, density, size=n_samples), 1).astype(np.int64)
    uniforms = rng.random(int(counts.sum()))
    indptr = np.concatenate(([0], np.cumsum(counts)))
    rows = np.repeat(np.arange(n_samples, dtype=np.int64), counts)
    # Sort the columns within each row (canonical CSR) by sorting row * n + column.
    indices = np.sort(rows * n_features + _choose_columns(counts, uniforms, n_features))
    indices -= rows * n_features
    data = rng.standard_normal(int(counts.sum())) / np.sqrt(np.repeat(counts, counts))
    w_true = rng.standard_normal(n_features)
    margin = np.add.reduceat(data * w_true[indices], indptr[:-1])
    y = np.where(margin >= 0.0, 1.0, -1.0)
    y[rng.random(n_samples) < label_noise] *= -1.0
    return SparseProblem(indptr, indices, data, y, w_true, n_features, density)


@dataclass(frozen=True)
class Sparsity:
    """The Hogwild measures of one problem (definitions in the module docstring)."""

    omega: int
    delta: float
    rho: float
    n_edges: int

    def __repr__(self) -> str:
        return (
            f"Sparsity(Ω={self.omega}, Δ={self.delta:.4g}, ρ={self.rho:.4g}, "
            f"edges={self.n_edges})"
        )


@numba.njit(cache=True)
def _max_meeting_rows(indptr, indices, col_ptr, col_rows):
    # For each row, count the distinct rows reached through its columns; a stamp array avoids
    # clearing a "seen" mask per row. Cost: Σ_v deg(v)², fine while nnz is moderate.
    n_rows = indptr.size - 1
    stamp = np.empty(n_rows, dtype=np.int64)
    for r in range(n_rows):
        stamp[r] = -1
    max_meet = 0
    for i in range(n_rows):
        meet = 0
        for p in range(indptr[i], indptr[i + 1]):
            v = indices[p]
            for q in range(col_ptr[v], col_ptr[v + 1]):
                r = col_rows[q]
                if stamp[r] != i:
                    stamp[r] = i
                    meet += 1
        if meet > max_meet:
            max_meet = meet
    return max_meet


def sparsity(problem: SparseProblem) -> Sparsity:
    """Ω, Δ and ρ of the hypergraph whose edges are the rows' nonzero columns."""
    if not isinstance(problem, SparseProblem):
        raise TypeError(f"problem: expected a SparseProblem, got {type(problem).__name__}")
    return sparsity_from_csr(problem.indptr, problem.indices, problem.n_features)


def sparsity_from_csr(indptr: np.ndarray, indices: np.ndarray, n_features: int) -> Sparsity:
    """Ω, Δ and ρ from a CSR pattern (``indptr``, ``indices``); empty rows are not edges."""
    indptr = validation.array("indptr", indptr, ndim=1, min_size=1)
    indices = validation.array("indices", indices, ndim=1)
    n_features = validation.positive_int("n_features", n_features)
    limits.elements("n_features", n_features)
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
        raise TypeError(
            f"indptr, indices: expected integer arrays, got {indptr.dtype} and {indices.dtype}"
        )
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.size:
        raise ValueError(
            "indptr: expected a non-decreasing array from 0 to len(indices), "
            f"got {indptr[0]}..{indptr[-1]} for {indices.size} indices"
        )
    if indices.size and (indices.min() < 0 or indices.max() >= n_features):
        raise ValueError(
            f"indices: expected column numbers in [0, {n_features}), "
            f"got values in [{indices.min()}, {indices.max()}]"
        )
    indptr = indptr.astype(np.int64)
    indices = indices.astype(np.int64)
    sizes = np.diff(indptr)
    # A column listed twice in one row is one feature, not two: counting it twice would
    # inflate Ω, Δ and ρ (Δ = 1.5 for one row with a repeated column). Refuse rather than
    # guess whether the caller meant to add the values (scipy: A.sum_duplicates()).
    key = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes) * n_features + indices
    key.sort()
    repeated = np.flatnonzero(key[1:] == key[:-1])
    if repeated.size:
        row, col = divmod(int(key[repeated[0]]), n_features)
        raise ValueError(
            f"indices: expected distinct columns within each row, got column {col} more than "
            f"once in row {row}; merge duplicates first (scipy: A.sum_duplicates())"
        )
    n_edges = int(np.count_nonzero(sizes))
    if n_edges == 0:
        raise ValueError("indptr: expected at least one non-empty row, got none")
    degree = np.bincount(indices, minlength=n_features)
    # Column -> rows index (the CSC pattern), to find every row that meets a given row.
    col_ptr = np.concatenate(([0], np.cumsum(degree)))
    col_rows = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)[
        np.argsort(indices, kind="stable")
    ]
    max_meet = _max_meeting_rows(indptr, indices, col_ptr, col_rows)
    return Sparsity(int(sizes.max()), int(degree.max()) / n_edges, max_meet / n_edges, n_edges)
