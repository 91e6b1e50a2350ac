"""Who talks to whom in decentralized training: graphs, mixing matrices and their spectra.

A round of gossip replaces every node's vector by a weighted average of its neighbours':
x ← W x, with x of shape (n,) or (n, d) (one row per node). A **mixing matrix** W

* is non-negative, with W_ij > 0 only if i = j or j sends to i (an edge of the graph);
* has rows that sum to 1 (each node takes a weighted *average*) and columns that sum to 1
  (the *sum*, hence the average, of the nodes' vectors is kept): doubly stochastic.

The consensus error shrinks like ρᵗ, where ρ is the **second-largest eigenvalue modulus**:
the spectral radius of W − 11ᵀ/n, i.e. max(|λ₂|, |λₙ|) for a symmetric W with eigenvalues
1 = λ₁ ≥ λ₂ ≥ … ≥ λₙ. 1 − ρ is the **spectral gap**. (A definition with λ₂ alone is wrong when
λₙ is close to −1: the error then flips sign every round and shrinks like |λₙ|ᵗ.)

Metropolis–Hastings weights make any undirected graph's W symmetric and doubly stochastic from
local information only (each node needs its own degree and its neighbours'):
W_ij = 1 / (1 + max(d_i, d_j)) on edges, W_ii = 1 − Σ_j W_ij.

Topologies, from networkx where a generator exists (``TOPOLOGIES``): ring, 2-D torus, star,
complete, hypercube, the static exponential graph (node i sends to i + 2ᵏ mod n, Ying et al.
2021), its one-peer time-varying version (one of those edges per round) and Erdős–Rényi.
"""

from __future__ import annotations

import math
import warnings

import networkx as nx
import numpy as np

from mlpar.core import validation

TOPOLOGIES = ("ring", "torus", "star", "complete", "hypercube", "exponential",
              "one_peer_exponential", "erdos_renyi")
RULES = ("metropolis", "max_degree", "equal_neighbour")


class ConsensusWarning(UserWarning):
    """The graph is disconnected: the nodes can never agree on one average."""


#: The most nodes a graph or mixing matrix here may have: a dense n × n matrix of 4096 nodes
#: is 128 MB, and the lesson's largest network has 256.
MAX_NODES = 4096


def _n(n) -> int:
    n = validation.integer("n", n, maximum=MAX_NODES)
    if n < 2:
        raise ValueError(f"n: expected at least 2 nodes (one node has nobody to talk to), got {n}")
    return n


def check_graph(name: str, g):
    """``g`` if it is a networkx graph (directed or not), else a ``TypeError`` naming ``name``."""
    if not isinstance(g, (nx.Graph, nx.DiGraph)):
        raise TypeError(f"{name}: expected a networkx graph, got {type(g).__name__}")
    return g


def torus_shape(n: int, rows: int | None = None) -> tuple[int, int]:
    """(rows, cols) of an n-node torus: ``rows`` given, or the most square factorization."""
    n = _n(n)
    if rows is None:
        rows = max(r for r in range(1, math.isqrt(n) + 1) if n % r == 0)
    rows = validation.positive_int("rows", rows)
    if n % rows:
        raise ValueError(f"rows: expected rows · cols = n = {n}, got rows = {rows}, "
                         f"which does not divide {n}")
    return rows, n // rows


def exponential_offsets(n: int) -> list[int]:
    """Offsets 2⁰, 2¹, …, 2^(τ−1) < n with τ = ⌈log₂ n⌉: node i sends to i + 2ᵏ mod n."""
    n = _n(n)
    return [1 << k for k in range(math.ceil(math.log2(n)))]


def graph(topology: str, n: int, *, rows: int | None = None, p: float = 0.3,
          seed: int = 0) -> nx.Graph | nx.DiGraph:
    """The ``topology`` on nodes 0 … n−1 (a ``DiGraph`` for the directed exponential graphs).

    ``rows``: the torus's row count (rows · cols = n); ``p``, ``seed``: Erdős–Rényi's edge
    probability and random seed. For 'one_peer_exponential' this is the union of the edges
    used over τ rounds; ``one_peer_matrices`` gives the matrix of each round.
    """
    validation.choice("topology", topology, TOPOLOGIES)
    n = _n(n)
    p = validation.number("p", p, low=0.0, high=1.0)
    seed = validation.seed("seed", seed)
    if rows is not None:
        rows = validation.positive_int("rows", rows)
    if topology == "ring":
        return nx.cycle_graph(n)
    if topology == "torus":
        r, c = torus_shape(n, rows)
        if min(r, c) < 3:
            raise ValueError(f"n: a torus needs rows, cols ≥ 3 (else it has double edges), "
                             f"got {r} × {c} for n = {n}")
        g = nx.grid_2d_graph(r, c, periodic=True)
        return nx.convert_node_labels_to_integers(g, ordering="sorted")
    if topology == "star":
        return nx.star_graph(n - 1)
    if topology == "complete":
        return nx.complete_graph(n)
    if topology == "hypercube":
        if n & (n - 1):
            raise ValueError(f"n: a hypercube needs a power of two, got {n}")
        g = nx.hypercube_graph(n.bit_length() - 1)
        # nodes are bit tuples (an int when n = 2): node i's neighbours differ in one bit
        label = {v: v if isinstance(v, int) else int("".join(map(str, v)), 2) for v in g.nodes}
        return nx.relabel_nodes(g, label)
    if topology == "erdos_renyi":
        return nx.gnp_random_graph(n, p, seed=seed)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((i, (i + k) % n) for i in range(n) for k in exponential_offsets(n))
    return g


