"""Decentralized averaging and training on a simulated peer-to-peer network.

* ``consensus``: x ← W x for a fixed or time-varying mixing matrix; the distance to the
  average shrinks like ρᵗ (``topologies.rho``).
* ``pairwise_gossip``: randomized gossip (Boyd, Ghosh, Prabhakar & Shah 2006): each step one
  random edge (i, j) and both nodes take (x_i + x_j)/2. On the complete graph
  E‖x_t − x̄‖² = (1 − 1/(n−1))ᵗ ‖x_0 − x̄‖², since E[W_t] = I − (nI − 11ᵀ)/(n(n−1)).
* ``dpsgd``: decentralized gradient descent with full local gradients on lesson 05's least
  squares, each node with its own shard, in one of two orders (``order``):
    - 'atc', adapt-then-combine (diffusion; Chen & Sayed 2012): x_i ← Σ_j W_ij (x_j − η ∇f_j(x_j)),
      step first, then average the stepped models. W = 11ᵀ/n makes every node equal to lesson
      05's gradient descent; stable for η < 2/L (L the largest local curvature).
    - 'lian', D-PSGD as Lian et al. (2017) write it: x_i ← Σ_j W_ij x_j − η ∇f_i(x_i), the
      gradient taken at the node's own, un-mixed model, so computing it can overlap sending
      that model (the simulated round starts both at once). Stable only for
      η < (1 + λ_n(W))/L: a W with an eigenvalue near −1 needs a much smaller step.
  Both send one model per neighbour per round.
* ``ring_allreduce``: reduce-scatter then all-gather around a ring (Patarasuk & Yuan 2009):
  every node ends with the exact mean. Together the nodes send 2(n−1) chunks each, 2(n−1)
  vectors' worth: 2(n−1)/n of the vector per node *on average*, whatever n. Per node that is
  exact only when n divides the vector's length (otherwise node i skips two chunks whose sizes
  differ by one element from the others').

All run on a ``PeerNetwork`` (``mlpar.cluster.peer_network``), which prices every message with
the α–β ``CostModel`` and counts the bytes each node sends.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import networkx as nx
import numpy as np

from mlpar.algorithms.distributed import topologies
from mlpar.algorithms.distributed.mapreduce import loss
from mlpar.algorithms.training import TrainingResult
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.peer_network import PeerNetwork
from mlpar.core import limits, seeding, splits, validation

ORDERS = ("atc", "lian")  # dpsgd's two orders of gradient step and averaging


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


def push_sum(g, x0, n_rounds: int) -> np.ndarray:
    """Push-sum (Kempe, Dobra and Gehrke 2003) on a directed graph: the error of every node's
    estimate of the average, ‖z_t − x̄₀‖ / ‖x_0 − x̄₀‖ for t = 0 … n_rounds.

    Node i knows only its out-degree d_i: each round it keeps 1/(d_i + 1) of its pair (s_i, w_i)
    and pushes the same share to each out-neighbour (a column-stochastic A, s ← A s, w ← A w,
    s₀ = x₀, w₀ = 1). Σ s and Σ w never change, and z_i = s_i / w_i tends to Σ s / Σ w = x̄₀ on
    any strongly connected digraph, where no doubly stochastic W can be built from local
    information alone.
    """
    g = topologies.check_graph("g", g)
    if not nx.is_directed(g):
        g = g.to_directed()
    n = g.number_of_nodes()
    x = np.array(validation.array("x0", np.asarray(x0, dtype=float), ndim=1, finite=True))
    if len(x) != n or set(g.nodes) != set(range(n)):
        raise ValueError(f"x0: expected one value per node of a graph on 0 … n−1 ({n}), got {len(x)}")
    n_rounds = validation.integer("n_rounds", n_rounds, minimum=0, maximum=100_000)
    A = np.eye(n)
    for i, j in g.edges:
        if i != j:
            A[j, i] = 1.0
    A /= A.sum(axis=0, keepdims=True)  # column i: node i's value split among itself and its outs
    mean = x.mean()
    start = np.linalg.norm(x - mean)
    s, w = x.copy(), np.ones(n)
    errors = [1.0]
    for _ in range(n_rounds):
        s, w = A @ s, A @ w
        errors.append(float(np.linalg.norm(s / w - mean) / start))
    return np.array(errors)


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
          duplex: bool = True, order: str = "atc", label: str = "D-PSGD") -> GossipResult:
    """Decentralized gradient descent with full local gradients on a simulated peer network.

    ``W`` (n, n) doubly stochastic (or a list, one per round in turn). ``order``: 'atc'
    (adapt-then-combine: node i computes its gradient, priced per sample of its shard, then
    sends its stepped model) or 'lian' (Lian et al.'s D-PSGD: node i sends its current model
    and computes its gradient at the same time, then adds the step to the average); see the
    module docstring. Every node j with W_ji > 0 receives node i's model; a node starts the
    next round when all of its in-neighbours' models have arrived: no global barrier, only
    neighbours wait for each other. ``duplex``: the peers' links (``PeerNetwork``).
    """
    seq = _matrices(W)
    n = len(seq[0])
    heterogeneous = validation.flag("heterogeneous", heterogeneous)
    duplex = validation.flag("duplex", duplex)
    order = validation.choice("order", order, ORDERS)
    lr = validation.positive("lr", lr)
    n_rounds = limits.rounds("n_rounds", n_rounds)
    label = validation.text("label", label)
    X, y, parts = node_data(X, y, n, heterogeneous=heterogeneous)
    bounds = np.array([s.start for s in parts] + [parts[-1].stop])
    sizes = np.diff(bounds)
    nbytes = 8 * X.shape[1] if message_bytes is None else validation.integer(
        "message_bytes", message_bytes, minimum=0)
    # Messages of a round: j → i wherever W_ij > 0 (i ≠ j). Each sender sends to its nearest
    # neighbour (by offset i − j mod n) first: on a full-duplex ring, everybody sends right,
    # then left, in parallel, instead of a wave of senders waiting for each other's receivers.
    # With half-duplex links (duplex=False) a receiver may be busy sending, and first come,
    # first served lets waits chain along neighbours: a round can take several times its 2d
    # message times (lesson 07 §8 prints the ratio). That order is the one section 7's real
    # 4-node ring matched; a schedule agreed in advance (an edge colouring) would not wait.
    edges, ranks = [], []
    for w in seq:
        pairs = np.argwhere((w.T > 0) & ~np.eye(n, dtype=bool))
        pairs = pairs[np.lexsort(((pairs[:, 1] - pairs[:, 0]) % n, pairs[:, 0]))]
        first = np.searchsorted(pairs[:, 0], pairs[:, 0])
        edges.append(pairs)
        ranks.append(np.arange(len(pairs)) - first)
    net = PeerNetwork(n, cost, duplex=duplex)
    nodes = np.arange(n)
    models = np.zeros((n, X.shape[1]))
    mean = models.mean(axis=0)
    losses, times, spread = [loss(X, y, mean)], [0.0], [0.0]
    for t in range(n_rounds):
        grads = local_gradients(X, y, bounds, models)
        if order == "atc":  # step, then average the stepped models
            models = seq[t % len(seq)] @ (models - lr * grads)
        else:  # average the models as they were, then add the step taken at one's own
            models = seq[t % len(seq)] @ models - lr * grads
        began = net.ready.copy()  # when each node could start this round
        done = net.compute_many(nodes, sizes)
        leave = done if order == "atc" else began  # Lian: send while the gradient is computed
        pairs, rank = edges[t % len(seq)], ranks[t % len(seq)]
        pairs = pairs[np.lexsort((leave[pairs[:, 0]], rank))]
        net.transfer_many(pairs[:, 0], pairs[:, 1], nbytes, leave[pairs[:, 0]])
        mean = models.mean(axis=0)
        losses.append(loss(X, y, mean))
        times.append(net.elapsed())
        spread.append(float(((models - mean) ** 2).sum(axis=1).mean()))
    return GossipResult(label=label, weights=mean, times=np.array(times), losses=np.array(losses),
                        clock="virtual", consensus=np.array(spread), models=models, network=net)


def gradient_tracking(X, y, W, *, lr: float = 0.5, n_rounds: int = 100,
                      cost: CostModel | None = None, heterogeneous: bool = True,
                      label: str = "gradient tracking") -> GossipResult:
    """Decentralized gradient descent with gradient tracking (ATC form of DIGing; Nedić,
    Olshevsky and Shi 2017): each node also keeps t_i, its estimate of the *average* gradient,

        x ← W (x − η t),    t ← W (t + ∇f(x_new) − ∇f(x_old)),    t₀ = ∇f(x₀),

    so the mean of the t_i is always the mean of the local gradients, and at a fixed point
    every node has the same x with Σ ∇f_i(x) = 0: the constant-step stall of plain gossip goes.
    Each round sends two vectors per neighbour (x and t), priced on a ``PeerNetwork`` as in
    ``dpsgd`` (ATC order: compute, then send).
    """
    seq = _matrices(W)
    n = len(seq[0])
    lr = validation.positive("lr", lr)
    n_rounds = limits.rounds("n_rounds", n_rounds)
    label = validation.text("label", label)
    X, y, parts = node_data(X, y, n, heterogeneous=validation.flag("heterogeneous", heterogeneous))
    bounds = np.array([s.start for s in parts] + [parts[-1].stop])
    sizes = np.diff(bounds)
    net = PeerNetwork(n, cost)
    nodes = np.arange(n)
    links = [np.argwhere((w.T > 0) & ~np.eye(n, dtype=bool)) for w in seq]
    models = np.zeros((n, X.shape[1]))
    grads = local_gradients(X, y, bounds, models)
    tracker = grads.copy()
    mean = models.mean(axis=0)
    losses, times, spread = [loss(X, y, mean)], [0.0], [0.0]
    for t in range(n_rounds):
        w = seq[t % len(seq)]
        models = w @ (models - lr * tracker)
        fresh = local_gradients(X, y, bounds, models)
        tracker = w @ (tracker + fresh - grads)
        grads = fresh
        done = net.compute_many(nodes, sizes)
        pairs = links[t % len(seq)]
        net.transfer_many(pairs[:, 0], pairs[:, 1], 2 * 8 * X.shape[1], done[pairs[:, 0]])
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


ALLREDUCES = ("ring", "recursive doubling", "halving-doubling")


def _allreduce_steps(design: str, n: int, M: int):
    """The steps of an exact all-reduce: per step, (partner of each node, bytes each sends).

    'ring': 2(n−1) steps of M/n to the right neighbour (bandwidth-optimal, latency-worst).
    'recursive doubling': log₂ n steps, node i swaps its whole vector with i xor 2ᵏ.
    'halving-doubling' (Rabenseifner): reduce-scatter by recursive halving (M/2, M/4, …, M/n
    with i xor 2ᵏ), then all-gather by recursive doubling (M/n, …, M/2): 2 log₂ n steps and
    2(n−1)M/n bytes. The last two need n = 2^τ (Thakur, Rabenseifner and Gropp 2005).
    """
    nodes = np.arange(n)
    if design == "ring":
        return [((nodes + 1) % n, M // n)] * (2 * (n - 1))
    if n & (n - 1):
        raise ValueError(f"n: the {design} all-reduce needs a power of two, got {n}")
    tau = n.bit_length() - 1
    if design == "recursive doubling":
        return [(nodes ^ (1 << k), M) for k in range(tau)]
    halving = [(nodes ^ (1 << k), M >> (k + 1)) for k in range(tau)]
    return halving + [(nodes ^ (1 << k), M >> (k + 1)) for k in reversed(range(tau))]


def _round_time(design: str, n: int, sizes, M: int, cost: CostModel, n_rounds: int):
    """Virtual seconds per round and the busiest out-link's busy seconds per round."""
    net = PeerNetwork(n + 1, cost)  # node n is the server (used by the parameter server only)
    nodes = np.arange(n)
    for _ in range(n_rounds):
        start = net.elapsed()
        done = [net.compute(i, int(sizes[i]), start) for i in range(n)]
        if design.startswith("all-reduce"):  # every step in lockstep, after the last gradient
            for partner, nbytes in _allreduce_steps(design.split(", ")[1], n, M):
                net.transfer_many(nodes, partner, nbytes, np.full(n, net.ready[:n].max()))
        else:  # parameter server: push gradients, then the server sends w back to everyone
            arrived = [net.transfer(i, n, M, done[i]) for i in range(n)]
            for i in range(n):
                net.transfer(n, i, M, max(arrived))
    return net.elapsed() / n_rounds, float(net.comm_time.max()) / n_rounds


