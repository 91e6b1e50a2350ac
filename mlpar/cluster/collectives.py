"""Reduce and all-reduce schedules on the simulated cluster: flat server, tree, ring.

Each function takes a ``SimulatedCluster`` whose workers 0 … m−1 all hold ``nbytes`` of
partial results at ``start`` and plays the schedule with ``send`` and ``compute`` (the
additions are priced at ``add_per_byte`` seconds per byte). It returns the time at which the
result is complete where it is needed: on one node for a *reduce*, on every worker for an
*all-reduce*. The closed forms are ``CostModel.flat_reduce_time``, ``tree_reduce_time``,
``flat_allreduce_time``, ``tree_allreduce_time`` and ``ring_allreduce_time`` (with
``add_per_byte = 0``); the tests check that schedule and formula agree. See Thakur,
Rabenseifner and Gropp (2005) for the ring and tree algorithms as MPI implements them.
"""

from __future__ import annotations

from mlpar.cluster.simulated_cluster import SimulatedCluster
from mlpar.core import validation


def _check(cluster, nbytes, start, add_per_byte: float = 0.0):
    if not isinstance(cluster, SimulatedCluster):
        raise TypeError(f"cluster: expected a SimulatedCluster, got {type(cluster).__name__}")
    validation.non_negative("add_per_byte", add_per_byte)
    nbytes = validation.integer("nbytes", nbytes, minimum=0, maximum=1 << 40)
    start = cluster.now if start is None else validation.non_negative("start", start)
    return nbytes, start


def flat_reduce(cluster, nbytes: int, start: float | None = None) -> float:
    """Every worker sends to the server at once; its one link takes them in turn."""
    nbytes, start = _check(cluster, nbytes, start)
    return max(cluster.send(i, cluster.server, nbytes, start) for i in range(cluster.n_workers))


def tree_reduce(cluster, nbytes: int, start: float | None = None, *,
                add_per_byte: float = 0.0) -> float:
    """Binary tree onto worker 0: at level k, worker i + 2ᵏ sends to worker i (i a multiple
    of 2ᵏ⁺¹) and i adds. ⌈log₂ m⌉ levels; the pairs of one level use disjoint links."""
    nbytes, start = _check(cluster, nbytes, start, add_per_byte)
    ready = [start] * cluster.n_workers
    step = 1
    while step < cluster.n_workers:
        for i in range(0, cluster.n_workers - step, 2 * step):
            arrival = cluster.send(i + step, i, nbytes, max(ready[i], ready[i + step]))
            ready[i] = cluster.compute(i, add_per_byte * nbytes, arrival)
        step *= 2
    return ready[0]


def flat_allreduce(cluster, nbytes: int, start: float | None = None) -> float:
    """``flat_reduce``, then the server sends the sum to every worker, one after the other."""
    nbytes, start = _check(cluster, nbytes, start)
    summed = flat_reduce(cluster, nbytes, start)
    return max(cluster.send(cluster.server, i, nbytes, summed) for i in range(cluster.n_workers))


def tree_allreduce(cluster, nbytes: int, start: float | None = None, *,
                   add_per_byte: float = 0.0) -> float:
    """``tree_reduce`` onto worker 0, then the same tree run backwards to broadcast the sum:
    at each level, every worker that has it sends it to its partner 2ᵏ further on. Levels run
    one after the other, as the closed form counts them (when m is not a power of two, a
    worker that sends twice in a row could start its second message a little earlier)."""
    nbytes, start = _check(cluster, nbytes, start, add_per_byte)
    m = cluster.n_workers
    has = {0: tree_reduce(cluster, nbytes, start, add_per_byte=add_per_byte)}
    step = 1
    while 2 * step < m:
        step *= 2
    while m > 1 and step >= 1:
        level = max(has.values())
        for i in range(0, m - step, 2 * step):
            has[i + step] = cluster.send(i, i + step, nbytes, level)
        step //= 2
    return max(has.values())


def ring_allreduce(cluster, nbytes: int, start: float | None = None, *,
                   add_per_byte: float = 0.0) -> float:
    """Ring all-reduce: m − 1 reduce-scatter steps, then m − 1 all-gather steps.

    Every step, each worker sends one block of ⌈nbytes/m⌉ bytes to its right neighbour (and
    in the first half adds the block it receives). Afterwards every worker holds the sum.
    """
    nbytes, start = _check(cluster, nbytes, start, add_per_byte)
    m = cluster.n_workers
    block = -(-nbytes // m)
    ready = [start] * m
    for step in range(2 * (m - 1)):
        arrivals = [cluster.send(i, (i + 1) % m, block, ready[i]) for i in range(m)]
        for i in range(m):
            got = max(arrivals[i - 1], ready[i])  # worker i receives from i − 1
            add = add_per_byte * block if step < m - 1 else 0.0
            ready[i] = cluster.compute(i, add, got)
    return max(ready)
