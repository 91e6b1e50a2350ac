"""The claims of lessons 05, 07 and 08 say n/a, not ✗, where the machine cannot meet the model's
assumption (a core per worker and the server; a core per stage), and judge the figure elsewhere."""

import pytest

from mlpar.algorithms.distributed import gossip_dask, mapreduce
from mlpar.claims import l05_mapreduce as c05
from mlpar.claims import l07_gossip as c07
from mlpar.claims import l08_pipelines as c08
from mlpar.cluster.cost_model import CostModel
from mlpar.core import environment


def prediction(ratio, n_workers=2):
    return mapreduce.Prediction("processes", n_workers, ratio * 1e-3, 1e-3, CostModel())


@pytest.mark.parametrize("cores, ratio, held", [(2, 1.59, None), (2, 1.0, None), (3, 1.59, False),
                                                (3, 1.1, True), (16, 0.7, False)])
def test_05_prediction_needs_a_core_for_the_server(monkeypatch, cores, ratio, held):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, f"cores={cores}")
    claim = c05.prediction_claim(prediction(ratio))
    assert claim.held is held
    text = repr(claim)
    assert f"{ratio:.2f}" in text  # the figure is shown either way
    if held is None:
        assert text.startswith("n/a") and "3 usable cores" in text and "server" in text


def test_05_prediction_claim_refuses_something_else():
    with pytest.raises(TypeError, match="prediction: expected a mapreduce.Prediction"):
        c05.prediction_claim(1.5)


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
