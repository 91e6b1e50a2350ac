"""Checks for lesson 07: Metropolis–Hastings weights, rounds to consensus, a ring all-reduce, and a
predict-then-measure exercise: the steps randomized gossip needs."""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np

from mlpar.algorithms.distributed import gossip, topologies
from mlpar.cluster.peer_network import PeerNetwork
from mlpar.exercises import as_array, call, call_refusing, case_seed, expect, expect_close, fmt, passed


def _graphs():
    """Irregular graphs on purpose: on a regular graph every rule gives the same W."""
    star_tail = nx.star_graph(4)
    star_tail.add_edge(4, 5)
    yield "a star with a tail (6 nodes)", star_tail
    yield "a path of 5 nodes", nx.path_graph(5)
    yield "a ring of 7 nodes", nx.cycle_graph(7)
    yield "a random graph (12 nodes)", nx.gnp_random_graph(12, 0.35, seed=case_seed(3))
    yield "a 2 × 4 grid", nx.convert_node_labels_to_integers(nx.grid_2d_graph(2, 4))


def check_mh_weights(mh_weights) -> None:
    """``mh_weights(n, edges)`` → the (n, n) Metropolis–Hastings mixing matrix."""
    name = "Exercise 1 (Metropolis–Hastings weights)"
    for case, g in _graphs():
        n, edges = g.number_of_nodes(), [tuple(e) for e in g.edges]
        expected = topologies.metropolis_weights(g)
        banned = {topologies.metropolis_weights: "the library's weights",
                  topologies.mixing_matrix: "the library's mixing matrix"}
        got = as_array(name, call_refusing(name, mh_weights, banned, n, list(edges)),
                       what=f"W for {case}", shape=(n, n))
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
        banned = {topologies.rho: "the library's rate", topologies.rounds_to: "the library's rounds",
                  topologies.spectrum: "the library's spectrum"}
        got = call_refusing(name, rounds_to_eps, banned, W.copy(), eps)
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
    # Then measure: x ← Wx on the ring of 16, from its slowest direction and from a random start.
    _, W, eps = cases[1]
    predicted = topologies.rounds_to(topologies.rho(W), eps)
    x0 = np.random.default_rng(case_seed(23)).standard_normal(len(W))
    reached = []
    for start in (gossip.slowest_direction(W)[1], x0):
        errors = gossip.consensus_errors(W, start, 4 * predicted)
        below = np.flatnonzero(errors / errors[0] <= eps * (1 + 1e-9))
        reached.append(int(below[0]) if below.size else -1)
    passed(name, f"including a graph whose slowest mode is a negative eigenvalue. Measured on the "
           f"ring of 16, ε = {fmt(eps)}: predicted {predicted} rounds; from the slowest direction "
           f"the error reached ε after {reached[0]}, from a random start after {reached[1]}: the "
           "other directions shrink faster than ρ, so ρᵗ is the worst case, met only along the "
           "slowest direction")


class RingNetwork(PeerNetwork):
    """The check's network: ``send`` works only from node i to node (i + 1) mod n, and logs.

    ``poisoned``: a node every message to which arrives changed, to see whether that node's
    result is built from what it received (a ring all-reduce's is, entirely) or computed from
    the other nodes' vectors directly. ``shift``: what is added to each arriving value (NaN
    by default; a number catches a result that only carries the received NaN along).
    """

    def __init__(self, n: int, exercise: str, poisoned: int | None = None,
                 shift: float = np.nan):
        super().__init__(n)
        self.exercise, self.poisoned, self.shift, self.log = exercise, poisoned, shift, []

    def send(self, src, dst, value, start=None):
        if any(f.f_code is gossip.ring_allreduce.__code__ for f in _frames()):
            raise AssertionError(f"{self.exercise}: your function calls gossip.ring_allreduce, "
                                 "the library's version of what this exercise asks you to write; "
                                 "write the ring yourself")
        n = self.n_nodes
        if isinstance(src, (int, np.integer)) and isinstance(dst, (int, np.integer)) \
                and 0 <= src < n and dst != (src + 1) % n:
            raise AssertionError(
                f"{self.exercise}: n = {n}: node {src} sent to node {dst}; on a ring node i sends "
                f"only to (i + 1) mod n = {(src + 1) % n}" + (
                    " (sending chunk j straight to node j is an all-to-all exchange, not a ring)"
                    if dst != src else ""))
        arrived = super().send(src, dst, value, start)
        self.log.append((int(src), arrived.size))
        if dst == self.poisoned:
            arrived = arrived + self.shift
        return arrived