def compare_designs(X, y, n: int, cost: CostModel, *, target: float, n_rounds: int = 300,
                    graphs=("ring", "exponential"), slowdown: float = 4.0,
                    message_bytes: int | None = None,
                    allreduces=ALLREDUCES) -> list[dict]:
    """Exact all-reduce (each algorithm of ``allreduces``), a synchronous parameter server and
    D-PSGD (adapt-then-combine) on one problem.

    Same heterogeneous shards, same step size (``stable_lr``), same cost model. Per design:
    virtual seconds per round, the busiest out-link's busy time per round, rounds until the
    average model's loss ≤ ``target``, and how much slower a round gets when node 0 is
    ``slowdown`` times slower (1 = no effect). ``message_bytes``: price every model or
    gradient as that many bytes (a bigger model); the least-squares model has 8·d.
    """
    allreduces = [validation.choice("allreduces", a, ALLREDUCES) for a in allreduces]
    Xs, ys, parts = heterogeneous_split(X, y, n)
    sizes = [s.stop - s.start for s in parts]
    lr = stable_lr(X, y, n)
    slow = cost.with_(straggler=0, slowdown=validation.number("slowdown", slowdown, low=1.0))
    M = 8 * X.shape[1] if message_bytes is None else validation.positive_int(
        "message_bytes", message_bytes)
    exact = dpsgd(X, y, np.full((n, n), 1.0 / n), lr=lr, n_rounds=n_rounds)  # = gradient descent
    rows = []
    exact_designs = [f"all-reduce, {a}" for a in allreduces] + ["parameter server"]
    for design in exact_designs:
        t, link = _round_time(design, n, sizes, M, cost, 3)
        t_slow, _ = _round_time(design, n, sizes, M, slow, 3)
        rows.append({"design": design, "round_s": t, "busiest_link_s": link,
                     "rounds": rounds_to_loss(exact, target), "straggler": t_slow / t})
    for name in graphs:
        W = topologies.topology_matrix(name, n)
        run = dpsgd(X, y, W, lr=lr, n_rounds=n_rounds, cost=cost, message_bytes=M)
        slowed = dpsgd(X, y, W, lr=lr, n_rounds=30, cost=slow, message_bytes=M)
        t = float(run.times[-1]) / n_rounds
        rows.append({"design": f"gossip (ATC), {name}", "round_s": t,
                     "busiest_link_s": float(run.network.comm_time.max()) / n_rounds,
                     "rounds": rounds_to_loss(run, target),
                     "straggler": float(slowed.times[-1] / run.times[30])})
    return rows


