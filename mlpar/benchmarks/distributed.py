"""Benchmark: MapReduce rounds on real engines beside the calibrated model; Dask's round cost.

    python -m mlpar.bench distributed          (or: make bench FAMILY=distributed)

From one run:

* the measured time per iteration on 1 and 2 local processes and on a Dask LocalCluster with
  2 workers; for each, the prediction of a ``CostModel`` calibrated on that same engine (α,
  latency, β from echo round trips, compute timed on the workers: a round is never timed, so
  this is a prediction, not a fit) and the ratio measured / predicted (target: within 1.3×);
* Dask's α and time per iteration beside the processes' (targets: α ≤ 2 ms, an iteration
  within 3× of processes), for the engine as it is (``WorkerStore`` actors: a method call goes
  straight to the worker) and for the earlier design (one ``client.submit`` per worker and
  round, shards scattered once, tasks pinned with ``workers=``), which every message passes
  through the scheduler;
* the real time the simulator needs for a 256-worker run (target: under 5 s).
"""

from __future__ import annotations

import os
import time

import numpy as np

from mlpar.algorithms.distributed import house_prices, least_squares, mapreduce
from mlpar.cluster import tasks
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.dask_cluster import worker_addresses
from mlpar.cluster.engines import DaskEngine, ProcessEngine
from mlpar.core import environment, splits, validation

TARGET_RATIO = 1.3
TARGET_ALPHA = 2e-3
TARGET_DASK_OVER_PROCESSES = 3.0
TARGET_SIM_SECONDS = 5.0


