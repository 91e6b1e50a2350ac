"""Benchmark: MapReduce gradient descent on real engines beside the calibrated model.

    python -m mlpar.bench distributed          (or: make bench FAMILY=distributed)

From one run: the measured time per iteration on 1 and 2 local processes and on a Dask
LocalCluster with 2 workers; for each, the prediction of a ``CostModel`` calibrated on that
same engine (α, β from echo round trips, compute from a local timing: the gradient task itself
is never timed through the engine, so this is a prediction, not a fit) and the ratio measured /
predicted (target: within 2×); and the real time the simulator needs for a 256-worker run
(target: under 5 s).
"""

from __future__ import annotations

import os
import time

from .. import environment, house_prices, mapreduce
from ..cost_model import CostModel
from ..engines import DaskEngine, ProcessEngine

TARGET_RATIO = 2.0
TARGET_SIM_SECONDS = 5.0


def run(quick: bool = False) -> dict:
    n_samples = 100_000 if quick else 400_000
    n_iter = 10 if quick else 30
    X, y = house_prices.load(n_samples)
    load_before = os.getloadavg()[0]  # other programs on the machine move these timings
    rows = []
    for label, make in (
        ("processes", lambda: ProcessEngine(1)),
        ("processes", lambda: ProcessEngine(2)),
        ("dask", lambda: DaskEngine(2)),
    ):
        with make() as eng:
            p = mapreduce.measure_and_predict(eng, X, y, n_iter=n_iter, repeat=3 if quick else 7)
        rows.append({
            "engine": label, "workers": p.n_workers, "measured_s": p.measured,
            "predicted_s": p.predicted, "ratio": p.ratio, "alpha_s": p.cost.alpha,
            "beta_s_per_byte": p.cost.beta, "per_sample_s": p.cost.per_sample,
        })
    load_after = os.getloadavg()[0]
    # The simulator at scale, priced by the processes calibration plus a straggler and noise.
    base = rows[1]
    cost = CostModel(alpha=base["alpha_s"], beta=base["beta_s_per_byte"],
                     per_sample=base["per_sample_s"], straggler=0, slowdown=4.0, jitter=0.2)
    start = time.perf_counter()
    sim = mapreduce.gradient_descent(X, y, n_workers=256, n_iter=n_iter, cost=cost)
    sim_wall = time.perf_counter() - start
    return {
        "n_samples": n_samples, "n_iter": n_iter, "rows": rows,
        "sim_workers": 256, "sim_wall_s": sim_wall, "sim_virtual_s_per_iter": sim.time_per_iteration,
        "load_average": [load_before, load_after], "cores": environment.usable_cores(),
    }


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
            f"{r['predicted_s'] * 1e3:>9.3g} ms{r['ratio']:>8.2f}  {'yes' if ok else 'NO'}"
        )
    for r in figures["rows"]:
        lines.append(
            f"  calibrated on {r['engine']} ×{r['workers']}: α = {r['alpha_s'] * 1e6:.3g} µs, "
            f"β = {r['beta_s_per_byte'] * 1e9:.3g} ns/B, "
            f"compute = {r['per_sample_s'] * 1e9:.3g} ns/sample"
        )
    ok = figures["sim_wall_s"] < TARGET_SIM_SECONDS
    lines.append(
        f"simulated {figures['sim_workers']} workers: {figures['sim_wall_s']:.2f} s of real time "
        f"(target < {TARGET_SIM_SECONDS:g} s: {'yes' if ok else 'NO'}), "
        f"{figures['sim_virtual_s_per_iter'] * 1e3:.3g} ms virtual per iteration"
    )
    before, after = figures["load_average"]
    lines.append(f"machine: {figures['cores']} cores, 1-minute load average {before:.1f} before and "
                 f"{after:.1f} after the real runs (above the core count, timings are disturbed)")
    return "\n".join(lines)
