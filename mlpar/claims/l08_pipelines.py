"""Lesson 08's claims: the calibrated simulator predicts a real pipeline, and pipelining pays.

Both come from a real staged run: a numpy MLP in 2 stages on 2 processes that pass activations
and gradients to each other (``mlpar.algorithms.pipeline.staged_mlp``). The notebook measures
its own run and hands the figures to ``prediction_claim`` and ``pipelining_claim``, so the text
and the check share one statement and one threshold.
"""

from __future__ import annotations

import contextlib

from mlpar.algorithms.pipeline import schedules, staged_mlp
from mlpar.core import claims, validation

PREDICTION_WITHIN = 1.3
PIPELINING_AT_LEAST = 1.3
CAUSE_BUSY = ("the stage processes share the cores with other programs, so they wait to be "
              "scheduled between operations: time the simulator does not know about")


def _two_devices() -> str:
    # The simulator gives each of the 2 stages a device of its own: here, a core each.
    reason = claims.precondition(cores=2)
    return reason + " (one core per pipeline stage)" if reason else ""


def _spread(spread) -> str:
    """' (k runs: lo–hi×)' for the per-repeat ratios, or '' for none."""
    if spread is None:
        return ""
    values = [float(v) for v in spread]
    if len(values) < 2 or not all(v > 0 for v in values):
        raise ValueError(f"spread: expected the ratios of at least 2 runs, got {spread!r}")
    return f"; {len(values)} interleaved runs, {min(values):.2f}–{max(values):.2f}×"


def prediction_claim(measured: float, predicted: float, spread=None) -> claims.Claim:
    """measured/predicted makespan within ``PREDICTION_WITHIN``× either way (of the fastest
    run; ``spread``: every run's measured/predicted, printed)."""
    ratio = claims.ratio(measured, predicted, names=("measured", "predicted"))
    off = None if ratio is None else max(ratio, 1 / ratio)
    return claims.check("08", "the calibrated simulator predicts the real 2-stage run's makespan "
                        "(larger of measured/predicted and its inverse" + _spread(spread) + ")", off,
                        at_most=PREDICTION_WITHIN, unit="×", cause=CAUSE_BUSY,
                        not_applicable=_two_devices())


def pipelining_claim(naive: float, pipelined: float, spread=None) -> claims.Claim:
    """Naive model parallelism (m=1) vs 8 micro-batches, same mini-batch: speedup ≥ threshold
    (fastest runs of each; ``spread``: each interleaved pair's ratio, printed)."""
    return claims.check("08", "8 micro-batches are faster than naive model parallelism (m=1) on 2 stages"
                        + (f" (fastest of each{_spread(spread)})" if spread is not None else ""),
                        claims.ratio(naive, pipelined, names=("naive", "pipelined")),
                        at_least=PIPELINING_AT_LEAST, unit="×",
                        cause="the slowest stage sets the pace: with unequal stage times (see the "
                              "timeline) the best possible gain is the sum of the stage times over the "
                              "slowest one's, below the ideal mp/(m+p-1); " + CAUSE_BUSY,
                        not_applicable=_two_devices())


@contextlib.contextmanager
def _warm_pipeline():
    """The lesson's 2-stage pipeline on 2 processes and its data, after one warm-up run (page
    in, first BLAS calls). Quick mode keeps these sizes: smaller operations would measure
    message overheads instead."""
    params, X, Y = staged_mlp.demo_problem(512, 4, 1024, seed=0)
    with staged_mlp.StagedPipeline(params, p=2) as pipe:
        pipe.run(X, Y, schedules.one_f_one_b(2, 8))
        yield pipe, X, Y


def measure(quick: bool = False) -> dict:
    """Real 2-stage runs, GPipe m=1 and 1F1B m=8, in turns, 5 times each (3 in quick mode).

    Each schedule keeps its fastest run: a program that takes a core for a moment then slows
    one run, not the comparison. The per-pair ratios are returned too, for the claim to print
    their spread.
    """
    quick = validation.flag("quick", quick)
    naive, piped = [], []
    with _warm_pipeline() as (pipe, X, Y):
        for _ in range(3 if quick else 5):
            naive.append(pipe.run(X, Y, schedules.gpipe(2, 1)).timeline.makespan)
            piped.append(pipe.run(X, Y, schedules.one_f_one_b(2, 8)).timeline.makespan)
    return {"naive": min(naive), "pipelined": min(piped),
            "gains": [a / b for a, b in zip(naive, piped, strict=True)]}


def simulator_predicts_the_staged_run(quick: bool = False) -> claims.Claim:
    """The 1F1B run's makespan over the simulator's prediction from that run's own durations and
    a link calibrated just before it, in rounds until the median is told apart from
    ``PREDICTION_WITHIN`` (``claims.measure_rounds``) instead of a fixed five."""
    quick = validation.flag("quick", quick)
    statement = "the calibrated simulator predicts the real 2-stage run's makespan, factor off " \
                "either way"
    reason = _two_devices()
    if reason:
        return claims.check("08", statement, None, at_most=PREDICTION_WITHIN, unit="×",
                            not_applicable=reason)
    with _warm_pipeline() as (pipe, X, Y):
        def one_round() -> float:
            link = pipe.calibrate_link(repeat=3)
            run = pipe.run(X, Y, schedules.one_f_one_b(2, 8))
            return run.timeline.makespan / staged_mlp.predict(run, link).makespan

        rounds = claims.measure_rounds(one_round, off_by_at_most=PREDICTION_WITHIN,
                                       max_rounds=9 if quick else 21, budget_s=15 if quick else 30)
    return claims.check_rounds("08", f"{statement}: measured/predicted {rounds.value:.2f}, the "
                               "median round", rounds, unit="×", cause=CAUSE_BUSY)


def pipelining_beats_naive_model_parallelism(quick: bool = False) -> claims.Claim:
    quick = validation.flag("quick", quick)
    f = measure(quick)
    return pipelining_claim(f["naive"], f["pipelined"], spread=f["gains"])


CLAIMS = (simulator_predicts_the_staged_run, pipelining_beats_naive_model_parallelism)