# -- the lesson's "Try it" widget: one topology, its spectrum and its consensus ------------------


@dataclass(frozen=True)
class ConsensusView:
    """What the widget draws for one topology, computed without drawing.

    ``matrices``: the mixing matrices used in turn (one, or τ for the one-peer graph).
    ``errors``: ‖x_t − x̄₀‖ / ‖x_0 − x̄₀‖ against the *initial* average x̄₀, t = 0 … rounds, so
    nodes that agree on the wrong value show a plateau instead of a fall to zero. ``rate``:
    the factor per round the disagreement shrinks by in the slowest direction (for a cycle of
    matrices, the τ-th root of the cycle's rate; for a W whose columns do not sum to 1, the
    spectral radius of W − 1πᵀ, π its stationary distribution). ``eigenvalues``: of W, or of
    the product over one cycle. ``floor``: the error left once the nodes agree (0 when W keeps
    the average). ``exact_at``: the round after which the error is exactly 0, if any.
    """

    topology: str
    n: int
    rule: str
    graph: object
    matrices: list
    errors: np.ndarray
    rate: float
    eigenvalues: np.ndarray
    floor: float
    exact_at: int | None
    connected: bool
    notes: tuple


def explore_consensus(topology: str, n: int, rule: str = "metropolis", *, rounds: int = 100,
                      p: float = 0.15, seed: int = 0) -> ConsensusView:
    """x ← W_t x from a seeded random start on ``topology`` with ``n`` nodes and weights ``rule``.

    The exponential graphs have their own weights (``rule`` is ignored and a note says so); the
    one-peer graph cycles through its τ matrices. A rule whose W is only row-stochastic
    ('equal_neighbour' on an irregular graph) is run as it is: the nodes agree, on πᵀx₀.
    Raises ``ValueError`` for a size the topology does not have (a torus of 4, a hypercube of 12).
    """
    validation.choice("topology", topology, topologies.TOPOLOGIES)
    validation.choice("rule", rule, topologies.RULES)
    rounds = validation.integer("rounds", rounds, minimum=1, maximum=10_000)
    seed = validation.seed("seed", seed)
    g = topologies.graph(topology, n, p=p, seed=seed)
    n = g.number_of_nodes()
    notes = []
    if topology == "exponential":
        matrices = [topologies.exponential_matrix(n)]
    elif topology == "one_peer_exponential":
        matrices = topologies.one_peer_matrices(n)
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            matrices = [topologies.mixing_matrix(g, rule)]
        notes += [str(w.message) for w in caught]
    if topology in ("exponential", "one_peer_exponential") and rule != "metropolis":
        notes.append(f"the {topology} graph has its own weights; the rule {rule!r} is not used")
    cycle = np.eye(n)
    for w in matrices:
        cycle = w @ cycle
    eigenvalues = np.linalg.eigvals(cycle)
    eigenvalues = eigenvalues[np.argsort(-np.abs(eigenvalues))]
    # π: the left eigenvector of eigenvalue 1 (uniform when the columns sum to 1)
    values, vectors = np.linalg.eig(cycle.T)
    pi = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    pi = pi / pi.sum() if abs(pi.sum()) > 1e-12 else np.full(n, 1 / n)
    disagreement = cycle - np.outer(np.ones(n), pi)
    radius = float(np.abs(np.linalg.eigvals(disagreement)).max()) if n > 1 else 0.0
    rate = min(1.0, radius) ** (1 / len(matrices))
    x0 = np.random.default_rng(seed).standard_normal(n)
    x, mean = x0, x0.mean()
    start = np.linalg.norm(x - mean)
    errors = [1.0]
    for t in range(rounds):
        x = matrices[t % len(matrices)] @ x
        errors.append(np.linalg.norm(x - mean) / start)
    errors = np.array(errors)
    limit = np.linalg.matrix_power(cycle, 2**20) @ x0  # where the nodes end up
    floor = float(np.linalg.norm(limit - mean) / start)
    if nx.is_directed(g):
        connected = nx.is_strongly_connected(g)
    else:
        connected = nx.is_connected(g)
    if floor > 1e-9 and connected:
        notes.append(f"the columns of W do not sum to 1: the nodes agree on πᵀx₀ = {pi @ x0:.3f}, "
                     f"not on the average {mean:.3f}")
    exact_at = len(matrices) if radius < 1e-12 else None  # the cycle's product is 11ᵀ/n
    return ConsensusView(topology, n, rule, g, matrices, errors, rate, eigenvalues, floor,
                         exact_at, connected, tuple(notes))


