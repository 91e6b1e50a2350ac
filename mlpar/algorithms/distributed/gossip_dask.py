"""Gossip and ring all-reduce for real: Dask actors that send their vectors to each other.

Every node is an actor (an object living in a Dask worker process) holding its shard, its
model and handles to its neighbours' actors. In a round, node i computes its half-step,
serializes it once and calls ``deliver`` on each out-neighbour's actor: the bytes go from
worker to worker, never through the client or the scheduler. The client only starts rounds
(one call per node) and collects small summaries.

Bytes are counted where they are sent: each node adds up the length of every serialized
payload it hands to a neighbour (``pickle`` protocol 5 of a float64 array: 8 bytes per number
plus a constant header, ``PICKLE_OVERHEAD``), and separately the array data alone. Dask adds
its own envelope to each call (method name, actor key, framing), a constant per message that
is not counted here.

    >>> with dask_client(n_workers=4) as client, gossip_nodes(client, X, y, W) as nodes:
    ...     run = gossip_rounds(nodes, n_rounds=20, lr=0.1)
"""

from __future__ import annotations

import asyncio
import gc
import pickle
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.distributed import gossip, topologies
from mlpar.cluster.dask_cluster import worker_addresses
from mlpar.core import limits, validation

PICKLE_OVERHEAD = len(pickle.dumps(np.zeros(1), protocol=5)) - 8  # header bytes per array sent


