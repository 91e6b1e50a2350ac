"""Benchmark: a real staged pipeline beside the calibrated simulator, and the simulator's speed.

    python -m mlpar.bench pipeline          (or: make bench FAMILY=pipeline; --quick for less)

From one run: a numpy MLP of 4 square layers split into p = 2 and 4 stages on p processes that
send each other activations and gradients; GPipe and 1F1B orders with m = 1, 4, 16 micro-
batches of one mini-batch. For each, the measured makespan, the simulator's prediction from
that run's median stage durations and the link α + β·bytes calibrated on the same processes
(``cost_model.measure_messages``), and their ratio (target: within 1.3×; with more stages than
cores the processes take turns and the simulator, which gives each device its own core,
predicts too little). Then the real time the simulator needs for p = 64, m = 512 (target < 1 s).
"""

from __future__ import annotations

import os
import time

from mlpar.algorithms.pipeline import schedules, simulator, staged_mlp
from mlpar.core import environment, validation

TARGET_RATIO = 1.3
TARGET_SIM_SECONDS = 1.0


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    width, rows = (128, 256) if quick else (512, 1024)
    stage_counts, micro_counts = ((2,), (1, 4)) if quick else ((2, 4), (1, 4, 16))
    params, X, Y = staged_mlp.demo_problem(width, 4, rows, seed=0)
    load_before = os.getloadavg()[0]
    rows_out, links = [], {}
    for p in stage_counts:
        with staged_mlp.StagedPipeline(params, p=p) as pipe:
            link = pipe.calibrate_link(repeat=3 if quick else 7)
            links[p] = {"alpha_s": link.alpha, "beta_s_per_byte": link.beta}
            pipe.run(X, Y, schedules.one_f_one_b(p, 4))  # warm-up
            for m in micro_counts:
                for name in ("gpipe", "1f1b"):
                    real = pipe.run(X, Y, schedules.make(name, p, m))
                    predicted = staged_mlp.predict(real, link).makespan
                    rows_out.append({"p": p, "m": m, "schedule": name,
                                     "measured_s": real.timeline.makespan, "predicted_s": predicted,
                                     "ratio": real.timeline.makespan / predicted})
    load_after = os.getloadavg()[0]
    big = schedules.one_f_one_b(64, 512)
    start = time.perf_counter()
    simulator.simulate(big)
    sim_wall = time.perf_counter() - start
    return {"width": width, "rows": rows, "rows_out": rows_out, "links": links,
            "sim_wall_s": sim_wall, "load_average": [load_before, load_after],
            "cores": environment.usable_cores()}


def report(figures: dict) -> str:
    lines = [f"staged MLP, 4 layers of {figures['width']}, mini-batch of {figures['rows']} rows",
             f"{'p':>3}{'m':>4} {'schedule':<8}{'measured':>11}{'predicted':>11}{'ratio':>7}"
             f"  within {TARGET_RATIO:g}×"]
    for r in figures["rows_out"]:
        ok = 1 / TARGET_RATIO <= r["ratio"] <= TARGET_RATIO
        lines.append(f"{r['p']:>3}{r['m']:>4} {r['schedule']:<8}{r['measured_s'] * 1e3:>8.1f} ms"
                     f"{r['predicted_s'] * 1e3:>8.1f} ms{r['ratio']:>7.2f}  {'yes' if ok else 'NO'}")
    for p, link in figures["links"].items():
        lines.append(f"  link calibrated with {p} stages: α = {link['alpha_s'] * 1e6:.3g} µs, "
                     f"β = {link['beta_s_per_byte'] * 1e9:.3g} ns/B")
    ok = figures["sim_wall_s"] < TARGET_SIM_SECONDS
    lines.append(f"simulator, p=64, m=512 (65536 ops): {figures['sim_wall_s']:.3f} s "
                 f"(target < {TARGET_SIM_SECONDS:g} s: {'yes' if ok else 'NO'})")
    lines.append(f"load average {figures['load_average'][0]:.1f} → {figures['load_average'][1]:.1f} "
                 f"on {figures['cores']} usable cores (above the core count, expect ratios > 1)")
    return "\n".join(lines)
