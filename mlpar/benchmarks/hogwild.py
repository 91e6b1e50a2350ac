"""Lock-free (Hogwild) against locked parallel SGD on a sparse problem, both at 2 threads,
with atomic (compare-and-swap) per-coordinate updates between them.

Targets: lock-free ÷ locked update throughput >= 1.5x; final losses within 2% of each
other (and of the serial run). Throughput is the best of ``repeats`` runs of each variant,
so a run disturbed by other processes does not decide the ratio; losses come from the
same runs. Run with ``python -m mlpar.bench hogwild``.
"""

from __future__ import annotations

from mlpar.algorithms.sgd.conflicts import count_conflicts
from mlpar.algorithms.sgd.hogwild import run_sgd
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem, sparsity
from mlpar.core import validation


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    n_samples, n_features = (20_000, 5_000) if quick else (100_000, 20_000)
    density = 0.001 if not quick else 0.004  # about 20 nonzeros per sample either way
    epochs, repeats = (3, 2) if quick else (5, 3)
    problem = make_sparse_problem(n_samples, n_features, density, seed=0)
    measures = sparsity(problem)
    kwargs = {"step": 1.0, "epochs": epochs, "seed": 0}
    runs = {"serial": [run_sgd(problem, "serial", **kwargs) for _ in range(repeats)]}
    for variant in ("locked", "atomic", "lock-free"):
        runs[variant] = [run_sgd(problem, variant, threads=2, **kwargs) for _ in range(repeats)]
    best = {k: max(rs, key=lambda r: r.updates_per_second) for k, rs in runs.items()}
    conflicts = count_conflicts(problem, threads=2, epochs=1, seed=0)
    loss = {k: r.final_loss for k, r in best.items()}
    return {
        "n_samples": n_samples,
        "n_features": n_features,
        "density": density,
        "epochs": epochs,
        "omega": measures.omega,
        "delta": measures.delta,
        "rho": measures.rho,
        "updates_per_second": {k: r.updates_per_second for k, r in best.items()},
        "final_loss": loss,
        "lock_free_over_locked": (
            best["lock-free"].updates_per_second / best["locked"].updates_per_second
        ),
        "lock_free_over_serial": (
            best["lock-free"].updates_per_second / best["serial"].updates_per_second
        ),
        "loss_difference_vs_locked": abs(loss["lock-free"] - loss["locked"]) / loss["locked"],
        "loss_difference_vs_serial": abs(loss["lock-free"] - loss["serial"]) / loss["serial"],
        "lock_waits_locked": best["locked"].lock_waits,
        "cas_retries_atomic": best["atomic"].cas_retries,
        "atomic_over_locked": (
            best["atomic"].updates_per_second / best["locked"].updates_per_second
        ),
        "stale_rate_2_threads": conflicts.stale_rate,
        "lost_rate_2_threads": conflicts.lost_rate,
    }


def report(f: dict) -> str:
    lines = [
        f"problem: {f['n_samples']:,} samples x {f['n_features']:,} features, density "
        f"{f['density']:g}; Ω = {f['omega']}, Δ = {f['delta']:.3g}, ρ = {f['rho']:.3g}; "
        f"{f['epochs']} epochs",
        f"{'variant':<22}{'updates/s':>12}{'final loss':>12}",
    ]
    names = {"serial": "serial, 1 thread", "locked": "locked, 2 threads",
             "atomic": "atomic, 2 threads", "lock-free": "lock-free, 2 threads"}
    for key, label in names.items():
        lines.append(
            f"{label:<22}{f['updates_per_second'][key]:>12.3g}{f['final_loss'][key]:>12.6f}"
        )
    lines.append(
        f"lock-free / locked throughput at 2 threads: {f['lock_free_over_locked']:.2f}x "
        "(target >= 1.5x)"
    )
    lines.append(f"lock-free (2 threads) / serial throughput: {f['lock_free_over_serial']:.2f}x")
    lines.append(f"atomic / locked throughput at 2 threads: {f['atomic_over_locked']:.2f}x; "
                 f"compare-and-swaps retried: {f['cas_retries_atomic']:,}")
    lines.append(
        f"final-loss difference lock-free vs locked: {f['loss_difference_vs_locked']:.3%} "
        f"(target <= 2%); vs serial: {f['loss_difference_vs_serial']:.3%}"
    )
    lines.append(
        f"2-thread lock-free conflicts per coordinate write: stale reads "
        f"{f['stale_rate_2_threads']:.3g}, lost updates {f['lost_rate_2_threads']:.3g}; "
        f"spins waiting for the lock: {f['lock_waits_locked']:,}"
    )
    return "\n".join(lines)
