"""Checks for lesson 07: Metropolis–Hastings weights, rounds to consensus, a ring all-reduce."""

from __future__ import annotations

import networkx as nx
import numpy as np

from mlpar.algorithms.distributed import gossip, topologies
from mlpar.cluster.peer_network import PeerNetwork
from mlpar.exercises import as_array, call, expect, expect_close, fmt, passed


def _graphs():
    """Irregular graphs on purpose: on a regular graph every rule gives the same W."""
    star_tail = nx.star_graph(4)
    star_tail.add_edge(4, 5)
    yield "a star with a tail (6 nodes)", star_tail
    yield "a path of 5 nodes", nx.path_graph(5)
    yield "a ring of 7 nodes", nx.cycle_graph(7)
    yield "a random graph (12 nodes)", nx.gnp_random_graph(12, 0.35, seed=3)
    yield "a 2 × 4 grid", nx.convert_node_labels_to_integers(nx.grid_2d_graph(2, 4))


def check_mh_weights(mh_weights) -> None:
    """``mh_weights(n, edges)`` → the (n, n) Metropolis–Hastings mixing matrix."""
    name = "Exercise 1 (Metropolis–Hastings weights)"
    for case, g in _graphs():
        n, edges = g.number_of_nodes(), [tuple(e) for e in g.edges]
        expected = topologies.metropolis_weights(g)
        got = as_array(name, call(name, mh_weights, n, list(edges)), what=f"W for {case}",
                       shape=(n, n))
        if not np.allclose(got, got.T, atol=1e-12):
            rows = (np.asarray(nx.to_numpy_array(g, nodelist=range(n))) + np.eye(n))
            hint = ""
            if np.allclose(got, rows / rows.sum(axis=1, keepdims=True)):
                hint = (": these are 1/(d_i + 1) rows, which sum to 1 by row but not by column, "
                        "so the average drifts; use 1/(1 + max(d_i, d_j)) for both ends")
            raise AssertionError(f"{name}: W for {case} is not symmetric{hint}")
        expect(name, np.allclose(got.sum(axis=1), 1, atol=1e-12),
               f"W for {case}: rows sum to {fmt(got.sum(axis=1))}, expected all 1 (set W_ii to "
               "1 minus the rest of the row)")
        expect_close(name, got, expected, what=f"W for {case}", rtol=0, atol=1e-12)
    passed(name, "symmetric, doubly stochastic and equal to 1/(1 + max(d_i, d_j)) on 5 graphs")


def _negative_ring() -> np.ndarray:
    """A 4-ring that keeps little of its own value: eigenvalues 1, 0.1, 0.1, −0.8."""
    return 0.1 * np.eye(4) + 0.45 * (np.roll(np.eye(4), 1, 0) + np.roll(np.eye(4), -1, 0))


def check_rounds_to_eps(rounds_to_eps) -> None:
    """``rounds_to_eps(W, eps)`` → the fewest rounds t with ρᵗ ≤ ε, ρ = 2nd largest modulus."""
    name = "Exercise 2 (rounds to reach ε)"
    cases = [("the 4-ring whose smallest eigenvalue is −0.8", _negative_ring(), 2e-6),
             ("a Metropolis–Hastings ring of 16", topologies.topology_matrix("ring", 16), 1e-3),
             ("a star of 10", topologies.topology_matrix("star", 10), 1e-2),
             ("a hypercube of 16", topologies.topology_matrix("hypercube", 16), 1e-8)]
    for case, W, eps in cases:
        expected = topologies.rounds_to(topologies.rho(W), eps)
        got = call(name, rounds_to_eps, W.copy(), eps)
        value = float(as_array(name, got, what=f"the rounds for {case}", ndim=0))
        if value != expected:
            values = np.sort(np.linalg.eigvalsh(W))[::-1]
            hint = ""
            if abs(values[1]) < abs(values[-1]) and abs(
                    value - np.log(eps) / np.log(abs(values[1]))) < 1:
                hint = (f"; that is the answer for λ₂ = {fmt(values[1])}, but λₙ = {fmt(values[-1])} "
                        "has the larger modulus: ρ = max(|λ₂|, |λₙ|)")
            raise AssertionError(f"{name}: {case}, ε = {fmt(eps)}: got {fmt(value)} rounds, "
                                 f"expected {expected}{hint}")
    passed(name, "including a graph whose slowest mode is a negative eigenvalue")


def check_ring_allreduce(ring_allreduce) -> None:
    """``ring_allreduce(net, vectors)`` → the mean on every node, sending 2(n−1)M/n per node."""
    name = "Exercise 3 (ring all-reduce)"
    for n in (2, 3, 4, 8):
        d = 24
        vectors = gossip.seeded_vectors(n, d, seed=n)
        net = PeerNetwork(n)
        got = call(name, ring_allreduce, net, [v.copy() for v in vectors])
        if got is None or isinstance(got, np.ndarray) and got.ndim == 1:
            raise AssertionError(f"{name}: n = {n}: expected a list with one vector per node, "
                                 f"got {type(got).__name__}")
        results = as_array(name, got, what=f"the results for n = {n}", shape=(n, d))
        for i in range(n):
            expect_close(name, results[i], np.mean(vectors, axis=0),
                         what=f"node {i}'s result for n = {n}", rtol=1e-10, atol=1e-12, n=n)
        M, sent = 8 * d, net.bytes_sent
        want = 2 * (n - 1) * M // n
        if not np.all(sent == want):
            hint = ""
            if sent[0] >= (n - 1) * M and n > 2 and np.all(sent[1:] <= M):
                hint = " (node 0 sends to everybody: that is gather-and-broadcast, not a ring)"
            elif sent.sum() == 0:
                hint = " (nothing was sent: use net.send(src, dst, array) for every message)"
            raise AssertionError(f"{name}: n = {n}, M = {M} bytes: nodes sent {sent.tolist()} "
                                 f"bytes, expected {want} each, 2(n−1)M/n{hint}")
    passed(name, "exact mean on every node and 2(n−1)M/n bytes sent per node for n = 2, 3, 4, 8")
