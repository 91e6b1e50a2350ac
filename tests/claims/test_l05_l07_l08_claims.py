"""The claims of lessons 07 and 08 say n/a, not ✗, where the machine cannot meet the model's
assumption (a core per stage), and judge the figure elsewhere. (Lesson 05's claim tests live in
test_l05_l06_claims.py.)"""

import pytest

from mlpar.algorithms.distributed import gossip_dask
from mlpar.claims import l07_gossip as c07
from mlpar.claims import l08_pipelines as c08
from mlpar.core import environment


@pytest.mark.parametrize("cores, held", [(1, None), (2, True), (8, True)])
def test_07_prediction_needs_two_cores(monkeypatch, cores, held):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, f"cores={cores}")
    p = gossip_dask.RoundPrediction(4, "ring", 1.1e-3, 1e-3, 1e-4, 1e-9, 64.0, 100.0)
    assert c07.prediction_claim(p).held is held
    with pytest.raises(TypeError, match="prediction"):
        c07.prediction_claim(None)


@pytest.mark.parametrize("cores, held", [(1, None), (2, False), (4, False)])
def test_08_claims_need_a_core_per_stage(monkeypatch, cores, held):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, f"cores={cores}")
    assert c08.prediction_claim(2.0, 1.0).held is held  # off by 2×: fails where it applies
    assert c08.pipelining_claim(1.0, 1.0).held is held  # no gain: fails where it applies
    if held is None:
        assert "one core per pipeline stage" in repr(c08.pipelining_claim(1.0, 1.0))


def test_07_claim_prints_the_spread_of_its_repeats_and_can_fail(monkeypatch):
    # Issue 36 §3: the verdict comes with the spread of interleaved repeats.
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    held = gossip_dask.RoundPrediction(4, "ring", 1.1e-3, 1e-3, 1e-4, 1e-9, 64.0, 100.0,
                                       ratios=(1.05, 1.1, 1.2))
    claim = c07.prediction_claim(held)
    assert claim.held is True and "1.05–1.20" in repr(claim) and "3 interleaved" in repr(claim)
    broken = gossip_dask.RoundPrediction(4, "ring", 2e-3, 1e-3, 1e-4, 1e-9, 64.0, 100.0,
                                         ratios=(1.9, 2.0, 2.2))
    assert c07.prediction_claim(broken).held is False
    assert c07.simulation_claim(3.0, spread=(3.0, 3.5)).held is False
    assert "1.00–1.20 s" in repr(c07.simulation_claim(1.0, spread=(1.0, 1.2)))


def test_08_claims_print_the_spread_of_interleaved_runs(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    good = c08.pipelining_claim(1.8, 1.0, spread=[1.7, 1.8, 1.75])
    assert good.held is True and "1.70–1.80×" in repr(good)
    assert c08.pipelining_claim(1.1, 1.0, spread=[1.0, 1.1]).held is False
    assert c08.prediction_claim(1.0, 1.5, spread=[1.5, 1.6]).held is False
    with pytest.raises(ValueError, match="spread"):
        c08.prediction_claim(1.0, 1.0, spread=[1.0])


class _Run:
    def __init__(self, makespan):
        self.timeline = type("Timeline", (), {"makespan": makespan})()


class _Pipeline:
    """Stands in for StagedPipeline: each run's makespan comes from a script, the prediction
    is always 1, so a run's makespan is its measured/predicted."""

    script = iter(())
    calibrations = 0

    def __init__(self, params, p):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def calibrate_link(self, repeat):
        _Pipeline.calibrations += 1
        return None

    def run(self, X, Y, schedule):
        return _Run(next(_Pipeline.script, 1.0))


@pytest.mark.parametrize("ratios, held, rounds", [
    ([1.0] + [1.1] * 6, True, 6),          # the first run warms up and is not counted
    ([1.0] + [1.5] * 6, False, 6),
    ([1.0] + [0.8, 1.6] * 11, None, 21),   # undecided, not ✗
])
def test_08_prediction_claim_takes_rounds_each_with_its_own_calibration(monkeypatch, ratios, held,
                                                                      rounds):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(c08.staged_mlp, "StagedPipeline", _Pipeline)
    monkeypatch.setattr(c08.staged_mlp, "demo_problem", lambda *a, **k: (None, None, None))
    monkeypatch.setattr(c08.staged_mlp, "predict", lambda run, link: _Run(1.0).timeline)
    _Pipeline.script, _Pipeline.calibrations = iter(ratios), 0
    claim = c08.simulator_predicts_the_staged_run(quick=False)
    assert claim.held is held
    assert f"median of {rounds} interleaved rounds" in claim.statement
    assert _Pipeline.calibrations == rounds


def test_08_prediction_claim_starts_no_pipeline_on_one_core(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    monkeypatch.setattr(c08.staged_mlp, "StagedPipeline", None)  # would fail if it were started
    claim = c08.simulator_predicts_the_staged_run(quick=True)
    assert claim.held is None and "one core per pipeline stage" in claim.not_applicable
