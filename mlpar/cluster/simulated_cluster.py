"""A deterministic discrete-event simulation of a cluster, with a virtual clock.

Why simulate: this machine has 2 cores, the lessons are about 64 to 256 workers. The
simulator runs the *real* numerical work (so results equal the real engines') but advances a
virtual clock from a ``CostModel`` instead of reading the wall clock, so the same seed gives
the same timeline on any laptop.

Model. Nodes 0 … m−1 are workers, node m is the server. Each node has a CPU and one network
link, both resources that do one thing at a time:

* ``compute(node, seconds, start)`` occupies the CPU from max(start, CPU free) for ``seconds``;
* ``send(src, dst, nbytes, start)`` occupies *both* links from max(start, both free) for
  α + β·nbytes (a server that talks to m workers therefore serializes m messages: the
  bottleneck that makes client–server designs stop scaling); the message arrives the cost
  model's ``latency`` later, and that time in flight holds no link, so messages overlap.

``schedule(time, item)`` / ``pop()`` is the event queue (a heap ordered by time, then by
insertion, so ties resolve the same way on every run). Algorithms reserve resources when an
event happens, in time order, which keeps each link first-come first-served.

Other schedules use the same four calls directly: a peer-to-peer (gossip) round is
``send(i, j, ...)`` between neighbouring workers then ``compute`` of the average; a pipeline
stage is ``compute`` on stage k followed by ``send(k, k + 1, activation bytes)``. The client–
server engines in ``mlpar.cluster.engines`` are one such schedule, built on top.

Shared cores. ``cores`` (default: as many as nodes) is the number of cores the whole cluster
runs on, as when the workers and the server are processes of one machine. With fewer cores
than nodes the server has no core of its own: it runs on the core of the last worker, m − 1,
so the server's link (its messages are work for a CPU: pickling, system calls) and that
worker's computing exclude each other, first come first served. This is a simplification, not
the operating system's rule (it runs the server on whichever core is idle): with m equal
workers it makes a round 2m message times + C/m, messages and compute never overlapping, and
lesson 05's claim tests whether that price fits a real 2-core run. Only the server is folded
onto a worker: workers that share cores among themselves are left to the calibration, which
times their compute while they all run at once. Lesson 05 uses this for 2 workers on 2 cores.

Worked example (used by the tests): 3 workers, α + β·b = 1 s per message, compute 2, 2 and
10 s (worker 2 is a straggler). Broadcast: workers receive w at 1, 2, 3. They finish at 3, 4,
13 and reply over the server's link during [3, 4], [4, 5], [13, 14]: the round takes 14 s, the
straggler's start (3) + its compute (10) + its reply (1).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from mlpar.cluster.cost_model import CostModel
from mlpar.core import validation


@dataclass(frozen=True)
class Segment:
    """One busy interval of a node: ``kind`` is 'compute' or 'comm'."""

    node: int
    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class Breakdown:
    """Seconds each node spent computing, communicating and waiting, out of ``makespan``."""

    compute: np.ndarray
    comm: np.ndarray
    wait: np.ndarray
    makespan: float

    def shares(self, nodes=None) -> dict[str, float]:
        """Fractions of the nodes' total time in each state (workers only by default)."""
        nodes = slice(0, len(self.compute) - 1) if nodes is None else nodes
        parts = {k: float(getattr(self, k)[nodes].sum()) for k in ("compute", "comm", "wait")}
        total = sum(parts.values()) or 1.0
        return {k: v / total for k, v in parts.items()}

    def __repr__(self) -> str:
        s = self.shares()
        return (
            f"Breakdown(makespan {self.makespan:.4g} s; workers: compute {s['compute']:.1%}, "
            f"communication {s['comm']:.1%}, waiting {s['wait']:.1%})"
        )