def undirected(name: str, g) -> nx.Graph:
    """``g`` if it is an undirected networkx graph on nodes 0 … n−1, else a clear error."""
    name = validation.text("name", name)
    check_graph(name, g)
    if g.is_directed():
        raise ValueError(f"{name}: expected an undirected graph (directed graphs need their own "
                         "weights, e.g. exponential_matrix), got a DiGraph")
    if sorted(g.nodes) != list(range(g.number_of_nodes())):
        raise ValueError(f"{name}: expected nodes labelled 0 … n−1, got {sorted(g.nodes)[:8]}")
    return g


def warn_if_disconnected(g) -> int:
    """Warn (``ConsensusWarning``) if ``g`` has several components; return their number."""
    g = check_graph("g", g)
    parts = (nx.number_weakly_connected_components(g) if g.is_directed()
             else nx.number_connected_components(g))
    if parts > 1:
        warnings.warn(f"graph: disconnected ({parts} components): consensus cannot happen; each "
                      "component averages only its own nodes (ρ = 1)", ConsensusWarning,
                      stacklevel=3)
    return parts


def metropolis_weights(g) -> np.ndarray:
    """W_ij = 1/(1 + max(d_i, d_j)) on each edge, W_ii = 1 − Σⱼ W_ij: symmetric, doubly stochastic."""
    g = undirected("g", g)
    n = g.number_of_nodes()
    deg = np.array([g.degree(i) for i in range(n)])
    W = np.zeros((n, n))
    for i, j in g.edges:
        if i != j:
            W[i, j] = W[j, i] = 1.0 / (1 + max(deg[i], deg[j]))
    W[np.diag_indices(n)] = 1.0 - W.sum(axis=1)
    return W


def mixing_matrix(g, rule: str = "metropolis") -> np.ndarray:
    """W for an undirected graph by ``rule`` (see ``RULES``); warns if ``g`` is disconnected.

    'metropolis': Metropolis–Hastings. 'max_degree': 1/(d_max + 1) on every edge (symmetric,
    doubly stochastic, slower on irregular graphs). 'equal_neighbour': each row 1/(d_i + 1) on
    the node and its neighbours: rows sum to 1 but columns do not on an irregular graph, so the
    nodes agree, but not on the average (shown in the lesson; ``check_mixing`` rejects it).
    """
    validation.choice("rule", rule, RULES)
    g = undirected("g", g)
    warn_if_disconnected(g)
    if rule == "metropolis":
        return metropolis_weights(g)
    A = nx.to_numpy_array(g, nodelist=range(g.number_of_nodes()))
    np.fill_diagonal(A, 0.0)
    deg = A.sum(axis=1)
    if rule == "max_degree":
        W = A / (deg.max() + 1)
        W[np.diag_indices_from(W)] = 1.0 - W.sum(axis=1)
        return W
    return (A + np.eye(len(A))) / (deg + 1)[:, None]


def exponential_matrix(n: int) -> np.ndarray:
    """Static exponential graph: W = (I + Σₖ P^(2ᵏ)) / (τ + 1), (P x)_i = x_(i−1), τ = ⌈log₂ n⌉.

    Node i receives from i − 2ᵏ (sends to i + 2ᵏ). Circulant, so doubly stochastic and normal
    but not symmetric; for n = 2^τ, ρ = 1 − 2/(τ + 1) (Ying et al. 2021).
    """
    n = _n(n)
    offsets = exponential_offsets(n)
    W = np.eye(n)
    for k in offsets:
        W += np.roll(np.eye(n), k, axis=0)  # row i has its 1 in column i − k
    return W / (len(offsets) + 1)


