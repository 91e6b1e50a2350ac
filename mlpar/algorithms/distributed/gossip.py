"""Decentralized averaging and training on a simulated peer-to-peer network.

* ``consensus``: x ← W x for a fixed or time-varying mixing matrix; the distance to the
  average shrinks like ρᵗ (``topologies.rho``).
* ``pairwise_gossip``: randomized gossip (Boyd, Ghosh, Prabhakar & Shah 2006): each step one
  random edge (i, j) and both nodes take (x_i + x_j)/2. On the complete graph
  E‖x_t − x̄‖² = (1 − 1/(n−1))ᵗ ‖x_0 − x̄‖², since E[W_t] = I − (nI − 11ᵀ)/(n(n−1)).
* ``dpsgd``: decentralized gradient descent (D-PSGD, Lian et al. 2017) on lesson 05's least
  squares, each node with its own shard: every round, node i takes a step on its own data and
  averages with its neighbours,  x_i ← Σ_j W_ij (x_j − η ∇f_j(x_j)).  (Lian et al. write the
  same round with the local step added after the average; both send one model per neighbour
  per round. In this order, W = 11ᵀ/n makes every node equal to lesson 05's gradient descent.)
* ``ring_allreduce``: reduce-scatter then all-gather around a ring (Patarasuk & Yuan 2009):
  every node ends with the exact mean. Together the nodes send 2(n−1) chunks each, 2(n−1)
  vectors' worth: 2(n−1)/n of the vector per node *on average*, whatever n. Per node that is
  exact only when n divides the vector's length (otherwise node i skips two chunks whose sizes
  differ by one element from the others').

All run on a ``PeerNetwork`` (``mlpar.cluster.peer_network``), which prices every message with
the α–β ``CostModel`` and counts the bytes each node sends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.distributed import topologies
from mlpar.algorithms.distributed.mapreduce import loss
from mlpar.algorithms.training import TrainingResult
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.peer_network import PeerNetwork
from mlpar.core import limits, seeding, splits, validation


def _matrices(W) -> list[np.ndarray]:
    """A mixing matrix, or a list of them (used in turn, one per round), checked."""
    seq = list(W) if isinstance(W, (list, tuple)) else [W]
    if not seq:
        raise ValueError("W: expected a matrix or a non-empty list of matrices, got []")
    seq = [topologies.check_mixing(w, name="W") for w in seq]
    if any(w.shape != seq[0].shape for w in seq):
        raise ValueError(f"W: expected matrices of one shape, got {[w.shape for w in seq]}")
    return seq


def consensus_errors(W, x0, n_rounds: int) -> np.ndarray:
    """‖x_t − x̄‖ (Frobenius over nodes) for t = 0 … n_rounds under x ← W_t x.

    ``W``: a doubly stochastic matrix, or a list used in turn (time-varying graphs); ``x0``
    shape (n,) or (n, d). The average x̄ never changes, because the columns of W sum to 1.
    """
    seq = _matrices(W)
    x = validation.array("x0", np.asarray(x0, dtype=float), finite=True)
    if x.ndim not in (1, 2) or len(x) != len(seq[0]):
        raise ValueError(f"x0: expected shape ({len(seq[0])},) or ({len(seq[0])}, d), got {x.shape}")
    n_rounds = validation.integer("n_rounds", n_rounds, minimum=0)
    mean = x.mean(axis=0)
    errors = [np.linalg.norm(x - mean)]
    for t in range(n_rounds):
        x = seq[t % len(seq)] @ x
        errors.append(np.linalg.norm(x - mean))
    return np.array(errors)


def slowest_direction(W) -> tuple[float, np.ndarray]:
    """(λ, v): the eigenvalue of largest modulus apart from 1, and its unit eigenvector ⊥ 1.

    Symmetric W only: a start along v shrinks by exactly |λ| = ρ per round. The eigenproblem is
    solved on the subspace orthogonal to 1 (an orthonormal basis Q of it, then QᵀWQ), so v is
    orthogonal to 1 even when eigenvalues repeat (on the complete graph every direction of that
    subspace has λ = 0, and an eigensolver of W − 11ᵀ/n may return a vector with a mean).
    """
    W = topologies.check_mixing(W)
    if not np.allclose(W, W.T):
        raise ValueError("W: expected a symmetric matrix (its eigenvectors are then orthogonal)")
    n = len(W)
    # Columns 1 … n−1 of a QR factorization of [1 | I] span the complement of 1.
    Q = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, : n - 1]]))[0][:, 1:]
    values, vectors = np.linalg.eigh(Q.T @ W @ Q)
    k = int(np.argmax(np.abs(values)))
    v = Q @ vectors[:, k]
    return float(values[k]), v / np.linalg.norm(v)


@dataclass(frozen=True)
class PairwiseResult:
    """‖x_t − x̄‖² after every step, the final x, and the virtual time of every step."""

    squared_errors: np.ndarray  # (n_steps + 1,)
    x: np.ndarray
    times: np.ndarray  # (n_steps + 1,)


def pairwise_gossip(g, x0, n_steps: int, *, seed: int, cost: CostModel | None = None,
                    message_bytes: int = 8) -> PairwiseResult:
    """Randomized pairwise gossip on graph ``g``: each step one uniformly random edge averages.

    Each exchange is two messages (i → j, j → i) on a ``PeerNetwork``; exchanges on disjoint
    edges overlap in time, as they would on a real network.
    """
    g = topologies.undirected("g", g)
    edges = np.array([(i, j) for i, j in g.edges if i != j])
    if edges.size == 0:
        raise ValueError("g: expected a graph with at least one edge")
    x = np.array(validation.array("x0", np.asarray(x0, dtype=float), ndim=1, finite=True))
    if len(x) != g.number_of_nodes():
        raise ValueError(f"x0: expected {g.number_of_nodes()} values, one per node, got {len(x)}")
    n_steps = validation.integer("n_steps", n_steps, minimum=0)
    rng = np.random.default_rng(validation.seed("seed", seed))
    net = PeerNetwork(len(x), cost)
    mean = x.mean()
    picks = rng.integers(0, len(edges), size=n_steps)
    errors, times = [float(((x - mean) ** 2).sum())], [0.0]
    for e in picks:
        i, j = edges[e]
        start = max(net.ready[i], net.ready[j])
        net.transfer(i, j, message_bytes, start)
        net.transfer(j, i, message_bytes, start)
        x[i] = x[j] = (x[i] + x[j]) / 2
        errors.append(float(((x - mean) ** 2).sum()))
        times.append(net.elapsed())
    return PairwiseResult(np.array(errors), x, np.array(times))


# -- D-PSGD --------------------------------------------------------------------------------------


def heterogeneous_split(X, y, n_nodes: int):
    """Rows sorted by target, then cut in contiguous shards: node 0 gets the cheapest houses.

    Returns (X sorted, y sorted, shards). Each node's own least-squares optimum differs, so the
    nodes must talk to agree on one model.
    """
    n_nodes = validation.integer("n_nodes", n_nodes, minimum=1, maximum=topologies.MAX_NODES)
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    validation.finite_data("X", X)  # the first NaN named, before any round
    validation.finite_data("y", y)
    if n_nodes > len(y):
        raise ValueError(f"n_nodes: expected at most one node per row ({len(y)}), got {n_nodes}")
    order = np.argsort(y, kind="stable")
    return X[order], y[order], splits.shards(len(y), n_nodes)


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class GossipResult(TrainingResult):
    """Loss of the nodes' average model per round, consensus distance, and the network used.

    ``consensus[t]``: (1/n) Σᵢ ‖x_i − x̄‖² after round t. ``models``: (n, d) at the end.
    """

    consensus: np.ndarray
    models: np.ndarray
    network: PeerNetwork


def local_gradients(X, y, bounds, models) -> np.ndarray:
    """Every node's gradient at its own model, (n, d): gᵢ = (n/N) Xᵢᵀ(Xᵢ xᵢ − yᵢ).

    The factor n/N makes the mean of the gᵢ at a common x the full gradient ∇f(x) of
    f(x) = (1/2N)‖Xx − y‖², whatever the shard sizes. One vectorized pass over all rows.
    """
    owner = np.repeat(np.arange(len(models)), np.diff(bounds))
    r = np.einsum("ij,ij->i", X, models[owner]) - y
    return np.add.reduceat(X * r[:, None], bounds[:-1], axis=0) * (len(models) / len(y))


def node_data(X, y, n: int, *, heterogeneous: bool = True):
    """``(X, y, parts)``: the data checked (shapes, NaN and infinity named by position) and cut
    into one slice per node, sorted by target where ``heterogeneous`` (``heterogeneous_split``)
    or in even contiguous shards otherwise. Called before any node or actor starts."""
    if validation.flag("heterogeneous", heterogeneous):
        return heterogeneous_split(X, y, n)
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64)
    validation.same_length("X", X, "y", y)
    validation.finite_data("X", X)
    validation.finite_data("y", y)
    return X, y, splits.shards(len(y), n)


def dpsgd(X, y, W, *, lr: float = 0.5, n_rounds: int = 100, cost: CostModel | None = None,
          heterogeneous: bool = True, message_bytes: int | None = None,
          duplex: bool = True, label: str = "D-PSGD") -> GossipResult:
    """D-PSGD with full local gradients on a simulated peer network; see the module docstring.

    ``W`` (n, n) doubly stochastic (or a list, one per round in turn). Each round, node i
    computes its gradient (priced per sample of its shard), then sends its half-step model to
    every node j with W_ji > 0 and starts the next round when all of its in-neighbours'
    models have arrived: no global barrier, only neighbours wait for each other.
    ``duplex``: the peers' links (``PeerNetwork``).
    """
    seq = _matrices(W)
    n = len(seq[0])
    heterogeneous = validation.flag("heterogeneous", heterogeneous)
    duplex = validation.flag("duplex", duplex)
    lr = validation.positive("lr", lr)
    n_rounds = limits.rounds("n_rounds", n_rounds)
    label = validation.text("label", label)
    X, y, parts = node_data(X, y, n, heterogeneous=heterogeneous)
    bounds = np.array([s.start for s in parts] + [parts[-1].stop])
    sizes = np.diff(bounds)
    nbytes = 8 * X.shape[1] if message_bytes is None else validation.integer(
        "message_bytes", message_bytes, minimum=0)
    # Messages of a round: j → i wherever W_ij > 0 (i ≠ j). Each sender sends to its nearest
    # neighbour (by offset i − j mod n) first: on a ring, everybody sends right, then left,
    # in parallel, instead of a wave of senders waiting for each other's receivers.
    edges, ranks = [], []
    for w in seq:
        pairs = np.argwhere((w.T > 0) & ~np.eye(n, dtype=bool))
        pairs = pairs[np.lexsort(((pairs[:, 1] - pairs[:, 0]) % n, pairs[:, 0]))]
        first = np.searchsorted(pairs[:, 0], pairs[:, 0])
        edges.append(pairs)
        ranks.append(np.arange(len(pairs)) - first)
    net = PeerNetwork(n, cost, duplex=duplex)
    models = np.zeros((n, X.shape[1]))
    mean = models.mean(axis=0)
    losses, times, spread = [loss(X, y, mean)], [0.0], [0.0]
    for t in range(n_rounds):
        half = models - lr * local_gradients(X, y, bounds, models)
        models = seq[t % len(seq)] @ half
        done = np.array([net.compute(i, int(sizes[i])) for i in range(n)])
        pairs, rank = edges[t % len(seq)], ranks[t % len(seq)]
        pairs = pairs[np.lexsort((done[pairs[:, 0]], rank))]
        net.transfer_many(pairs[:, 0], pairs[:, 1], nbytes, done[pairs[:, 0]])
        mean = models.mean(axis=0)
        losses.append(loss(X, y, mean))
        times.append(net.elapsed())
        spread.append(float(((models - mean) ** 2).sum(axis=1).mean()))
    return GossipResult(label=label, weights=mean, times=np.array(times), losses=np.array(losses),
                        clock="virtual", consensus=np.array(spread), models=models, network=net)


def stable_lr(X, y, n_nodes: int, *, heterogeneous: bool = True, safety: float = 1.0) -> float:
    """min(0.5, safety / L) with L the largest local curvature ‖(n/N) XᵢᵀXᵢ‖₂ over the shards.

    A node's step on its own shard is stable only below 2/L of *its* loss; with tiny shards of
    similar houses, that is much smaller than the whole data set's bound.
    """
    safety = validation.positive("safety", safety)
    if validation.flag("heterogeneous", heterogeneous):
        X, y, parts = heterogeneous_split(X, y, n_nodes)
    else:
        heterogeneous_split(X, y, n_nodes)  # the same checks of X, y and n_nodes
        X = np.asarray(X, dtype=np.float64)
        parts = splits.shards(len(y), n_nodes)
    L = max(np.linalg.norm(X[s].T @ X[s], 2) for s in parts) * n_nodes / len(y)
    return float(min(0.5, safety / L))


def rounds_to_loss(result: TrainingResult, target: float) -> float:
    """The first round whose loss is ≤ ``target`` (np.inf if none)."""
    hit = np.flatnonzero(np.asarray(result.losses) <= target)
    return float(hit[0]) if hit.size else np.inf


# -- ring all-reduce and its rival, gather-then-broadcast -----------------------------------------


def ring_allreduce(net: PeerNetwork, vectors) -> list[np.ndarray]:
    """The mean of the nodes' vectors, on every node, by reduce-scatter + all-gather on a ring.

    Node i owns chunk i of ``np.array_split(v, n)``. Step s = 0 … n−2 of the reduce-scatter:
    node i sends its running sum of chunk (i − s) mod n to node i + 1, which adds its own.
    Then node i holds the full sum of chunk (i + 1) mod n, and n − 1 all-gather steps pass the
    finished chunks on. Each node sends 2(n−1) chunks: 2(n−1)/n of the vector when n divides
    its length; otherwise the chunks differ by one element and only the total is exact.
    """
    if not isinstance(net, PeerNetwork):
        raise TypeError(f"net: expected a PeerNetwork, got {type(net).__name__}")
    n = net.n_nodes
    vectors = node_vectors(vectors, n)
    chunks = [np.array_split(v.copy(), n) for v in vectors]
    step_start = net.elapsed()
    for phase in ("reduce-scatter", "all-gather"):
        for s in range(n - 1):
            moving = []
            for i in range(n):  # all n messages of a step travel at once
                c = (i - s) % n if phase == "reduce-scatter" else (i + 1 - s) % n
                moving.append((i, c, net.send(i, (i + 1) % n, chunks[i][c], start=step_start)))
            step_start = net.elapsed()
            for i, c, data in moving:
                dst = (i + 1) % n
                chunks[dst][c] = chunks[dst][c] + data if phase == "reduce-scatter" else data
    return [np.concatenate(parts) / n for parts in chunks]


def node_vectors(vectors, n: int) -> list[np.ndarray]:
    """``vectors`` checked as one finite 1-D float vector per node (n ≥ 2), all of one length."""
    if isinstance(vectors, (str, bytes)) or not hasattr(vectors, "__len__"):
        raise TypeError(f"vectors: expected a list of one vector per node, got "
                        f"{type(vectors).__name__}")
    if n < 2 or len(vectors) != n:
        raise ValueError(f"vectors: expected one vector per node ({n}, n ≥ 2), got {len(vectors)}")
    vectors = [validation.array("vectors", v, ndim=1, dtype=np.float64, finite=True, min_size=1)
               for v in vectors]
    if len({v.shape for v in vectors}) > 1:
        raise ValueError(f"vectors: expected vectors of one length, got lengths "
                         f"{sorted({len(v) for v in vectors})}")
    return vectors


def gather_broadcast(net: PeerNetwork, vectors) -> list[np.ndarray]:
    """The mean on every node through node 0: right answer, node 0 sends (n−1)·M bytes."""
    if not isinstance(net, PeerNetwork):
        raise TypeError(f"net: expected a PeerNetwork, got {type(net).__name__}")
    n = net.n_nodes
    vectors = node_vectors(vectors, n)
    total = vectors[0].copy()
    for i in range(1, n):
        total += net.send(i, 0, vectors[i])
    mean = total / n
    return [mean] + [net.send(0, i, mean) for i in range(1, n)]


def seeded_vectors(n: int, d: int, *, seed: int) -> list[np.ndarray]:
    """One random vector of length ``d`` per node, from the node's own stream."""
    n = validation.positive_int("n", n)
    d = validation.positive_int("d", d)
    limits.elements("n, d", n * d)
    return [rng.standard_normal(d) for rng in seeding.worker_rngs(n, seed=seed)]