class SimulatedCluster:
    """``n_workers`` workers and one server on a virtual clock; see the module docstring."""

    def __init__(self, n_workers: int, cost: CostModel | None = None, *, record: bool = True,
                 duplex: bool = False, cores: int | None = None):
        self.n_workers = validation.positive_int("n_workers", n_workers)
        if cost is None:
            cost = CostModel()
        if not isinstance(cost, CostModel):
            raise TypeError(f"cost: expected a CostModel, got {type(cost).__name__}")
        self.cost = cost
        self.server = self.n_workers
        if not isinstance(record, (bool, np.bool_)):
            raise TypeError(f"record: expected True or False, got {record!r}")
        if not isinstance(duplex, (bool, np.bool_)):
            raise TypeError(f"duplex: expected True or False, got {duplex!r}")
        self.record = bool(record)
        self.duplex = bool(duplex)
        n_nodes = self.n_workers + 1
        if cores is not None:
            cores = validation.positive_int("cores", cores, maximum=1 << 20)
        self.cores = cores
        # The worker whose core the server shares (None: the server has a core of its own).
        self.shares_core = self.n_workers - 1 if cores is not None and cores < n_nodes else None
        self._cpu_free = np.zeros(n_nodes)
        # Half duplex (the default): one link per node, sending or receiving. Full duplex: a node
        # sends and receives at the same time (what a ring all-reduce relies on).
        self._link_free = np.zeros(n_nodes)
        self._in_free = np.zeros(n_nodes) if self.duplex else self._link_free
        self._compute = np.zeros(n_nodes)
        self._comm = np.zeros(n_nodes)
        self._rngs = cost.worker_rngs(self.n_workers)
        self._queue: list = []
        self._ticket = 0
        self.now = 0.0
        self.end = 0.0
        self.segments: list[Segment] = []

    # -- resources ------------------------------------------------------------------------
    def _node(self, name: str, node) -> int:
        return validation.integer(name, node, minimum=0, maximum=self.n_workers)

    def _start(self, start) -> float:
        return self.now if start is None else validation.non_negative("start", start)

    def _busy(self, node: int, kind: str, start: float, end: float) -> None:
        (self._compute if kind == "compute" else self._comm)[node] += end - start
        self.end = max(self.end, end)
        if self.record and end > start:
            self.segments.append(Segment(node, kind, start, end))

    def compute(self, node: int, seconds: float, start: float | None = None) -> float:
        """Occupy ``node``'s CPU for ``seconds`` from ``start`` (or when free); return the end."""
        node = self._node("node", node)
        seconds = validation.non_negative("seconds", seconds)
        begin = max(self._start(start), self._cpu_free[node])
        if node == self.shares_core:  # the server's messages hold this core too
            begin = max(begin, self._link_free[self.server], self._in_free[self.server])
            self._link_free[self.server] = max(self._link_free[self.server], begin + seconds)
            self._in_free[self.server] = max(self._in_free[self.server], begin + seconds)
        self._cpu_free[node] = begin + seconds
        self._busy(node, "compute", begin, begin + seconds)
        return begin + seconds

    def work(self, worker: int, n_samples: int, start: float | None = None) -> float:
        """``compute`` for a gradient over ``n_samples``, priced by the cost model."""
        worker = validation.integer("worker", worker, minimum=0, maximum=self.n_workers - 1)
        seconds = self.cost.compute_time(worker, n_samples, self._rngs[worker])
        return self.compute(worker, seconds, start)

    def send(self, src: int, dst: int, nbytes: int, start: float | None = None) -> float:
        """Hold both links for α + β·nbytes from ``start`` (or once both are free).

        With ``duplex=True`` the links are src's sending side and dst's receiving side.

        Returns the arrival time at ``dst``: the end of that, plus the model's latency.
        """
        src, dst = self._node("src", src), self._node("dst", dst)
        if src == dst:
            raise ValueError(f"dst: expected a node other than src ({src}), got {dst}")
        duration = self.cost.message_time(nbytes)
        begin = max(self._start(start), self._link_free[src], self._in_free[dst])
        shared = self.shares_core is not None and self.server in (src, dst)
        if shared:  # the server's core is busy while its worker computes
            begin = max(begin, self._cpu_free[self.shares_core])
        self._link_free[src] = self._in_free[dst] = begin + duration
        if shared:
            self._cpu_free[self.shares_core] = max(self._cpu_free[self.shares_core],
                                                   begin + duration)
        self._busy(src, "comm", begin, begin + duration)
        self._busy(dst, "comm", begin, begin + duration)
        return begin + duration + self.cost.latency

    # -- event queue ----------------------------------------------------------------------
    def schedule(self, time: float, item) -> None:
        """Put ``item`` on the queue to happen at virtual ``time`` (not before ``now``)."""
        time = validation.non_negative("time", time)
        if time < self.now:
            raise ValueError(f"time: expected an event at or after now ({self.now}), got {time}")
        heapq.heappush(self._queue, (time, self._ticket, item))
        self._ticket += 1

    def pop(self):
        """The earliest event as ``(time, item)``; the clock moves to its time."""
        if not self._queue:
            raise IndexError("pop: the event queue is empty")
        time, _, item = heapq.heappop(self._queue)
        self.now = time
        return time, item

    def __len__(self) -> int:
        return len(self._queue)

    # -- reports --------------------------------------------------------------------------
    def breakdown(self) -> Breakdown:
        """Compute, communication and waiting time per node (index m is the server).

        Waiting is whatever is left of the makespan: idle at a barrier, or waiting for a
        message that another, slower node has not sent yet.
        """
        makespan = max(self.end, self.now)
        wait = np.maximum(makespan - self._compute - self._comm, 0.0)
        return Breakdown(self._compute.copy(), self._comm.copy(), wait, makespan)

    def plot_timeline(self, ax=None, *, max_workers: int = 12, until: float | None = None):
        """Gantt chart: one row per node (server on top), compute in blue, messages in orange."""
        import matplotlib.pyplot as plt

        if not self.record:
            raise ValueError("record: the timeline needs SimulatedCluster(..., record=True)")
        max_workers = validation.positive_int("max_workers", max_workers)
        if ax is None:
            _, ax = plt.subplots(figsize=(9, 3))
        shown = list(range(min(self.n_workers, max_workers))) + [self.server]
        row = {node: i for i, node in enumerate(reversed(shown))}
        colours = {"compute": "tab:blue", "comm": "tab:orange"}
        for kind in ("compute", "comm"):
            spans = {}
            for s in self.segments:
                if s.kind == kind and s.node in row and (until is None or s.start < until):
                    spans.setdefault(s.node, []).append((s.start, s.end - s.start))
            for node, bars in spans.items():
                ax.broken_barh(bars, (row[node] - 0.4, 0.8), facecolors=colours[kind])
        ax.set_yticks(range(len(shown)))
        names = [("server" if n == self.server else f"worker {n}") for n in reversed(shown)]
        ax.set_yticklabels(names)
        ax.set_xlabel("virtual time [s]")
        if until is not None:
            ax.set_xlim(0, until)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
        ax.legend(handles, ["computation", "communication"], loc="upper left",
                  bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return ax
