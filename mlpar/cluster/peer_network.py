"""A simulated peer-to-peer network: nodes that message each other on a virtual clock.

The client–server simulator (``simulated_cluster``) prices a message by holding *both* ends'
links, which is what a server with one link does. Peers send and receive at the same time, so
here every node has two links, one out and one in (full duplex), each carrying one message at
a time: a message of b bytes from i to j holds i's out-link and j's in-link for α + β·b seconds
and arrives the model's ``latency`` after that (time in flight holds no link, so messages
overlap: the same ``CostModel`` as everywhere in the course, calibrated the same way).
Computation holds the node's CPU, priced by the model's per-sample time, straggler and
jitter: every field of the cost model is used.

``send(src, dst, value)`` returns the copy that arrives and counts its bytes per node, so an
algorithm written against it (a ring all-reduce, a gossip round) can be checked for *what it
sends*, not only for what it computes:

    >>> net = PeerNetwork(4)
    >>> got = net.send(0, 1, np.ones(8))       # 64 bytes leave node 0
    >>> net.bytes_sent.tolist()
    [64, 0, 0, 0]
"""

from __future__ import annotations

import numpy as np

from mlpar.cluster.cost_model import CostModel
from mlpar.core import validation


class PeerNetwork:
    """``n_nodes`` peers with full-duplex links and a CPU each, priced by ``cost``.

    ``duplex=False``: each node sends *or* receives, one message at a time (its in- and
    out-link are one). That is a peer whose messages are all handled by one thread, such as a
    Dask actor on its worker's event loop: it cannot read a neighbour's message while it is
    writing its own.
    """

    def __init__(self, n_nodes: int, cost: CostModel | None = None, *, duplex: bool = True):
        self.n_nodes = validation.positive_int("n_nodes", n_nodes)
        if cost is None:
            cost = CostModel()
        if not isinstance(cost, CostModel):
            raise TypeError(f"cost: expected a CostModel, got {type(cost).__name__}")
        self.cost = cost
        self.duplex = validation.flag("duplex", duplex)
        n = self.n_nodes
        self._out_free = np.zeros(n)
        self._in_free = np.zeros(n) if self.duplex else self._out_free  # one link if half duplex
        self._cpu_free = np.zeros(n)
        self._rngs = cost.worker_rngs(n)
        self.ready = np.zeros(n)  # when each node last finished something (default start)
        self.bytes_sent = np.zeros(n, dtype=np.int64)
        self.bytes_received = np.zeros(n, dtype=np.int64)
        self.messages_sent = np.zeros(n, dtype=np.int64)
        self.comm_time = np.zeros(n)  # seconds each node's out-link was busy

    def _node(self, name: str, node) -> int:
        return validation.integer(name, node, minimum=0, maximum=self.n_nodes - 1)

    def transfer(self, src: int, dst: int, nbytes: int, start: float | None = None) -> float:
        """Price one message of ``nbytes``; returns its arrival time at ``dst``.

        The links are held for α + β·nbytes; the message arrives ``latency`` later.
        """
        src, dst = self._node("src", src), self._node("dst", dst)
        if src == dst:
            raise ValueError(f"dst: expected a node other than src ({src}), got {dst}")
        begin = self.ready[src] if start is None else validation.non_negative("start", start)
        begin = max(begin, self._out_free[src], self._in_free[dst])
        end = begin + self.cost.message_time(nbytes)
        self._out_free[src] = self._in_free[dst] = end
        arrival = end + self.cost.latency
        self.ready[dst] = max(self.ready[dst], arrival)
        self.bytes_sent[src] += nbytes
        self.bytes_received[dst] += nbytes
        self.messages_sent[src] += 1
        self.comm_time[src] += end - begin
        return arrival

    def transfer_many(self, sources, destinations, nbytes: int, starts) -> None:
        """``transfer(sources[k], destinations[k], nbytes, starts[k])`` for every k, in order.

        The same first-come first-served pricing, checked once for all messages instead of once
        per message: a round of gossip on 256 nodes is thousands of messages.
        """
        src = np.asarray(sources, dtype=np.int64)
        dst = np.asarray(destinations, dtype=np.int64)
        start = np.asarray(starts, dtype=np.float64)
        if not (src.shape == dst.shape == start.shape) or src.ndim != 1:
            raise ValueError(f"sources, destinations, starts: expected three 1-D arrays of one "
                             f"length, got shapes {src.shape}, {dst.shape}, {start.shape}")
        if src.size and (min(src.min(), dst.min()) < 0
                         or max(src.max(), dst.max()) >= self.n_nodes or np.any(src == dst)):
            raise ValueError(f"sources, destinations: expected pairs of different nodes in "
                             f"0 … {self.n_nodes - 1}")
        if np.any(start < 0) or not np.all(np.isfinite(start)):
            raise ValueError("starts: expected finite times >= 0")
        duration, latency = self.cost.message_time(nbytes), self.cost.latency
        out_free = self._out_free.tolist()
        in_free = self._in_free.tolist() if self.duplex else out_free
        ready, busy = self.ready.tolist(), self.comm_time.tolist()
        for i, j, t in zip(src.tolist(), dst.tolist(), start.tolist()):
            begin = max(t, out_free[i], in_free[j])
            out_free[i] = in_free[j] = end = begin + duration
            ready[j] = max(ready[j], end + latency)
            busy[i] += duration
        self._out_free[:], self._in_free[:] = out_free, in_free  # the same array if half duplex
        self.ready[:], self.comm_time[:] = ready, busy
        np.add.at(self.bytes_sent, src, nbytes)
        np.add.at(self.bytes_received, dst, nbytes)
        np.add.at(self.messages_sent, src, 1)

    def send(self, src: int, dst: int, value, start: float | None = None) -> np.ndarray:
        """Send an array from ``src`` to ``dst``; returns the copy ``dst`` receives.

        ``start``: when the message may leave (default: when ``src`` last finished receiving
        or computing). Bytes counted: the array's data, ``value.nbytes``.
        """
        arrived = np.array(value, dtype=np.float64, copy=True)
        self.transfer(src, dst, int(arrived.nbytes), start)
        return arrived

    def compute(self, node: int, n_samples: int, start: float | None = None) -> float:
        """Occupy ``node``'s CPU for a gradient over ``n_samples``; returns the end time."""
        node = self._node("node", node)
        seconds = self.cost.compute_time(node, n_samples, self._rngs[node])
        begin = self.ready[node] if start is None else validation.non_negative("start", start)
        begin = max(begin, self._cpu_free[node])
        self._cpu_free[node] = begin + seconds
        self.ready[node] = max(self.ready[node], begin + seconds)
        return begin + seconds

    def compute_many(self, nodes, n_samples) -> np.ndarray:
        """``compute(nodes[k], n_samples[k])`` for every k, in order; returns the end times.

        The same pricing (per sample, straggler, each node's own jitter stream), checked once
        for all nodes instead of once per node: a round on 256 nodes is 256 computations.
        """
        nodes = np.asarray(nodes)
        samples = np.asarray(n_samples)
        if nodes.ndim != 1 or samples.shape != nodes.shape or not (
                np.issubdtype(nodes.dtype, np.integer) and np.issubdtype(samples.dtype, np.integer)):
            raise ValueError(f"nodes, n_samples: expected two 1-D integer arrays of one length, "
                             f"got shapes {nodes.shape}, {samples.shape}")
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self.n_nodes or samples.min() < 0):
            raise ValueError(f"nodes, n_samples: expected nodes in 0 … {self.n_nodes - 1} and "
                             "sample counts >= 0")
        cost, ends = self.cost, []
        ready, cpu_free = self.ready.tolist(), self._cpu_free.tolist()
        for node, n in zip(nodes.tolist(), samples.tolist()):
            seconds = cost.per_sample * n  # as CostModel.compute_time, without its checks
            if node == cost.straggler:
                seconds *= cost.slowdown
            if cost.jitter > 0:
                seconds *= 1.0 + self._rngs[node].exponential(cost.jitter)
            end = cpu_free[node] = max(ready[node], cpu_free[node]) + seconds
            ready[node] = max(ready[node], end)
            ends.append(end)
        self.ready[:], self._cpu_free[:] = ready, cpu_free
        return np.array(ends)

    def elapsed(self) -> float:
        """Virtual seconds until the last message or computation ended."""
        return float(max(self.ready.max(), self._out_free.max(), self._cpu_free.max()))

    def __repr__(self) -> str:
        return (f"PeerNetwork({self.n_nodes} nodes, {int(self.messages_sent.sum())} messages, "
                f"{self.elapsed():.4g} s virtual)")
