import math
import warnings

import networkx as nx
import numpy as np
import pytest

from mlpar.algorithms.distributed import topologies as T


@pytest.mark.parametrize("n, p, seed", [(5, 0.5, 0), (12, 0.3, 1), (30, 0.2, 2), (60, 0.1, 3)])
def test_mh_weights_symmetric_doubly_stochastic_nonnegative(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", T.ConsensusWarning)
        W = T.mixing_matrix(g)
    assert np.array_equal(W, W.T)
    assert W.min() >= 0
    np.testing.assert_allclose(W.sum(axis=1), 1, atol=1e-12)
    T.check_mixing(W, g)  # on the edges


@pytest.mark.parametrize("n", [3, 4, 5, 8, 16, 33, 100])
def test_ring_third_weights(n):
    W = T.topology_matrix("ring", n)
    assert np.allclose(W[W > 0], 1 / 3)
    assert abs(T.rho(W) - (1 / 3 + 2 / 3 * math.cos(2 * math.pi / n))) < 1e-10


@pytest.mark.parametrize("r, c", [(3, 3), (3, 4), (4, 4), (3, 7), (5, 6), (8, 8)])
def test_torus_fifth_weights(r, c):
    W = T.mixing_matrix(T.graph("torus", r * c, rows=r))
    assert np.allclose(W[W > 0], 0.2)
    values = np.sort(np.linalg.eigvalsh(W))[::-1]
    assert abs(values[1] - (3 + 2 * math.cos(2 * math.pi / max(r, c))) / 5) < 1e-10
    assert abs(T.rho(W) - max(values[1], -values[-1])) < 1e-10


@pytest.mark.parametrize("n", [2, 4, 8, 16, 64, 256])
def test_hypercube(n):
    assert abs(T.rho(T.topology_matrix("hypercube", n)) - (1 - 2 / (1 + math.log2(n)))) < 1e-10


@pytest.mark.parametrize("n", [3, 5, 10, 50])  # n = 2 is one edge, where MH gives 1/2
def test_star_and_complete(n):
    assert abs(T.rho(T.topology_matrix("star", n)) - (1 - 1 / n)) < 1e-10
    W = T.topology_matrix("complete", n)
    assert np.allclose(W, 1 / n) and T.rho(W) < 1e-10


@pytest.mark.parametrize("tau", range(1, 9))  # n = 2 … 256
def test_static_exponential(tau):
    n = 2 ** tau
    W = T.exponential_matrix(n)
    assert np.allclose(W[W > 0], 1 / (tau + 1))
    T.check_mixing(W, T.graph("exponential", n))
    assert abs(T.rho(W) - (1 - 2 / (1 + tau))) < 1e-10


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32, 64])
def test_one_peer_exact_after_log2n_rounds(n):
    product = np.eye(n)
    for W in T.one_peer_matrices(n):
        product = W @ product
    assert np.abs(product - 1 / n).max() < 1e-12


@pytest.mark.parametrize("n", [3, 6, 12, 20])
def test_one_peer_residual_otherwise(n):
    product = np.eye(n)
    for W in T.one_peer_matrices(n):
        product = W @ product
    assert np.abs(product - 1 / n).max() > 1e-3


def test_equal_neighbour_rows_are_not_doubly_stochastic_on_a_star():
    W = T.mixing_matrix(T.graph("star", 5), "equal_neighbour")
    np.testing.assert_allclose(W.sum(axis=1), 1)
    with pytest.raises(ValueError, match="W: expected a doubly stochastic matrix, but columns"):
        T.check_mixing(W)


def test_rounds_to():
    assert T.rounds_to(0.5, 1e-3) == 10
    assert T.rounds_to(0.0, 1e-3) == 1
    assert T.rounds_to(0.9, 2.0) == 0


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="n: expected at least 2"):
        T.graph("ring", 1)
    with pytest.raises(ValueError, match="rows: expected rows · cols = n"):
        T.graph("torus", 12, rows=5)
    with pytest.raises(ValueError, match="topology: expected one of 'ring', 'torus'.*'erdos_renyi'"):
        T.graph("tree", 8)
    with pytest.raises(ValueError, match="n: a hypercube needs a power of two"):
        T.graph("hypercube", 6)
    with pytest.raises(ValueError, match="W: expected a doubly stochastic"):
        T.check_mixing(np.array([[0.5, 0.5], [0.2, 0.8]]))
    W = T.topology_matrix("complete", 4)
    with pytest.raises(ValueError, match=r"W: expected weights only on the graph's edges"):
        T.check_mixing(W, T.graph("ring", 4))
    with pytest.raises(ValueError, match="W: expected non-negative"):
        T.check_mixing(np.array([[1.5, -0.5], [-0.5, 1.5]]))
    with pytest.raises(TypeError, match="W: expected a numpy array"):
        T.check_mixing([[1.0]])


def test_disconnected_graph_warns_and_rho_is_one():
    g = nx.union(nx.cycle_graph(3), nx.cycle_graph(3), rename=("a", "b"))
    g = nx.convert_node_labels_to_integers(g)
    with pytest.warns(T.ConsensusWarning, match="consensus cannot happen"):
        W = T.mixing_matrix(g)
    assert abs(T.rho(W) - 1) < 1e-12


def test_rho_names_w_for_a_matrix_that_is_not_square():
    with pytest.raises(ValueError, match=r"W: expected a square matrix, got shape \(3, 4\)"):
        T.rho(np.full((3, 4), 0.25))


def test_rho_refuses_a_matrix_that_is_not_doubly_stochastic():
    # A ring without self-weights, as an adjacency matrix: rows sum to 2, not 1. ρ of it would
    # promise a consensus (rounds_to) that x ← Wx never reaches.
    A = nx.to_numpy_array(nx.cycle_graph(5))
    with pytest.raises(ValueError, match="W: expected a doubly stochastic matrix"):
        T.rho(A)
    with pytest.raises(ValueError, match="W: expected a doubly stochastic matrix"):
        T.spectral_gap(A / 3)
