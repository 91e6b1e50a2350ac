"""Lessons 05 and 06: the cost-model claims are measured on 2 cores (the server shares a
worker's core in the simulation), say n/a only with fewer cores than workers, judge the middle
of several rounds and print their spread, and fail on a table that violates them."""

import pytest

from mlpar.algorithms.distributed import mapreduce
from mlpar.claims import l05_mapreduce as c05
from mlpar.claims import l06_parameter_server as c06
from mlpar.cluster.cost_model import CostModel
from mlpar.core import environment


def prediction(ratio, n_workers=2, cores=None):
    return mapreduce.Prediction("processes", n_workers, ratio * 1e-3, 1e-3, CostModel(),
                                cores=cores)


@pytest.mark.parametrize("cores, ratio, held", [(1, 1.0, None), (2, 1.59, False), (2, 1.0, True),
                                                (2, 0.7, False), (3, 1.1, True), (16, 0.7, False)])
def test_05_prediction_is_judged_wherever_each_worker_has_a_core(monkeypatch, cores, ratio, held):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, f"cores={cores}")
    claim = c05.prediction_claim(prediction(ratio, cores=cores))
    assert claim.held is held
    text = repr(claim)
    assert f"{ratio:.2f}" in text  # the figure is shown either way
    if held is None:
        assert text.startswith("n/a") and "2 usable cores" in text
    else:
        where = "sharing a worker's core" if cores < 3 else "a core of its own"
        assert where in text


def test_05_prediction_claim_refuses_something_else():
    with pytest.raises(TypeError, match="prediction: expected a mapreduce.Prediction"):
        c05.prediction_claim(1.5)
    with pytest.raises(TypeError, match="prediction: expected a mapreduce.Prediction"):
        c05.likely_cause(None)


