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
