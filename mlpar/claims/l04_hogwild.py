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
#: What each speed claim needs: (faster variant, slower variant) -> ratio of updates/s.
THRESHOLD = {("lock-free", "locked"): 1.5, ("lock-free", "serial"): 1.3}


def _problem(quick: bool):
    # About 10 nonzeros per sample either way. The full problem's w spans 12,500 cache lines,
    # so the two threads seldom write the same line at the same moment: the sparse regime
    # Hogwild is for. With 10,000 features (1,250 lines) the threads keep writing lines the
    # other core holds, and each such write moves the line between the cores.
    quick = validation.flag("quick", quick)
    return (make_sparse_problem(20_000, 5_000, 0.002, seed=0) if quick
            else make_sparse_problem(100_000, 100_000, 0.0001, seed=0))


def _one_of_each(quick: bool) -> dict:
    """One serial, one locked and one lock-free run, back to back: {variant: SGDRun}."""
    quick = validation.flag("quick", quick)
    problem = _problem(quick)
    epochs = 3 if quick else 5
    return {variant: run_sgd(problem, variant, threads=threads, step=STEP, epochs=epochs, seed=0)
            for variant, threads in (("serial", 1), ("locked", 2), ("lock-free", 2))}


def _measured(quick: bool, fast: str, slow: str) -> claims.Rounds:
    """``fast``'s updates/s ÷ ``slow``'s, each round's two runs back to back, in as many rounds
    as the verdict needs (``claims.measure_rounds``).

    A run lasts tens of milliseconds, and a moment when the host takes a core away halves a
    2-thread run and leaves a 1-thread run alone: comparing the runs of one round, and taking
    the median over rounds, lets such a moment spoil one round instead of the verdict.
    """
    problem = _problem(quick)
    epochs = 3 if quick else 5
    threads = {"serial": 1, "locked": 2, "lock-free": 2}

    order = [(slow, fast)]

    def one_round() -> float:
        rate = {v: run_sgd(problem, v, threads=threads[v], step=STEP, epochs=epochs,
                           seed=0).updates_per_second for v in order[-1]}
        order.append(order[-1][::-1])  # the next round runs them the other way round
        return rate[fast] / rate[slow]

    return claims.measure_rounds(one_round, at_least=THRESHOLD[fast, slow],
                                 max_rounds=9 if quick else 31, budget_s=10 if quick else 30)


def _lesson_runs(runs, *wanted) -> dict:
    """The lesson's table as {variant: run}, refusing a table without the ``wanted`` runs."""
    found = {(getattr(r, "variant", None), getattr(r, "threads", None)): r for r in runs}
    missing = [w for w in wanted if w not in found]
    if missing:
        named = " and ".join(f"{variant} {threads}-thread" for variant, threads in wanted)
        raise ValueError(f"runs: expected SGDRun results including the {named} runs, got "
                         f"{sorted(k for k in found if k[0])}")
    return {variant: found[variant, threads] for variant, threads in wanted}


def _speed_claim(quick: bool, runs, fast: str, slow: str, statement: str, cause: str):
    quick = validation.flag("quick", quick)
    slow_threads = 1 if slow == "serial" else 2
    table = None if runs is None else _lesson_runs(runs, (slow, slow_threads), (fast, 2))
    threshold = THRESHOLD[fast, slow]
    reason = claims.precondition(cores=2)  # one core runs the threads in turn: nothing to gain
    if reason:
        return claims.check("04", statement, None, at_least=threshold, unit="×",
                            not_applicable=reason)
    if table is None:
        return claims.check_rounds("04", statement, _measured(quick, fast, slow), unit="×",
                                   cause=cause)
    ratio = table[fast].updates_per_second / table[slow].updates_per_second
    return claims.check("04", statement, ratio, at_least=threshold, unit="×", cause=cause)


def lock_free_beats_locked(quick: bool = False, *, runs=None):
    """On 2 threads, lock-free updates go >= 1.5× faster than updates under a spin lock.

    ``runs``: the lesson's own ``SGDRun`` results; the claim then reads the locked and
    lock-free 2-thread runs of the table the lesson shows instead of measuring again.
    """
    return _speed_claim(quick, runs, "lock-free", "locked",
                        "updates/s on 2 threads, lock-free ÷ locked", BUSY)


def lock_free_beats_serial(quick: bool = False, *, runs=None):
    """On 2 threads, lock-free updates go >= 1.3× faster than serial SGD on one thread.

    The stronger comparison: beating a lock that serialises every update is easy, beating the
    one-thread loop that has no lock at all is what the threads are for. ``runs``: as for
    ``lock_free_beats_locked``; the serial run and the lock-free 2-thread run of the lesson's
    table are read.
    """
    return _speed_claim(quick, runs, "lock-free", "serial",
                        "updates/s, lock-free on 2 threads ÷ serial on 1",
                        BUSY + "; or the two threads' writes keep moving shared cache lines "
                               "between the cores")


def all_variants_reach_the_same_loss(quick: bool = False):
    """Serial, locked and lock-free SGD end within 1% of each other's final loss."""
    quick = validation.flag("quick", quick)
    losses = np.array([r.final_loss for r in _one_of_each(quick).values()])
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