def test_the_middle_round_is_judged_and_the_spread_printed(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    rounds = [prediction(r, cores=2) for r in (1.9, 1.1, 0.95)]
    middle = mapreduce.typical(rounds)
    assert middle.ratio == pytest.approx(1.1) and middle.spread == pytest.approx((0.95, 1.9))
    text = repr(c05.prediction_claim(middle))
    assert text.startswith("✓") and "rounds: 0.95–1.90" in text
    # a violating table: every round far off, the middle one too
    bad = mapreduce.typical([prediction(r, cores=2) for r in (1.5, 1.8, 2.2)])
    assert c05.prediction_claim(bad).held is False
    with pytest.raises(TypeError, match="predictions"):
        mapreduce.typical([])
    with pytest.raises(TypeError, match="predictions"):
        mapreduce.typical([1.0])


def test_05_a_steady_miss_blames_the_model_and_a_scattered_one_the_machine(monkeypatch):
    from mlpar.core import claims

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(claims, "machine_causes", lambda: "")  # a quiet machine
    slow = mapreduce.typical([prediction(r, cores=2) for r in (1.4, 1.5, 1.6)])
    fast = mapreduce.typical([prediction(r, cores=2) for r in (0.6, 0.65, 0.7)])
    fast_free = mapreduce.typical([prediction(r, cores=3) for r in (0.6, 0.65, 0.7)])
    scattered = mapreduce.typical([prediction(r, cores=2) for r in (0.9, 1.5, 2.0)])
    texts = {name: repr(c05.prediction_claim(p)) for name, p in
             (("slow", slow), ("fast", fast), ("fast_free", fast_free), ("scattered", scattered))}
    assert all(t.startswith("✗") for t in texts.values())
    assert "slower than the model" in texts["slow"] and "compute apart" in texts["slow"]
    assert "2 workers and the server on 2 cores" in texts["slow"]
    assert "faster than the model" in texts["fast"] and "whichever core is free" in texts["fast"]
    assert "faster than the model" in texts["fast_free"]
    assert "whichever core" not in texts["fast_free"]  # no fold to blame with a core to spare
    for name in ("slow", "fast", "fast_free"):
        assert "not noise" in texts[name] and "quieter moment" not in texts[name]
    assert "quieter moment" in texts["scattered"] and "not noise" not in texts["scattered"]
    # one round alone cannot tell the model from the machine
    assert "quieter moment" in repr(c05.prediction_claim(prediction(1.6, cores=2)))


def test_05_a_steady_miss_on_a_busy_machine_names_both(monkeypatch):
    from mlpar.core import claims

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(claims, "machine_causes", lambda: "the machine is busy (load 9)")
    text = repr(c05.prediction_claim(mapreduce.typical(
        [prediction(r, cores=2) for r in (1.6, 1.8, 2.0)])))
    assert "busy through all of them" in text and "not noise" not in text
    assert "compute apart" in text and "the machine is busy (load 9)" in text


def test_06_prediction_claim_holds_within_the_tolerance_and_fails_outside():
    good = mapreduce.typical([prediction(r) for r in (0.85, 1.0, 1.2)])
    assert c06.prediction_claim(good).held is True
    assert "rounds: 0.85–1.20" in repr(c06.prediction_claim(good))
    assert c06.prediction_claim(prediction(1.31)).held is False
    assert c06.prediction_claim(prediction(0.7)).held is False
    with pytest.raises(TypeError, match="prediction"):
        c06.prediction_claim(None)


class _NoEngine:
    """Stands in for ProcessEngine/DaskEngine: opens and closes, runs nothing."""

    started = 0

    def __init__(self, n_workers):
        self.n_workers = n_workers

    def __enter__(self):
        _NoEngine.started += 1
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("ratios, held, rounds", [
    ([1.1] * 6, True, 6),                  # steady and inside 1.3: six rounds decide (95%)
    ([1.6] * 6, False, 6),                 # steadily too slow for the model
    ([0.7] * 6, False, 6),                 # steadily too fast: off by 1/0.7 the other way
    ([0.9, 1.5] * 11, None, 21),           # reaching past 1.3 half the time: undecided
])
def test_05_model_claims_take_rounds_until_decided(monkeypatch, ratios, held, rounds):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(c05, "ProcessEngine", _NoEngine)
    monkeypatch.setattr(c05.house_prices, "load", lambda n: (None, None))
    script = iter(ratios)
    monkeypatch.setattr(c05.mapreduce, "measure_and_predict",
                        lambda *a, **k: prediction(next(script), cores=2))
    claim = c05.model_predicts_processes(quick=False)
    assert claim.held is held
    assert f"median of {rounds} interleaved rounds" in claim.statement
    assert "processes ×2 (server sharing a worker's core)" in claim.statement
    if held is None:
        assert "undecided here" in claim.not_applicable


def test_05_model_claims_start_no_workers_on_one_core(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    monkeypatch.setattr(c05, "DaskEngine", _NoEngine)
    before = _NoEngine.started
    claim = c05.model_predicts_dask(quick=True)
    assert claim.held is None and "2 usable cores" in claim.not_applicable
    assert _NoEngine.started == before


@pytest.mark.parametrize("ratios, held, rounds", [
    ([1.1] * 6, True, 6),                  # steady and inside 1.3: six rounds decide
    ([1.56] * 6, False, 6),                # steadily off, as one fixed-round run once was
    ([0.81, 1.78] * 11, None, 21),         # the scatter of that run: undecided, not ✗
])
def test_06_simulation_claim_takes_rounds_until_decided(monkeypatch, ratios, held, rounds):
    monkeypatch.setattr(c06, "DaskEngine", _NoEngine)
    monkeypatch.setattr(c06.house_prices, "load", lambda: (None, None))
    script = iter(ratios)
    monkeypatch.setattr(c06.parameter_server, "measure_and_predict",
                        lambda *a, **k: prediction(next(script)))
    claim = c06.simulation_predicts_dask(quick=False)
    assert claim.held is held
    assert f"median of {rounds} interleaved rounds" in claim.statement
    if held is None:
        assert "undecided here" in claim.not_applicable