def plot_consensus_view(view: ConsensusView, axes) -> None:
    """The widget's three panels: the graph, the eigenvalues with the rate, the error per round."""
    if not isinstance(view, ConsensusView):
        raise TypeError(f"view: expected a ConsensusView, got {type(view).__name__}")
    a, b, c = axes
    arrows = {"arrowsize": 4} if nx.is_directed(view.graph) else {}
    nx.draw(view.graph, nx.circular_layout(view.graph), ax=a, node_size=25, width=0.5, **arrows)
    cycle = len(view.matrices) > 1
    a.set_title(f"{view.topology}, n = {view.n}" + (f"\n(edges of all {len(view.matrices)} rounds)"
                                                     if cycle else ""), fontsize=8)
    b.plot(np.real(view.eigenvalues), np.imag(view.eigenvalues), "o", ms=4)
    theta = np.linspace(0, 2 * np.pi, 200)
    radius = view.rate ** len(view.matrices)
    b.plot(radius * np.cos(theta), radius * np.sin(theta), "r--", lw=1,
           label=f"slowest |λ| = {radius:.3f}")
    b.plot(np.cos(theta), np.sin(theta), color="0.8", lw=0.5)
    b.set_xlim(-1.15, 1.15)
    b.set_ylim(-1.15, 1.15)
    b.set_aspect("equal")
    b.set_xlabel("Re λ")
    b.set_ylabel("Im λ")
    b.set_title("eigenvalues of " + (f"one cycle W_{len(view.matrices) - 1}⋯W_0" if cycle
                                     else "W"), fontsize=8)
    b.legend(fontsize=7, loc="lower left")
    t = np.arange(len(view.errors))
    c.semilogy(t, np.maximum(view.errors, 1e-16), label="‖x_t − x̄₀‖ / ‖x_0 − x̄₀‖")
    if view.floor > 1e-9:
        c.axhline(view.floor, color="tab:red", lw=1,
                  label="agreed, on πᵀx₀ ≠ x̄₀" if view.connected
                  else "each component on its own average")
    else:
        c.semilogy(t, np.maximum(view.rate ** t, 1e-16), "k:",
                   label=f"{view.rate:.3f}ᵗ" + (" (per round, over a cycle)" if cycle else " = ρᵗ"))
    if view.exact_at is not None:
        c.axvline(view.exact_at, color="tab:green", lw=1, label=f"exact at t = {view.exact_at}")
    c.set_ylim(1e-16, 2)
    c.set_xlabel("round t")
    c.legend(fontsize=7)
