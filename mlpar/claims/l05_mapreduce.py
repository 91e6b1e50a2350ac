"""Lesson 05's claims: a MapReduce round computes the serial gradient, and the calibrated cost
model predicts a round's time on local processes and on Dask within 1.3×."""

from __future__ import annotations

import numpy as np

from mlpar.algorithms.distributed import house_prices, least_squares, mapreduce
from mlpar.cluster.engines import DaskEngine, Engine, ProcessEngine, SimulatedEngine
from mlpar.core import claims, validation

MODEL_TOLERANCE = 1.3  # measured / predicted within this factor, either way
_BUSY = ("another program slowed the measured rounds and not the calibration a moment earlier, "
         "or the other way round (the spread of the rounds on the claim line shows how much the "
         "machine moved them: run it again at a quieter moment)")


def parallel_gradient_equals_serial(quick: bool = False):
    """Σᵢ over 7 shards of a MapReduce round, divided by n, equals (1/n)Xᵀ(Xw − y) to 1e-12."""
    quick = validation.flag("quick", quick)
    X, y = house_prices.load(20_000 if quick else 200_000)
    w = np.random.default_rng(0).normal(size=X.shape[1])
    eng = SimulatedEngine(7)
    g, _ = mapreduce.mapreduce_round(eng, mapreduce.place_shards(eng, X, y), w)
    serial = least_squares.gradient(X, y, w)
    gap = float(np.max(np.abs(g / len(y) - serial)) / np.max(np.abs(serial)))
    return claims.check("05", "MapReduce gradient on 7 shards vs the serial gradient (relative)",
                        gap, at_most=1e-12, cause="a broken BLAS or an unusual float mode")


def predict_on(engine, quick: bool = False, *, rounds: int = 5) -> mapreduce.Prediction:
    """Calibrate on ``engine`` and time MapReduce rounds on it, ``rounds`` times in turn.

    ``engine``: an open engine (kept open), or 'processes' / 'dask' for 2 new workers. Each
    round calibrates and then measures; the round of median measured/predicted counts, with the
    spread of all of them (``mapreduce.typical``).
    """
    quick = validation.flag("quick", quick)
    rounds = validation.positive_int("rounds", rounds, maximum=99)
    if isinstance(engine, str):
        validation.choice("engine", engine, ("processes", "dask"))
    elif not isinstance(engine, Engine):
        raise TypeError(f"engine: expected an open Engine, 'processes' or 'dask', got "
                        f"{type(engine).__name__}")
    X, y = house_prices.load(100_000 if quick else 400_000)
    # five rounds of these, so each is kept short: the median of rounds is what steadies it
    options = dict(n_iter=10 if quick else 20, repeat=7)
    if not isinstance(engine, str):
        return mapreduce.typical(mapreduce.measure_and_predict(engine, X, y, **options)
                                 for _ in range(rounds))
    make = ProcessEngine if engine == "processes" else DaskEngine
    with make(2) as eng:
        return mapreduce.typical(mapreduce.measure_and_predict(eng, X, y, **options)
                                 for _ in range(rounds))


def prediction_claim(prediction: mapreduce.Prediction):
    """The claim for one prediction: measured/predicted within ``MODEL_TOLERANCE`` either way.

    The model needs a core per worker; the server may share one of them (on 2 cores with 2
    workers the simulation folds the server onto a worker's core, ``SimulatedCluster``'s
    ``cores``). With fewer usable cores than workers the claim does not apply (it prints n/a
    with the figure, never a ✗ for a machine that cannot meet the model's assumption).
    """
    if not isinstance(prediction, mapreduce.Prediction):
        raise TypeError(f"prediction: expected a mapreduce.Prediction, got "
                        f"{type(prediction).__name__}")
    reason = claims.precondition(cores=prediction.n_workers)
    if reason:
        reason += (f" (one core per worker; here the {prediction.n_workers} workers would share "
                   "cores, which the model does not describe)")
    where = ("server sharing a worker's core" if prediction.server_shares_a_core else
             "server on a core of its own")
    spread = (f" (rounds: {prediction.spread[0]:.2f}–{prediction.spread[1]:.2f})"
              if prediction.spread else "")
    return claims.check(
        "05", f"calibrated model on {prediction.engine} ×{prediction.n_workers} ({where}), "
        f"measured/predicted = {prediction.ratio:.2f}{spread}; factor off either way",
        prediction.error, at_most=MODEL_TOLERANCE, unit="×", cause=likely_cause(prediction),
        not_applicable=reason)