def scheduler_rounds(client, X, y, n_iter: int, repeat: int) -> tuple[float, float]:
    """The earlier Dask design, for comparison: (α from echoes, median seconds per iteration).

    Shards scattered once and pinned; each round submits one task per worker and gathers.
    """
    workers = worker_addresses(client)
    parts = splits.shards(len(y), len(workers))
    data = [(client.scatter(X[s], workers=[a]), client.scatter(y[s], workers=[a]))
            for s, a in zip(parts, workers, strict=True)]
    small = np.ones(1)
    trips = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        client.submit(tasks.echo, small, data[0][0], workers=[workers[0]], pure=False).result()
        trips.append(time.perf_counter() - start)
    w, times = np.zeros(X.shape[1]), []
    for _ in range(n_iter + 1):
        start = time.perf_counter()
        futures = [client.submit(least_squares.partial_gradient, Xi, yi, w, workers=[a], pure=False)
                   for (Xi, yi), a in zip(data, workers, strict=True)]
        g = sum(gi for gi, _ in client.gather(futures))
        w = w - 0.5 * g / len(y)
        times.append(time.perf_counter() - start)
    return float(np.median(trips[1:])) / 2, float(np.median(times[1:]))


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    n_samples = 100_000 if quick else 400_000
    n_iter = 10 if quick else 30
    repeat = 3 if quick else 7
    X, y = house_prices.load(n_samples)
    load_before = os.getloadavg()[0]  # other programs on the machine move these timings
    rows = []
    for label, make in (
        ("processes", lambda: ProcessEngine(1)),
        ("processes", lambda: ProcessEngine(2)),
        ("dask", lambda: DaskEngine(2)),
    ):
        with make() as eng:
            p = mapreduce.measure_and_predict(eng, X, y, n_iter=n_iter, repeat=repeat)
            if label == "dask":
                before = scheduler_rounds(eng.client, X, y, n_iter, repeat)
        rows.append({
            "engine": label, "workers": p.n_workers, "measured_s": p.measured,
            "predicted_s": p.predicted, "ratio": p.ratio, "alpha_s": p.cost.alpha,
            "latency_s": p.cost.latency, "beta_s_per_byte": p.cost.beta,
            "per_sample_s": p.cost.per_sample,
        })
    load_after = os.getloadavg()[0]
    # The simulator at scale, priced by the processes calibration plus a straggler and noise.
    base = rows[1]
    cost = CostModel(alpha=base["alpha_s"], latency=base["latency_s"], beta=base["beta_s_per_byte"],
                     per_sample=base["per_sample_s"], straggler=0, slowdown=4.0, jitter=0.2)
    start = time.perf_counter()
    sim = mapreduce.gradient_descent(X, y, n_workers=256, n_iter=n_iter, cost=cost)
    sim_wall = time.perf_counter() - start
    return {
        "n_samples": n_samples, "n_iter": n_iter, "rows": rows,
        "dask_before": {"alpha_s": before[0], "iteration_s": before[1]},
        "sim_workers": 256, "sim_wall_s": sim_wall, "sim_virtual_s_per_iter": sim.time_per_iteration,
        "load_average": [load_before, load_after], "cores": environment.usable_cores(),
    }


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def report(figures: dict) -> str:
    lines = [
        f"MapReduce gradient descent, {figures['n_samples']} samples, {figures['n_iter']} iterations",
        f"{'engine':<11}{'workers':>8}{'measured':>12}{'predicted':>12}{'ratio':>8}"
        f"  within {TARGET_RATIO:g}×",
    ]
    for r in figures["rows"]:
        ok = 1 / TARGET_RATIO <= r["ratio"] <= TARGET_RATIO
        lines.append(
            f"{r['engine']:<11}{r['workers']:>8}{r['measured_s'] * 1e3:>9.3g} ms"
            f"{r['predicted_s'] * 1e3:>9.3g} ms{r['ratio']:>8.2f}  {_yes(ok)}"
        )
    for r in figures["rows"]:
        lines.append(
            f"  calibrated on {r['engine']} ×{r['workers']}: α = {r['alpha_s'] * 1e6:.3g} µs, "
            f"latency = {r['latency_s'] * 1e6:.3g} µs, β = {r['beta_s_per_byte'] * 1e9:.3g} ns/B, "
            f"compute = {r['per_sample_s'] * 1e9:.3g} ns/sample"
        )
    procs, dask = figures["rows"][1], figures["rows"][2]
    before = figures["dask_before"]
    alpha_after = dask["alpha_s"] + dask["latency_s"]  # one message, start to arrival
    lines += [
        "Dask, 2 workers, beside 2 processes (α here: one message from start to arrival)",
        f"  {'':<34}{'α':>10}{'iteration':>12}{'÷ processes':>13}",
        f"  {'processes':<34}{(procs['alpha_s'] + procs['latency_s']) * 1e3:>7.3g} ms"
        f"{procs['measured_s'] * 1e3:>9.3g} ms{1.0:>13.2f}",
        f"  {'before: tasks through the scheduler':<34}{before['alpha_s'] * 1e3:>7.3g} ms"
        f"{before['iteration_s'] * 1e3:>9.3g} ms{before['iteration_s'] / procs['measured_s']:>13.2f}",
        f"  {'after: WorkerStore actors':<34}{alpha_after * 1e3:>7.3g} ms"
        f"{dask['measured_s'] * 1e3:>9.3g} ms{dask['measured_s'] / procs['measured_s']:>13.2f}",
        f"  targets: α ≤ {TARGET_ALPHA * 1e3:g} ms: {_yes(alpha_after <= TARGET_ALPHA)}; "
        f"iteration within {TARGET_DASK_OVER_PROCESSES:g}× of processes: "
        f"{_yes(dask['measured_s'] <= TARGET_DASK_OVER_PROCESSES * procs['measured_s'])}",
    ]
    ok = figures["sim_wall_s"] < TARGET_SIM_SECONDS
    lines.append(
        f"simulated {figures['sim_workers']} workers: {figures['sim_wall_s']:.2f} s of real time "
        f"(target < {TARGET_SIM_SECONDS:g} s: {_yes(ok)}), "
        f"{figures['sim_virtual_s_per_iter'] * 1e3:.3g} ms virtual per iteration"
    )
    before_load, after_load = figures["load_average"]
    lines.append(f"machine: {figures['cores']} cores, 1-minute load average {before_load:.1f} before "
                 f"and {after_load:.1f} after the real runs (above the core count, timings are disturbed)")
    return "\n".join(lines)
