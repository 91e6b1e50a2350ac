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


def _rounds(quick: bool, rounds: int | None = None) -> list[dict]:
    """Rounds of one serial, one locked and one lock-free run each, back to back.

    A run lasts tens of milliseconds, and a moment when the host takes a core away halves a
    2-thread run and leaves a 1-thread run alone. Comparing runs of the same round, and taking
    the median over rounds, lets such a moment spoil one round instead of the verdict.
    """
    quick = validation.flag("quick", quick)
    problem = _problem(quick)
    epochs, default = (3, 5) if quick else (5, 9)
    rounds = default if rounds is None else rounds
    return [{variant: run_sgd(problem, variant, threads=threads, step=STEP, epochs=epochs, seed=0)
             for variant, threads in (("serial", 1), ("locked", 2), ("lock-free", 2))}
            for _ in range(rounds)]


def _paired(rounds: list[dict], fast: str, slow: str) -> tuple[float, str]:
    """Median over rounds of ``fast``'s updates/s ÷ ``slow``'s, and the spread to print."""
    ratios = [r[fast].updates_per_second / r[slow].updates_per_second for r in rounds]
    return float(np.median(ratios)), (f" (median of {len(ratios)} interleaved rounds: "
                                      f"{min(ratios):.2f}–{max(ratios):.2f}×)")


def _lesson_runs(runs, *wanted) -> dict:
    """The lesson's table as {variant: run}, refusing a table without the ``wanted`` runs."""
    found = {(getattr(r, "variant", None), getattr(r, "threads", None)): r for r in runs}
    missing = [w for w in wanted if w not in found]
    if missing:
        named = " and ".join(f"{variant} {threads}-thread" for variant, threads in wanted)
        raise ValueError(f"runs: expected SGDRun results including the {named} runs, got "
                         f"{sorted(k for k in found if k[0])}")
    return {variant: found[variant, threads] for variant, threads in wanted}


def lock_free_beats_locked(quick: bool = False, *, runs=None):
    """On 2 threads, lock-free updates go >= 1.5× faster than updates under a spin lock.

    ``runs``: the lesson's own ``SGDRun`` results; the claim then reads the locked and
    lock-free 2-thread runs of the table the lesson shows instead of measuring again.
    """
    quick = validation.flag("quick", quick)
    table = None if runs is None else _lesson_runs(runs, ("locked", 2), ("lock-free", 2))
    statement = "updates/s on 2 threads, lock-free ÷ locked"
    reason = claims.precondition(cores=2)  # one core runs the threads in turn: nothing to gain
    if reason:
        return claims.check("04", statement, float("nan"), at_least=1.5, unit="×",
                            not_applicable=reason)
    if table is not None:
        ratio, spread = table["lock-free"].updates_per_second / table["locked"].updates_per_second, ""
    else:
        ratio, spread = _paired(_rounds(quick), "lock-free", "locked")
    return claims.check("04", statement + spread, ratio, at_least=1.5, unit="×", cause=BUSY)


def lock_free_beats_serial(quick: bool = False, *, runs=None):
    """On 2 threads, lock-free updates go >= 1.3× faster than serial SGD on one thread.

    The stronger comparison: beating a lock that serialises every update is easy, beating the
    one-thread loop that has no lock at all is what the threads are for. ``runs``: as for
    ``lock_free_beats_locked``; the serial run and the lock-free 2-thread run of the lesson's
    table are read.
    """
    quick = validation.flag("quick", quick)
    table = None if runs is None else _lesson_runs(runs, ("serial", 1), ("lock-free", 2))
    statement = "updates/s, lock-free on 2 threads ÷ serial on 1"
    reason = claims.precondition(cores=2)
    if reason:
        return claims.check("04", statement, float("nan"), at_least=1.3, unit="×",
                            not_applicable=reason)
    if table is not None:
        ratio, spread = table["lock-free"].updates_per_second / table["serial"].updates_per_second, ""
    else:
        ratio, spread = _paired(_rounds(quick), "lock-free", "serial")
    return claims.check("04", statement + spread, ratio, at_least=1.3, unit="×",
                        cause=BUSY + "; or the two threads' writes keep moving shared cache lines "
                              "between the cores")


def all_variants_reach_the_same_loss(quick: bool = False):
    """Serial, locked and lock-free SGD end within 1% of each other's final loss."""
    quick = validation.flag("quick", quick)
    losses = np.array([r.final_loss for r in _rounds(quick, rounds=1)[0].values()])
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