def _frames():
    frame = sys._getframe(1)
    while frame is not None:
        yield frame
        frame = frame.f_back


def check_ring_allreduce(ring_allreduce) -> None:
    """``ring_allreduce(net, vectors)`` → the mean on every node, sending 2(n−1)M/n per node.

    The network refuses any message that is not to the next node on the ring; each node must
    send 2(n−1) chunks of M/n; and a second run, in which every message to the last node
    arrives as NaN, must leave that node's whole result NaN, and a third, in which 1 is added
    to every value arriving there, must change every entry of it: a ring all-reduce builds
    every element of a node's result from what it received, so a mean computed centrally
    (with dummy sends beside it, even with the received NaN carried along) shows up.
    """
    name = "Exercise 3 (ring all-reduce)"
    for n in (2, 3, 4, 8):
        d = 24  # a multiple of every n here: each node then sends exactly 2(n−1)M/n
        vectors = gossip.seeded_vectors(n, d, seed=case_seed(n))
        net = RingNetwork(n, name)
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
            if sent.sum() == 0:
                hint = " (nothing was sent: use net.send(src, dst, array) for every message)"
            elif np.all(sent > want):
                hint = (" (whole vectors passed around the ring: send one chunk of M/n per step, "
                        "reduce-scatter then all-gather)")
            raise AssertionError(f"{name}: n = {n}, M = {M} bytes: nodes sent {sent.tolist()} "
                                 f"bytes, expected {want} each, 2(n−1)M/n{hint}")
        counts = np.bincount([src for src, _ in net.log], minlength=n)
        expect(name, np.all(counts == 2 * (n - 1)),
               f"n = {n}: nodes sent {counts.tolist()} messages, expected 2(n − 1) = "
               f"{2 * (n - 1)} each: n − 1 steps of reduce-scatter, then n − 1 of all-gather, "
               "one chunk of M/n per step")
        poisoned = RingNetwork(n, name, poisoned=n - 1)
        got = call(name, ring_allreduce, poisoned, [v.copy() for v in vectors])
        last = as_array(name, got, what=f"the results for n = {n}", shape=(n, d), finite=False)[-1]
        if np.any(np.isfinite(last)):
            raise AssertionError(
                f"{name}: n = {n}: with every message to node {n - 1} replaced by NaN, node "
                f"{n - 1}'s result still has {int(np.isfinite(last).sum())} finite entries of "
                f"{d}: they were not built from what it received (a mean computed from all the "
                "vectors at once, with sends beside it, is not a ring all-reduce; each node may "
                "use only its own vector and the chunks that reach it)")
        # Every value node n − 1 ends with passed through its inbox: add 1 to everything that
        # arrives there, and every entry of its result must move.
        shifted = RingNetwork(n, name, poisoned=n - 1, shift=1.0)
        got = call(name, ring_allreduce, shifted, [v.copy() for v in vectors])
        last = as_array(name, got, what=f"the results for n = {n}", shape=(n, d))[-1]
        still = np.isclose(last, np.mean(vectors, axis=0), rtol=0, atol=1e-9)
        if np.any(still):
            raise AssertionError(
                f"{name}: n = {n}: with 1 added to every value that reaches node {n - 1}, "
                f"{int(still.sum())} of the {d} entries of its result did not change: they "
                "were not built from what it received (each node may use only its own vector "
                "and the chunks that reach it)")
    passed(name, "exact mean on every node, built from what each node received, 2(n − 1) "
           "messages and 2(n−1)M/n bytes per node, all to the next node, for n = 2, 3, 4, 8")


# -- Exercise 4: predict the steps of randomized gossip, then measure them -----------------------


