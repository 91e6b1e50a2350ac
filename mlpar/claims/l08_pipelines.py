"""Lesson 08's claims: the calibrated simulator predicts a real pipeline, and pipelining pays.

Both come from a real staged run: a numpy MLP in 2 stages on 2 processes that pass activations
and gradients to each other (``mlpar.algorithms.pipeline.staged_mlp``). The notebook measures
its own run and hands the figures to ``prediction_claim`` and ``pipelining_claim``, so the text
and the check share one statement and one threshold.
"""

from __future__ import annotations

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


def prediction_claim(measured: float, predicted: float) -> claims.Claim:
    """measured/predicted makespan within ``PREDICTION_WITHIN``× either way."""
    ratio = claims.ratio(measured, predicted, names=("measured", "predicted"))
    off = None if ratio is None else max(ratio, 1 / ratio)
    return claims.check("08", "the calibrated simulator predicts the real 2-stage run's makespan "
                        "(larger of measured/predicted and its inverse)", off,
                        at_most=PREDICTION_WITHIN, unit="×", cause=CAUSE_BUSY,
                        not_applicable=_two_devices())


def pipelining_claim(naive: float, pipelined: float) -> claims.Claim:
    """Naive model parallelism (m=1) vs 8 micro-batches, same mini-batch: speedup ≥ threshold."""
    return claims.check("08", "8 micro-batches are faster than naive model parallelism (m=1) on 2 stages",
                        claims.ratio(naive, pipelined, names=("naive", "pipelined")),
                        at_least=PIPELINING_AT_LEAST, unit="×",
                        cause="the slowest stage sets the pace: with unequal stage times (see the "
                              "timeline) the best possible gain is the sum of the stage times over the "
                              "slowest one's, below the ideal mp/(m+p-1); " + CAUSE_BUSY,
                        not_applicable=_two_devices())


def measure(quick: bool = False) -> dict:
    """Real 2-stage runs (GPipe m=1, 1F1B m=8) and the simulator's prediction from their durations.

    The two schedules run in turns, 3 times each (2 in quick mode), and each keeps its fastest
    run: a program that takes a core for a moment then slows one run, not the comparison.
    """
    quick = validation.flag("quick", quick)
    # Quick mode keeps the sizes: smaller operations would measure message overheads instead.
    params, X, Y = staged_mlp.demo_problem(512, 4, 1024, seed=0)
    naive, piped = [], []
    with staged_mlp.StagedPipeline(params, p=2) as pipe:
        link = pipe.calibrate_link(repeat=3 if quick else 7)
        pipe.run(X, Y, schedules.one_f_one_b(2, 8))  # warm-up: page in, first BLAS calls
        for _ in range(2 if quick else 3):
            naive.append(pipe.run(X, Y, schedules.gpipe(2, 1)))
            piped.append(pipe.run(X, Y, schedules.one_f_one_b(2, 8)))
    naive = min(naive, key=lambda r: r.timeline.makespan)
    piped = min(piped, key=lambda r: r.timeline.makespan)
    return {"naive": naive.timeline.makespan, "pipelined": piped.timeline.makespan,
            "predicted": staged_mlp.predict(piped, link).makespan}


def simulator_predicts_the_staged_run(quick: bool = False) -> claims.Claim:
    quick = validation.flag("quick", quick)
    f = measure(quick)
    return prediction_claim(f["pipelined"], f["predicted"])


def pipelining_beats_naive_model_parallelism(quick: bool = False) -> claims.Claim:
    quick = validation.flag("quick", quick)
    f = measure(quick)
    return pipelining_claim(f["naive"], f["pipelined"])


CLAIMS = (simulator_predicts_the_staged_run, pipelining_beats_naive_model_parallelism)