def likely_cause(prediction: mapreduce.Prediction) -> str:
    """Why a prediction missed: noise, unless every round missed the same way.

    One round moved by another program says little; three rounds that all land beyond the
    tolerance on the same side are a steady error: of the model, or of a machine that stayed
    busy through all of them (``claims.machine_causes`` then names it, and so does this). The
    model's cause differs with the side: rounds faster than a model that folded the server onto
    a worker's core mean the operating system overlapped what the fold makes take turns; rounds
    slower than the model mean a cost the calibration (echoes, and compute, each timed apart)
    never saw.
    """
    if not isinstance(prediction, mapreduce.Prediction):
        raise TypeError(f"prediction: expected a mapreduce.Prediction, got "
                        f"{type(prediction).__name__}")
    if prediction.spread is None:
        return _BUSY
    low, high = prediction.spread
    if low <= MODEL_TOLERANCE and high >= 1 / MODEL_TOLERANCE:
        return _BUSY
    side = "slower" if low > MODEL_TOLERANCE else "faster"
    steady = (f"every round ran {side} than the model, a steady miss: either the machine stayed "
              "busy through all of them (see below), or the model misses something: "
              if claims.machine_causes() else
              f"every round ran {side} than the model, so this is the model, not noise: ")
    if side == "faster":
        if prediction.server_shares_a_core:
            return steady + ("with the server folded onto a worker's core the simulation lets "
                             "messages and compute only take turns (2m message times + C/m per "
                             "round), while the operating system runs the server on whichever "
                             "core is free and overlaps part of them")
        return steady + "the calibration overstated a cost (a message or the compute per sample)"
    crowd = (f" (here {prediction.n_workers} workers and the server on {prediction.cores} cores: "
             "the server's threads compete with the compute)"
             if prediction.server_shares_a_core else "")
    return steady + ("a cost the calibration never saw, since it times the echoes and the "
                     f"compute apart{crowd}")


def _model_in_rounds(engine: str, quick: bool):
    """Calibrate-and-measure rounds on 2 new workers until the median factor is told apart
    from ``MODEL_TOLERANCE`` (``claims.measure_rounds``); the claim line names the spread of
    the rounds' measured/predicted, and a miss names its likely cause as ``prediction_claim``
    does for the lesson's rounds."""
    quick = validation.flag("quick", quick)
    reason = claims.precondition(cores=2)
    if reason:
        return claims.check("05", f"calibrated model on {engine} ×2", None,
                            at_most=MODEL_TOLERANCE, unit="×", not_applicable=reason + (
                                " (one core per worker; here the 2 workers would share cores, "
                                "which the model does not describe)"))
    X, y = house_prices.load(100_000 if quick else 400_000)
    predictions = []
    make = ProcessEngine if engine == "processes" else DaskEngine
    with make(2) as eng:
        def one_round() -> float:
            predictions.append(mapreduce.measure_and_predict(eng, X, y, n_iter=10 if quick else 20,
                                                             repeat=7))
            return predictions[-1].ratio

        rounds = claims.measure_rounds(one_round, off_by_at_most=MODEL_TOLERANCE,
                                       max_rounds=9 if quick else 21, budget_s=20 if quick else 40)
    middle = mapreduce.typical(predictions)
    where = ("server sharing a worker's core" if middle.server_shares_a_core else
             "server on a core of its own")
    return claims.check_rounds(
        "05", f"calibrated model on {engine} ×{middle.n_workers} ({where}), factor off either "
        f"way: measured/predicted {rounds.value:.2f}, the median round",
        rounds, unit="×", cause=likely_cause(middle))


def model_predicts_processes(quick: bool = False):
    return _model_in_rounds("processes", quick)


def model_predicts_dask(quick: bool = False):
    return _model_in_rounds("dask", quick)


CLAIMS = (parallel_gradient_equals_serial, model_predicts_processes, model_predicts_dask)
