"""Lesson 04's claims: lock-free SGD outruns locked SGD and serial SGD and reaches the same
loss; races grow with density (Niu, Recht, Ré and Wright, Hogwild!, 2011)."""

from __future__ import annotations

import numpy as np

from mlpar.algorithms.sgd.conflicts import MIN_CONCURRENT_WRITES, conflict_sweep
from mlpar.algorithms.sgd.hogwild import run_sgd
from mlpar.algorithms.sgd.sparse_data import make_sparse_problem
from mlpar.core import claims, validation

BUSY = "another program is using the cores, or this process may use only one"
STEP = 1.0


def _problem(quick: bool):
    # about 10 nonzeros per sample either way
    quick = validation.flag("quick", quick)
    return (make_sparse_problem(20_000, 5_000, 0.002, seed=0) if quick
            else make_sparse_problem(50_000, 10_000, 0.001, seed=0))


def _runs(quick: bool) -> dict:
    quick = validation.flag("quick", quick)
    problem = _problem(quick)
    # Quick runs last tens of milliseconds: the best of 5 alternating runs, so that a moment
    # when the host takes a core away spoils one run of each variant, not the comparison.
    epochs, repeat = (3, 5) if quick else (5, 3)
    runs = {"serial": [run_sgd(problem, "serial", step=STEP, epochs=epochs, seed=0)]}
    for _ in range(repeat):  # alternate the variants so load from elsewhere hits both alike
        for variant in ("locked", "lock-free"):
            runs.setdefault(variant, []).append(
                run_sgd(problem, variant, threads=2, step=STEP, epochs=epochs, seed=0))
    return {k: max(rs, key=lambda r: r.updates_per_second) for k, rs in runs.items()}


def lock_free_beats_locked(quick: bool = False, *, runs=None):
    """On 2 threads, lock-free updates go >= 1.5× faster than updates under a spin lock.

    ``runs``: the lesson's own ``SGDRun`` results; the claim then reads the locked and
    lock-free 2-thread runs of the table the lesson shows instead of measuring again.
    """
    quick = validation.flag("quick", quick)
    if runs is not None:
        found = {(getattr(r, "variant", None), getattr(r, "threads", None)): r for r in runs}
        if ("locked", 2) not in found or ("lock-free", 2) not in found:
            raise ValueError("runs: expected SGDRun results including the locked and lock-free "
                             f"2-thread runs, got {sorted(k for k in found if k[0])}")
    statement = "updates/s on 2 threads, lock-free ÷ locked"
    reason = claims.precondition(cores=2)  # one core runs the threads in turn: nothing to gain
    if reason:
        return claims.check("04", statement, float("nan"), at_least=1.5, unit="×",
                            not_applicable=reason)
    if runs is not None:
        best = {"locked": found["locked", 2], "lock-free": found["lock-free", 2]}
    else:
        best = _runs(quick)
    ratio = best["lock-free"].updates_per_second / best["locked"].updates_per_second
    return claims.check("04", statement, ratio, at_least=1.5, unit="×", cause=BUSY)


def lock_free_beats_serial(quick: bool = False, *, runs=None):
    """On 2 threads, lock-free updates go >= 1.3× faster than serial SGD on one thread.

    The stronger comparison: beating a lock that serialises every update is easy, beating the
    one-thread loop that has no lock at all is what the threads are for. ``runs``: as for
    ``lock_free_beats_locked``; the serial run and the lock-free 2-thread run of the lesson's
    table are read.
    """
    quick = validation.flag("quick", quick)
    if runs is not None:
        found = {(getattr(r, "variant", None), getattr(r, "threads", None)): r for r in runs}
        if ("serial", 1) not in found or ("lock-free", 2) not in found:
            raise ValueError("runs: expected SGDRun results including the serial run and the "
                             f"lock-free 2-thread run, got {sorted(k for k in found if k[0])}")
    statement = "updates/s, lock-free on 2 threads ÷ serial on 1"
    reason = claims.precondition(cores=2)
    if reason:
        return claims.check("04", statement, float("nan"), at_least=1.3, unit="×",
                            not_applicable=reason)
    if runs is not None:
        best = {"serial": found["serial", 1], "lock-free": found["lock-free", 2]}
    else:
        best = _runs(quick)
    ratio = best["lock-free"].updates_per_second / best["serial"].updates_per_second
    return claims.check("04", statement, ratio, at_least=1.3, unit="×",
                        cause=BUSY + "; or the two threads' writes keep moving shared cache lines "
                              "between the cores")


def all_variants_reach_the_same_loss(quick: bool = False):
    """Serial, locked and lock-free SGD end within 1% of each other's final loss."""
    quick = validation.flag("quick", quick)
    best = _runs(quick)
    losses = np.array([r.final_loss for r in best.values()])
    spread = float((losses.max() - losses.min()) / losses.min())
    return claims.check("04", "final-loss spread over serial, locked, lock-free", 100 * spread,
                        at_most=1.0, unit="%",
                        cause="a dense problem (races change the updates) or too large a step")


def races_grow_with_density(quick: bool = False):
    """At a fixed time per update, stale reads per concurrent write grow >= 5× from density
    0.01 to 0.3 (the other thread writes a larger share of the coordinates meanwhile)."""
    quick = validation.flag("quick", quick)
    statement = "stale reads per concurrent write, density 0.3 ÷ 0.01"
    reason = claims.precondition(cores=2)  # races need two threads running at the same moment
    if reason:
        return claims.check("04", statement, float("nan"), at_least=5, unit="×",
                            not_applicable=reason)
    sweep = conflict_sweep([0.01, 0.3], epochs=2 if quick else 5, seed=0)
    low, high = sweep.counts
    if min(low.concurrent_writes, high.concurrent_writes) < MIN_CONCURRENT_WRITES:
        value = float("nan")  # the threads hardly ran together: nothing was measured
    else:
        value = high.stale_rate_concurrent / max(low.stale_rate_concurrent, 1e-12)
    return claims.check("04", statement, value,
                        at_least=5, unit="×",
                        cause="the two threads seldom ran at the same moment (" + BUSY + ")")


CLAIMS = (lock_free_beats_locked, lock_free_beats_serial, all_variants_reach_the_same_loss,
          races_grow_with_density)
