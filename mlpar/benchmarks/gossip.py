"""Benchmark: real gossip rounds on Dask actors beside the calibrated simulation's prediction.

    python -m mlpar.bench gossip          (or: make bench FAMILY=gossip; --quick for a test)

From one run: for a ring and a complete graph at n = 2, 4, 8 nodes (one Dask actor per worker
process, actors sending to each other directly), the measured time per round, the prediction
of a ``PeerNetwork`` calibrated on those actors (α, β from actor-to-actor pings, compute from a
local timing, the client's part from no-op calls) and their ratio (target within 1.3×), and
the bytes each node sent per round, counted on the actors, beside d·M; ring all-reduce vs a
parameter server round (gather to node 0, then broadcast) at n = 4, 8 on the same actors; the
real seconds the simulator needs for 100 rounds of a 256-node ring.
"""

from __future__ import annotations

import os
import time

import numpy as np

from mlpar.algorithms.distributed import gossip, gossip_dask, house_prices, topologies
from mlpar.core import environment, validation

TARGET_RATIO = 1.3
TARGET_SIM_SECONDS = 2.0


def _allreduce_vs_server(client, n: int, d: int, repeat: int) -> dict:
    """Seconds for a ring all-reduce and for a gather-and-broadcast through node 0."""
    vectors = gossip.seeded_vectors(n, d, seed=n)
    W = topologies.topology_matrix("complete", n)
    X, y = house_prices.load()
    with gossip_dask.gossip_nodes(client, X, y, W) as nodes:
        ring, server = [], []
        for k in range(repeat + 1):
            start = time.perf_counter()
            _, sent = gossip_dask.allreduce(nodes, vectors, tag=f"ring{k}")
            ring.append(time.perf_counter() - start)
            start = time.perf_counter()
            gossip_dask.gather_broadcast(nodes, vectors, tag=f"ps{k}")
            server.append(time.perf_counter() - start)
    return {"n": n, "d": d, "ring_s": float(np.median(ring[1:])),
            "server_s": float(np.median(server[1:])),
            "ring_bytes_per_node": float(sent["data_bytes"].mean())}


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    from mlpar.cluster.dask_cluster import dask_client

    X, y = house_prices.load()
    sizes = (2, 4) if quick else (2, 4, 8)
    rows = []
    load_before = os.getloadavg()[0]
    with dask_client(n_workers=max(sizes)) as client:
        for topology in ("ring", "complete"):
            for n in sizes:
                p = gossip_dask.measure_and_predict(client, X, y, topology, n,
                                                    n_rounds=5 if quick else 20)
                degree = 1 if n == 2 else (2 if topology == "ring" else n - 1)
                rows.append({"topology": topology, "n": n, "measured_s": p.measured,
                             "predicted_s": p.predicted, "ratio": p.ratio,
                             "alpha_s": p.alpha, "beta_s_per_byte": p.beta,
                             "data_bytes": p.data_bytes, "wire_bytes": p.wire_bytes,
                             "d_times_M": degree * 8 * X.shape[1]})
        reduce = [_allreduce_vs_server(client, n, 1 << 14, 2 if quick else 5)
                  for n in ((4,) if quick else (4, 8))]
    start = time.perf_counter()
    gossip.dpsgd(X, y, topologies.topology_matrix("ring", 256), lr=gossip.stable_lr(X, y, 256),
                 n_rounds=100)
    return {"rows": rows, "allreduce": reduce, "sim_wall_s": time.perf_counter() - start,
            "pickle_overhead": gossip_dask.PICKLE_OVERHEAD,
            "load_average": [load_before, os.getloadavg()[0]], "cores": environment.usable_cores()}


def report(figures: dict) -> str:
    lines = [f"{'graph':<9}{'n':>3}{'measured':>12}{'predicted':>12}{'ratio':>7}  within "
             f"{TARGET_RATIO:g}×{'bytes/node':>12}{'d·M':>6}  (+{figures['pickle_overhead']} B "
             "pickle header per message on the wire)"]
    for r in figures["rows"]:
        ok = 1 / TARGET_RATIO <= r["ratio"] <= TARGET_RATIO
        lines.append(f"{r['topology']:<9}{r['n']:>3}{r['measured_s'] * 1e3:>9.3g} ms"
                     f"{r['predicted_s'] * 1e3:>9.3g} ms{r['ratio']:>7.2f}  {'yes' if ok else 'NO ':<9}"
                     f"{r['data_bytes']:>12.0f}{r['d_times_M']:>6}")
    for a in figures["allreduce"]:
        lines.append(f"n = {a['n']}, {a['d']} floats: ring all-reduce {a['ring_s'] * 1e3:.3g} ms "
                     f"({a['ring_bytes_per_node']:.0f} B sent per node = 2(n−1)M/n), gather to node 0 "
                     f"and broadcast {a['server_s'] * 1e3:.3g} ms")
    ok = figures["sim_wall_s"] < TARGET_SIM_SECONDS
    lines.append(f"simulated 256-node ring, 100 rounds: {figures['sim_wall_s']:.2f} s of real time "
                 f"(target < {TARGET_SIM_SECONDS:g} s: {'yes' if ok else 'NO'})")
    before, after = figures["load_average"]
    lines.append(f"machine: {figures['cores']} cores, load average {before:.1f} before, {after:.1f} "
                 "after (above the core count, timings are disturbed)")
    return "\n".join(lines)