class GossipNode:
    """One peer: a shard, a model, neighbours' handles, and a mailbox for their messages."""

    def __init__(self, index: int, n_nodes: int, X: np.ndarray, y: np.ndarray, scale: float):
        self.index, self.n_nodes = index, n_nodes
        self.X, self.y, self.scale = X, y, scale  # scale = n/N: mean of local gradients = ∇f
        self.model = np.zeros(X.shape[1])
        self.peers, self.out, self.weights = {}, [], {}
        self.boxes: dict = {}
        self.unacked: list = []  # this round's sends, until the neighbours confirm them
        self.data_bytes = self.wire_bytes = self.messages = 0

    async def connect(self, peers: dict, out: list, weights: dict) -> int:
        """``peers``: node → actor handle; ``out``: whom to send to; ``weights``: W_ij by j."""
        await self._settle()
        self.peers, self.out, self.weights = peers, list(out), dict(weights)
        return len(self.peers)

    def _box(self, key):
        if key not in self.boxes:
            self.boxes[key] = asyncio.get_running_loop().create_future()
        return self.boxes[key]

    async def deliver(self, key, blob: bytes) -> None:
        """Called by a neighbour: its message for ``key`` = (tag, step, sender) has arrived."""
        self._box(key).set_result(blob)

    async def _take(self, key) -> np.ndarray:
        blob = await self._box(key)
        del self.boxes[key]
        return pickle.loads(blob)

    async def _settle(self) -> None:
        """Wait until the neighbours have confirmed the sends still under way."""
        sends, self.unacked = self.unacked, []
        await asyncio.gather(*sends)

    def _pack(self, value: np.ndarray) -> bytes:
        """Serialize one message and count it: the bytes are counted where they are sent."""
        blob = pickle.dumps(np.ascontiguousarray(value), protocol=5)
        self.data_bytes += value.nbytes
        self.wire_bytes += len(blob)
        self.messages += 1
        return blob

    async def _send(self, dst: int, key, value: np.ndarray) -> None:
        await self.peers[dst].deliver(key, self._pack(value))

    async def gossip_round(self, t: int, lr: float) -> None:
        """x_i ← Σ_j W_ij (x_j − η g_j): step, send to out-neighbours, average what came in.

        A send does not wait for the neighbour's confirmation (a second trip over the link):
        the node goes on at once, and the confirmations are collected as they come (all of
        them before ``run_rounds`` returns). Messages are keyed by round and sender, so one
        that arrives early waits in the mailbox.
        """
        residual = self.X @ self.model - self.y
        half = self.model - lr * self.scale * (self.X.T @ residual)
        for done in [f for f in self.unacked if f.done()]:
            self.unacked.remove(done)
            done.result()  # a failed delivery raises here, not never
        key = ("gossip", t, self.index)
        self.unacked += [asyncio.ensure_future(self.peers[j].deliver(key, self._pack(half)))
                         for j in self.out]
        incoming = {j: await self._take(("gossip", t, j)) for j in self.weights if j != self.index}
        self.model = self.weights[self.index] * half
        for j in sorted(incoming):
            self.model = self.model + self.weights[j] * incoming[j]

    async def run_rounds(self, n_rounds: int, lr: float) -> dict:
        """``n_rounds`` rounds in a row, paced only by the neighbours' messages (no client in
        between); the report adds the end time of each round on this node's clock."""
        ends = []
        for t in range(n_rounds):
            await self.gossip_round(t, lr)
            ends.append(time.perf_counter())
        await self._settle()
        return {**self.report(), "ends": ends}

    async def allreduce(self, tag, vector: np.ndarray) -> np.ndarray:
        """Ring all-reduce: n−1 reduce-scatter steps, n−1 all-gather steps, to the right."""
        n, i = self.n_nodes, self.index
        left, right = (i - 1) % n, (i + 1) % n
        chunks = np.array_split(np.asarray(vector, dtype=np.float64).copy(), n)
        for phase in ("reduce-scatter", "all-gather"):
            for s in range(n - 1):
                shift = 0 if phase == "reduce-scatter" else 1
                mine, theirs = (i + shift - s) % n, (left + shift - s) % n
                _, data = await asyncio.gather(self._send(right, (tag, phase, s, i), chunks[mine]),
                                               self._take((tag, phase, s, left)))
                chunks[theirs] = chunks[theirs] + data if phase == "reduce-scatter" else data
        return np.concatenate(chunks) / n

    async def via_root(self, tag, vector: np.ndarray) -> np.ndarray:
        """Gather to node 0 and broadcast: node 0 sends (n−1)·M, the others M each."""
        n = self.n_nodes
        if self.index:
            await self._send(0, (tag, "up", 0, self.index), vector)
            return await self._take((tag, "down", 0, 0))
        parts = [np.asarray(vector, dtype=np.float64)]
        parts += [await self._take((tag, "up", 0, j)) for j in range(1, n)]
        mean = np.sum(parts, axis=0) / n
        await asyncio.gather(*(self._send(j, (tag, "down", 0, 0), mean) for j in range(1, n)))
        return mean

    async def ping(self, dst: int, nbytes: int, repeat: int) -> float:
        """Median round trip of ``nbytes`` to node ``dst`` and back (actor to actor)."""
        payload = np.ones(max(nbytes // 8, 1))
        trips = []
        for _ in range(repeat + 1):  # the first trip warms the connection up
            start = time.perf_counter()
            await self.peers[dst].echo(payload)
            trips.append(time.perf_counter() - start)
        return float(np.median(trips[1:]))

    async def echo(self, payload):
        return payload

    def report(self) -> dict:
        return {"model": self.model, "data_bytes": self.data_bytes, "wire_bytes": self.wire_bytes,
                "messages": self.messages}


def count_actors(dask_worker) -> int:
    """Runs on a worker (``client.run``): how many actors it still holds."""
    return len(dask_worker.state.actors)


def check_client(client):
    """``client`` if it is a ``dask.distributed.Client`` (as ``dask_client`` yields), else a
    ``TypeError`` that says so."""
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client: expected a dask.distributed.Client (from "
                        f"mlpar.cluster.dask_cluster.dask_client), got {type(client).__name__}")
    return client


def check_nodes(nodes) -> list:
    """``nodes`` as a list of at least 2 GossipNode actor handles (from ``gossip_nodes``)."""
    from distributed import Actor

    if isinstance(nodes, (str, bytes)) or not hasattr(nodes, "__iter__"):
        raise TypeError(f"nodes: expected the list of actor handles that gossip_nodes yields, "
                        f"got {type(nodes).__name__}")
    nodes = list(nodes)
    if not all(isinstance(node, Actor) for node in nodes):
        raise TypeError("nodes: expected the list of actor handles that gossip_nodes yields, got "
                        "something else in it")
    if len(nodes) < 2:
        raise ValueError(f"nodes: expected at least 2 nodes, got {len(nodes)}")
    return nodes


def actors_left(client) -> int:
    """Actors alive on all workers of ``client``'s cluster."""
    return sum(check_client(client).run(count_actors).values())


@contextmanager
def gossip_nodes(client, X, y, W, *, heterogeneous: bool = True, timeout: float = 20.0):
    """Start one ``GossipNode`` actor per row of ``W`` (round-robin over the workers), wire
    each to its neighbours, yield the handles; release them all on exit and wait until no
    actor is left (``RuntimeError`` if one is)."""
    check_client(client)
    heterogeneous = validation.flag("heterogeneous", heterogeneous)
    timeout = validation.positive("timeout", timeout)
    W = topologies.check_mixing(W)
    n = len(W)
    X, y, parts = gossip.node_data(X, y, n, heterogeneous=heterogeneous)  # before any actor starts
    workers = worker_addresses(client)
    futures = [client.submit(GossipNode, i, n, X[s], y[s], n / len(y), actor=True,
                             workers=[workers[i % len(workers)]], pure=False)
               for i, s in enumerate(parts)]
    nodes = []
    try:
        nodes.extend(f.result() for f in futures)
        wiring = []
        for i in range(n):
            inbound = {int(j): float(W[i, j]) for j in np.flatnonzero(W[i])}
            outbound = [int(j) for j in np.flatnonzero(W[:, i]) if j != i]
            ring = {(i - 1) % n, (i + 1) % n, 0} | (set(range(n)) if i == 0 else set())
            peers = {j: nodes[j] for j in set(outbound) | ring if j != i}
            wiring.append(nodes[i].connect(peers, outbound, inbound))
        [w.result() for w in wiring]
        yield nodes
    finally:
        # Drop every handle: the neighbours' (inside the actors), the caller's, the futures'.
        [f.result() for f in [node.connect({}, [], {}) for node in nodes]]
        nodes.clear()
        client.cancel(futures, force=True)  # releases the keys even if a handle survives somewhere
        futures.clear()
        gc.collect()
        deadline = time.monotonic() + timeout
        while actors_left(client) and time.monotonic() < deadline:
            client.run(gc.collect)  # handles that lived inside the actors sit in cycles there
            time.sleep(0.05)
        if actors_left(client):
            raise RuntimeError(f"gossip_nodes: {actors_left(client)} actor(s) left after {timeout} s")


@dataclass(frozen=True)
class RealRun:
    """A real gossip run: seconds per round (nodes' clocks), models, bytes per node per round."""

    round_times: np.ndarray  # (n_rounds − 1,): each round after the first, slowest node
    models: np.ndarray  # (n, d) at the end
    data_bytes: np.ndarray  # (n,) per round: array data sent by each node
    wire_bytes: np.ndarray  # (n,) per round: serialized bytes sent by each node
    messages: np.ndarray  # (n,) per round

    @property
    def seconds_per_round(self) -> float:
        """Median round (the first, which also opens the connections, is not among them)."""
        return float(np.median(self.round_times)) if len(self.round_times) else float("nan")


def gossip_rounds(nodes, *, n_rounds: int, lr: float) -> RealRun:
    """Run ``n_rounds`` D-PSGD rounds on started nodes.

    The client makes one call per node: each node then runs all its rounds, paced only by its
    neighbours' messages, as in decentralized training, and reports once at the end. A round's
    time is measured on each node's own clock (between the ends of consecutive rounds), and the
    slowest node's counts.
    """
    nodes = check_nodes(nodes)
    n_rounds = limits.rounds("n_rounds", n_rounds)
    lr = validation.positive("lr", lr)
    before = [node.report().result() for node in nodes]
    reports = [f.result() for f in [node.run_rounds(n_rounds, lr) for node in nodes]]
    per = {k: np.array([r[k] - b[k] for r, b in zip(reports, before, strict=True)]) / n_rounds
           for k in ("data_bytes", "wire_bytes", "messages")}
    times = np.max(np.diff(np.array([r["ends"] for r in reports]), axis=1), axis=0)
    return RealRun(times, np.array([r["model"] for r in reports]), per["data_bytes"],
                   per["wire_bytes"], per["messages"])


def allreduce(nodes, vectors, *, tag: str = "allreduce") -> tuple[list[np.ndarray], dict]:
    """Ring all-reduce of ``vectors`` (one per node) on the actors: results and bytes per node."""
    nodes = check_nodes(nodes)
    vectors = _vectors_for(nodes, vectors)
    before = [node.report().result() for node in nodes]
    results = [f.result() for f in [node.allreduce(tag, v) for node, v in zip(nodes, vectors)]]
    after = [node.report().result() for node in nodes]
    sent = {k: np.array([a[k] - b[k] for a, b in zip(after, before, strict=True)])
            for k in ("data_bytes", "wire_bytes", "messages")}
    return results, sent


def _vectors_for(nodes: list, vectors) -> list[np.ndarray]:
    """One checked vector per actor (``gossip.node_vectors``), the count named per node."""
    if hasattr(vectors, "__len__") and not isinstance(vectors, (str, bytes)) \
            and len(vectors) != len(nodes):
        raise ValueError(f"vectors: expected one per node ({len(nodes)}), got {len(vectors)}")
    return gossip.node_vectors(vectors, len(nodes))


def calibrate_links(nodes, *, sizes=(8, 1 << 18), repeat: int = 9) -> tuple[float, float]:
    """(α, β) of actor-to-actor messages, from node 0 ↔ node 1 round trips of two sizes.

    Like ``cost_model.measure_messages``: one way = round trip / 2 = α + β·b.
    """
    nodes = check_nodes(nodes)
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__len__") or len(sizes) != 2:
        raise TypeError(f"sizes: expected two message sizes in bytes, got {sizes!r}")
    sizes = sorted(validation.integer("sizes", b, minimum=8, maximum=1 << 26) for b in sizes)
    if len(nodes) < 2:
        raise ValueError(f"nodes: expected at least 2 nodes, got {len(nodes)}")
    small, large = (nodes[0].ping(1, b, repeat).result() / 2 for b in sizes)
    beta = max((large - small) / max(sizes[1] - sizes[0], 1), 0.0)
    return max(small - beta * sizes[0], 0.0), float(beta)


@dataclass(frozen=True)
class RoundPrediction:
    """Measured seconds per real gossip round beside the calibrated simulation's prediction."""

    n_nodes: int
    topology: str
    measured: float
    predicted: float
    alpha: float
    beta: float
    data_bytes: float  # per node per round, counted on the actors
    wire_bytes: float
    sharing: float = 1.0  # nodes per core (at least 1): the factor on the simulated round
    ratios: tuple = ()  # measured/predicted of each interleaved repeat (``repeats``)

    @property
    def ratio(self) -> float:
        """measured / predicted (of the median repeat when there were several)."""
        return self.measured / self.predicted

    @property
    def spread(self) -> tuple[float, float] | None:
        """(lowest, highest) measured/predicted over the repeats; None for a single one."""
        return (min(self.ratios), max(self.ratios)) if len(self.ratios) > 1 else None

    def __repr__(self) -> str:
        return (f"RoundPrediction({self.topology}, n={self.n_nodes}: measured "
                f"{self.measured * 1e3:.3g} ms, predicted {self.predicted * 1e3:.3g} ms, ratio "
                f"{self.ratio:.2f}; α = {self.alpha * 1e6:.3g} µs, β = {self.beta * 1e9:.3g} ns/B, "
                f"{self.sharing:g} nodes per core)")


def measure_and_predict(client, X, y, topology: str = "ring", n_nodes: int = 4, *,
                        n_rounds: int = 20, lr: float = 0.05, repeats: int = 1) -> RoundPrediction:
    """Real gossip rounds on ``n_nodes`` actors beside the prediction for the same round.

    Calibration never times a gossip round: α, β come from actor-to-actor pings, the compute
    from a local timing (``cost_model.measure_per_sample``). Predicted round = the simulated
    round (``gossip.dpsgd`` on a ``PeerNetwork`` priced with those figures) × ``sharing``; the
    client is not in a round (``gossip_rounds``), so it is not in the prediction either.

    The simulated network gives every node a CPU of its own. Here the nodes are processes on
    ``usable_cores()`` cores, and in a round they all work at once (step, serialize, send,
    receive), so with more nodes than cores each node gets cores/n of one: ``sharing`` =
    max(1, n / cores) stretches the simulated round by that much.

    ``repeats``: calibrate and measure that many times, interleaved (a calibration, then its
    rounds), and keep the repeat with the median ratio; ``ratios`` holds every repeat's, so a
    busy moment shows as spread instead of deciding the verdict.
    """
    from mlpar.cluster.cost_model import CostModel, measure_per_sample
    from mlpar.core.environment import usable_cores

    check_client(client)
    n_nodes = limits.workers("n_nodes", n_nodes)
    if n_nodes < 2:
        raise ValueError(f"n_nodes: expected at least 2 nodes, got {n_nodes}")
    n_rounds = limits.rounds("n_rounds", n_rounds)
    lr = validation.positive("lr", lr)
    repeats = validation.integer("repeats", repeats, minimum=1, maximum=9)

    W = (topologies.topology_matrix(topology, n_nodes) if topology != "ring" or n_nodes > 2
         else np.full((2, 2), 0.5))
    Xs, ys, parts = gossip.heterogeneous_split(X, y, n_nodes)
    sharing = max(1.0, n_nodes / usable_cores())
    found = []
    with gossip_nodes(client, X, y, W) as nodes:
        for _ in range(repeats):
            per_sample = measure_per_sample(Xs[parts[0]], ys[parts[0]])
            alpha, beta = calibrate_links(nodes)
            run = gossip_rounds(nodes, n_rounds=n_rounds, lr=lr)
            cost = CostModel(alpha=alpha, beta=beta, per_sample=per_sample)
            # An actor sends and receives on its worker's one event loop: half-duplex peers.
            sim = gossip.dpsgd(X, y, W, lr=lr, n_rounds=3, cost=cost, duplex=False)
            predicted = sharing * float(np.median(np.diff(sim.times)))
            found.append((run.seconds_per_round / predicted, run, predicted, alpha, beta))
    found.sort(key=lambda f: f[0])
    _, run, predicted, alpha, beta = found[len(found) // 2]
    return RoundPrediction(n_nodes, topology, run.seconds_per_round, predicted, alpha, beta,
                           float(run.data_bytes.mean()), float(run.wire_bytes.mean()), sharing,
                           tuple(f[0] for f in found))


def gather_broadcast(nodes, vectors, *, tag: str = "server") -> list[np.ndarray]:
    """A parameter server's round on the same actors: all send to node 0, which sends back."""
    nodes = check_nodes(nodes)
    vectors = _vectors_for(nodes, vectors)
    results = [f.result() for f in [node.via_root(tag, v) for node, v in zip(nodes, vectors)]]
    return results