def one_peer_matrices(n: int) -> list[np.ndarray]:
    """One-peer exponential graph: in round t, W_t = (I + P^(2^(t mod τ))) / 2, one peer each.

    Cycle through the returned list. For n = 2^τ, W_(τ−1) ⋯ W_1 W_0 = 11ᵀ/n: exact averaging
    after τ rounds; for other n a residual is left (Ying et al. 2021).
    """
    n = _n(n)
    return [(np.eye(n) + np.roll(np.eye(n), k, axis=0)) / 2 for k in exponential_offsets(n)]


def topology_matrix(topology: str, n: int, rule: str = "metropolis", **options) -> np.ndarray:
    """W for a named topology: the exponential graphs use their own weights (round 0 for one-peer)."""
    validation.choice("topology", topology, TOPOLOGIES)
    if topology == "exponential":
        return exponential_matrix(n)
    if topology == "one_peer_exponential":
        return one_peer_matrices(n)[0]
    return mixing_matrix(graph(topology, n, **options), rule)


def check_mixing(W, g=None, *, name: str = "W") -> np.ndarray:
    """``W`` if it is a mixing matrix (square, non-negative, doubly stochastic, on ``g``'s edges).

    Raises ``ValueError`` naming ``name`` and the first thing that is wrong.
    """
    name = validation.text("name", name)
    W = validation.array(name, W, ndim=2, dtype=np.float64, finite=True, min_size=4)
    n = W.shape[0]
    if W.shape != (n, n):
        raise ValueError(f"{name}: expected a square matrix, got shape {W.shape}")
    if W.min() < -1e-12:
        raise ValueError(f"{name}: expected non-negative weights, got {W.min():.3g}")
    for axis, what in ((1, "rows"), (0, "columns")):
        sums = W.sum(axis=axis)
        bad = np.flatnonzero(np.abs(sums - 1) > 1e-9)
        if bad.size:
            raise ValueError(f"{name}: expected a doubly stochastic matrix, but {what} "
                             f"{bad[:5].tolist()} sum to {np.round(sums[bad[:5]], 6).tolist()}, not 1")
    if g is not None:
        check_graph("g", g)
        if g.number_of_nodes() != n:
            raise ValueError(f"{name}: expected {g.number_of_nodes()} nodes as in the graph, got {n}")
        allowed = np.eye(n, dtype=bool)
        for i, j in g.edges:
            allowed[j, i] = True  # x_j travels along i → j, so row j may weigh it
            if not g.is_directed():
                allowed[i, j] = True
        off = np.argwhere((W > 1e-12) & ~allowed)
        if off.size:
            i, j = off[0]
            raise ValueError(f"{name}: expected weights only on the graph's edges, got "
                             f"{name}[{i}, {j}] = {W[i, j]:.3g} but no edge {j} → {i}")
    return W


def spectrum(W) -> np.ndarray:
    """W's eigenvalues, largest modulus first (complex for a non-symmetric W)."""
    W = validation.array("W", W, ndim=2, dtype=np.float64, finite=True)
    values = np.linalg.eigvalsh(W) if np.allclose(W, W.T) else np.linalg.eigvals(W)
    return values[np.argsort(-np.abs(values), kind="stable")]


def rho(W) -> float:
    """Second-largest eigenvalue modulus: the spectral radius of W − 11ᵀ/n (1 if disconnected).

    Only for a mixing matrix (``check_mixing``): for a matrix whose rows or columns do not sum
    to 1, W − 11ᵀ/n does not describe how the disagreement shrinks (the average itself moves,
    or the nodes converge to something other than it), so its radius would promise a consensus
    that never comes. Such a W is refused with what is wrong.
    """
    W = check_mixing(W, name="W")
    D = W - 1.0 / len(W)
    if np.allclose(W, W.T):
        return float(np.abs(np.linalg.eigvalsh(D)).max())
    return float(np.abs(np.linalg.eigvals(D)).max())


def spectral_gap(W) -> float:
    """1 − ρ: how much of the disagreement one round removes, in the slowest direction."""
    return 1.0 - rho(W)


def rounds_to(rho_value: float, eps: float) -> int:
    """Rounds t for ρᵗ ≤ ε: ⌈log ε / log ρ⌉ (1 if ρ = 0: one round averages exactly; 0 if ε ≥ 1)."""
    rho_value = validation.number("rho_value", rho_value, low=0.0, high=1.0, high_open=True)
    eps = validation.positive("eps", eps)
    if eps >= 1:
        return 0
    if rho_value == 0:
        return 1
    return math.ceil(math.log(eps) / math.log(rho_value) - 1e-12)