# -- three designs on one problem ------------------------------------------------------------------


def _round_time(design: str, n: int, sizes, M: int, cost: CostModel, n_rounds: int):
    """Virtual seconds per round and the busiest out-link's busy seconds per round."""
    net = PeerNetwork(n + 1, cost)  # node n is the server (used by the parameter server only)
    nodes, right = np.arange(n), (np.arange(n) + 1) % n
    for _ in range(n_rounds):
        start = net.elapsed()
        done = [net.compute(i, int(sizes[i]), start) for i in range(n)]
        if design == "all-reduce":  # 2(n−1) steps, every node sends M/n to its right
            for _step in range(2 * (n - 1)):
                net.transfer_many(nodes, right, M // n, np.full(n, net.ready[:n].max()))
        else:  # parameter server: push gradients, then the server sends w back to everyone
            arrived = [net.transfer(i, n, M, done[i]) for i in range(n)]
            for i in range(n):
                net.transfer(n, i, M, max(arrived))
    return net.elapsed() / n_rounds, float(net.comm_time.max()) / n_rounds


def compare_designs(X, y, n: int, cost: CostModel, *, target: float, n_rounds: int = 300,
                    graphs=("ring", "exponential"), slowdown: float = 4.0,
                    message_bytes: int | None = None) -> list[dict]:
    """MapReduce-style all-reduce, a synchronous parameter server and D-PSGD on one problem.

    Same heterogeneous shards, same step size (``stable_lr``), same cost model. Per design:
    virtual seconds per round, the busiest out-link's busy time per round, rounds until the
    average model's loss ≤ ``target``, and how much slower a round gets when node 0 is
    ``slowdown`` times slower (1 = no effect). ``message_bytes``: price every model or
    gradient as that many bytes (a bigger model); the least-squares model has 8·d.
    """
    Xs, ys, parts = heterogeneous_split(X, y, n)
    sizes = [s.stop - s.start for s in parts]
    lr = stable_lr(X, y, n)
    slow = cost.with_(straggler=0, slowdown=validation.number("slowdown", slowdown, low=1.0))
    M = 8 * X.shape[1] if message_bytes is None else validation.positive_int(
        "message_bytes", message_bytes)
    exact = dpsgd(X, y, np.full((n, n), 1.0 / n), lr=lr, n_rounds=n_rounds)  # = gradient descent
    rows = []
    for design in ("all-reduce", "parameter server"):
        t, link = _round_time(design, n, sizes, M, cost, 3)
        t_slow, _ = _round_time(design, n, sizes, M, slow, 3)
        rows.append({"design": design, "round_s": t, "busiest_link_s": link,
                     "rounds": rounds_to_loss(exact, target), "straggler": t_slow / t})
    for name in graphs:
        W = topologies.topology_matrix(name, n)
        run = dpsgd(X, y, W, lr=lr, n_rounds=n_rounds, cost=cost, message_bytes=M)
        slowed = dpsgd(X, y, W, lr=lr, n_rounds=30, cost=slow, message_bytes=M)
        t = float(run.times[-1]) / n_rounds
        rows.append({"design": f"D-PSGD, {name}", "round_s": t,
                     "busiest_link_s": float(run.network.comm_time.max()) / n_rounds,
                     "rounds": rounds_to_loss(run, target),
                     "straggler": float(slowed.times[-1] / run.times[30])})
    return rows