def gossip_steps(n: int, eps: float) -> int:
    """Fewest steps t with (1 − 1/(n − 1))ᵗ ≤ ε: E‖x_t − x̄‖² ≤ ε‖x_0 − x̄‖² on the complete graph.

    n = 2: the rate is 0, one step averages the only pair exactly (1 step for any ε < 1).
    """
    if eps >= 1:
        return 0
    if n == 2:
        return 1
    return int(np.ceil(np.log(eps) / np.log(1 - 1 / (n - 1)) - 1e-12))


def measured_steps(n: int, eps: float, *, runs: int = 100, seed: int = 0) -> tuple[int, int]:
    """The first step at which the mean over ``runs`` seeded runs of ‖x_t − x̄‖²/‖x_0 − x̄‖² is
    ≤ ε (−1 if never within twice the prediction), and the steps simulated."""
    steps = 2 * gossip_steps(n, eps) + 5
    g = nx.complete_graph(n)
    x0 = np.random.default_rng(seed).standard_normal(n)
    ratio = np.mean([gossip.pairwise_gossip(g, x0, steps, seed=seed + 1 + r).squared_errors
                     for r in range(runs)], axis=0)
    ratio = ratio / ratio[0]
    below = np.flatnonzero(ratio <= eps)
    return (int(below[0]) if below.size else -1), steps


def check_gossip_steps(predict_steps) -> None:
    """``predict_steps(n, eps)``: the steps after which E‖x_t − x̄‖² ≤ ε‖x_0 − x̄‖² on the
    complete graph of n nodes, from the rate (1 − 1/(n − 1)) per step. Graded exactly; the
    check then measures the mean of seeded runs and reports how far it fell, and why."""
    name = "Exercise 4 (steps of randomized gossip)"
    rng = np.random.default_rng(case_seed(17))
    cases = [(10, 1e-3), (3, 1e-2), (100, 0.5), (2, 1e-3)]
    cases += [(int(rng.integers(4, 60)), float(10 ** rng.uniform(-6, -1))) for _ in range(3)]
    for n, eps in cases:
        case = f"n = {n} nodes, ε = {fmt(eps)}"
        got = call_refusing(name, predict_steps, {gossip_steps: "the library's answer",
                                                  topologies.rounds_to: "the library's rounds"},
                            n, eps)
        expect(name, got is not None, f"{case}: your function returned None; did it forget to "
               "`return`?")
        value = float(as_array(name, got, what=f"the steps for {case}", ndim=0))
        expected = gossip_steps(n, eps)
        if value == expected:
            continue
        if n == 2:
            raise AssertionError(f"{name}: {case}: got {fmt(value)} steps, expected 1: with two "
                                 "nodes the rate 1 − 1/(n − 1) is 0, and one step averages the "
                                 "only pair exactly (log 0 = −∞ makes the formula give 0)")
        rate = np.log(eps)
        misreadings = (
            (np.ceil(rate / np.log(1 - 1 / n) - 1e-12), "that uses the rate 1 − 1/n; a step "
             "removes 1/(n − 1) of the expected squared error on the complete graph"),
            (np.ceil(rate / (2 * np.log(1 - 1 / (n - 1))) - 1e-12), "that is the steps for the "
             "*norm* ‖x_t − x̄‖ to shrink by ε; the exercise asks for the squared error"),
            (np.ceil(2 * rate / np.log(1 - 1 / (n - 1))), "that is the steps for the squared "
             "error to reach ε², as if ε bounded the norm"),
            (expected - 1, "one step short: round up (the fewest t with the bound ≤ ε)"),
        )
        why = next((text for v, text in misreadings if value == v), "solve (1 − 1/(n − 1))ᵗ ≤ ε "
                   "for the smallest whole t")
        raise AssertionError(f"{name}: {case}: got {fmt(value)} steps, expected {expected}; {why}")
    n, eps = cases[0]
    found, steps = measured_steps(n, eps)
    predicted = gossip_steps(n, eps)
    if found < 0:
        seen = f"the mean of 100 runs had not reached ε within {steps} steps"
    else:
        seen = (f"the mean of 100 seeded runs first reached ε at step {found} "
                f"({found - predicted:+d} from the prediction)")
    passed(name, f"exact in {len(cases)} cases. Measured for n = {n}, ε = {fmt(eps)}: predicted "
           f"{predicted} steps; {seen}: the rate is an expectation, and a mean over 100 runs "
           "estimates it with a few per cent of noise, more as the error gets small")
