"""Tests for mlpar.algorithms.sgd.sparse_data: the seeded generator and the Hogwild measures Ω, Δ, ρ."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.algorithms.sgd.sparse_data import SparseProblem, make_sparse_problem, sparsity, sparsity_from_csr


def brute_force_measures(rows, n_features):
    """Ω, Δ, ρ straight from the definitions, with Python sets."""
    edges = [set(r) for r in rows if len(r) > 0]
    omega = max(len(e) for e in edges)
    delta = max(sum(v in e for e in edges) for v in range(n_features)) / len(edges)
    rho = max(sum(bool(e & f) for f in edges) for e in edges) / len(edges)
    return omega, delta, rho


def to_csr(rows):
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    indices = np.array([c for r in rows for c in r], dtype=np.int64)
    return indptr, indices


def test_measures_equal_hand_computed_values_on_a_tiny_problem():
    # Edges {0,1}, {1,2}, {3}, {0}. Ω = 2. Degrees 2, 2, 1, 1 over 4 edges: Δ = 2/4.
    # {0,1} meets itself, {1,2} and {0}: 3 of 4 edges, the most of any edge, so ρ = 3/4.
    indptr, indices = to_csr([[0, 1], [1, 2], [3], [0]])
    s = sparsity_from_csr(indptr, indices, 4)
    assert (s.omega, s.delta, s.rho, s.n_edges) == (2, 0.5, 0.75, 4)


def test_empty_rows_are_not_edges():
    # Same edges plus two empty rows: the fractions are still over the 4 real edges.
    indptr, indices = to_csr([[0, 1], [], [1, 2], [3], [], [0]])
    s = sparsity_from_csr(indptr, indices, 5)
    assert (s.omega, s.delta, s.rho, s.n_edges) == (2, 0.5, 0.75, 4)


def test_disjoint_edges_give_the_smallest_values():
    indptr, indices = to_csr([[0], [1], [2], [3], [4]])
    s = sparsity_from_csr(indptr, indices, 5)
    assert (s.omega, s.delta, s.rho) == (1, 0.2, 0.2)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_measures_match_the_definitions_on_random_patterns(data):
    n_features = data.draw(st.integers(1, 8))
    rows = data.draw(
        st.lists(
            st.lists(st.integers(0, n_features - 1), unique=True, max_size=n_features).map(sorted),
            min_size=1,
            max_size=12,
        ).filter(lambda rs: any(rs))
    )
    indptr, indices = to_csr(rows)
    s = sparsity_from_csr(indptr, indices, n_features)
    omega, delta, rho = brute_force_measures(rows, n_features)
    assert s.omega == omega
    assert s.delta == pytest.approx(delta)
    assert s.rho == pytest.approx(rho)


def test_generator_is_deterministic_and_seed_dependent():
    a = make_sparse_problem(300, 50, 0.1, seed=3)
    b = make_sparse_problem(300, 50, 0.1, seed=3)
    c = make_sparse_problem(300, 50, 0.1, seed=4)
    for name in ("indptr", "indices", "data", "y", "w_true"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.indices, c.indices) or not np.array_equal(a.y, c.y)


def test_generator_shapes_rows_and_labels():
    p = make_sparse_problem(2000, 100, 0.05, seed=0)
    assert isinstance(p, SparseProblem)
    assert p.indptr.shape == (2001,) and p.indices.shape == p.data.shape == (p.nnz,)
    assert p.y.shape == (2000,) and p.w_true.shape == (100,)
    sizes = np.diff(p.indptr)
    assert sizes.min() >= 1  # no empty rows
    for i in range(0, 2000, 97):
        cols = p.indices[p.indptr[i] : p.indptr[i + 1]]
        assert np.all(np.diff(cols) > 0)  # sorted and distinct
    assert p.indices.min() >= 0 and p.indices.max() < 100
    assert set(np.unique(p.y)) == {-1.0, 1.0}
    # Binomial(100, 0.05) has mean 5 (a bit more after lifting zeros to 1).
    assert 4.8 < sizes.mean() < 5.4
    # Rows have norm about 1 so one step size suits every density.
    norms = np.sqrt(np.add.reduceat(p.data**2, p.indptr[:-1]))
    assert 0.8 < np.median(norms) < 1.2


def test_density_one_fills_every_row_and_measures_are_one():
    p = make_sparse_problem(20, 6, 1.0, seed=1)
    assert np.all(np.diff(p.indptr) == 6)
    s = sparsity(p)
    assert (s.omega, s.delta, s.rho) == (6, 1.0, 1.0)


def test_labels_follow_the_planted_weights_up_to_the_noise():
    p = make_sparse_problem(5000, 40, 0.2, seed=2, label_noise=0.1)
    margin = p.to_scipy() @ p.w_true
    agree = np.mean(np.sign(margin) == p.y)
    assert 0.87 < agree < 0.93


def test_to_scipy_round_trip():
    p = make_sparse_problem(30, 10, 0.3, seed=5)
    x = p.to_scipy()
    assert x.shape == (30, 10) and x.nnz == p.nnz
    np.testing.assert_array_equal(x.indptr, p.indptr)


@pytest.mark.parametrize("density", [0.0, -0.1, 1.5])
def test_density_outside_unit_interval_raises(density):
    with pytest.raises(ValueError, match="density"):
        make_sparse_problem(10, 10, density, seed=0)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_features": 0}, "n_features"),
        ({"seed": -1}, "seed"),
        ({"label_noise": 0.7}, "label_noise"),
    ],
)
def test_generator_bad_arguments_raise(kwargs, name):
    args = {"n_samples": 10, "n_features": 10, "density": 0.5, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=name):
        make_sparse_problem(**args)


def test_sparsity_bad_input_raises():
    with pytest.raises(TypeError, match="problem"):
        sparsity("not a problem")
    with pytest.raises(ValueError, match="indices"):
        sparsity_from_csr(np.array([0, 1]), np.array([7]), 3)
    with pytest.raises(ValueError, match="indptr"):
        sparsity_from_csr(np.array([0, 2]), np.array([1]), 3)
    with pytest.raises(ValueError, match="non-empty"):
        sparsity_from_csr(np.array([0, 0]), np.zeros(0, dtype=np.int64), 3)
    with pytest.raises(TypeError, match="integer"):
        sparsity_from_csr(np.array([0.0, 1.0]), np.array([1]), 3)
