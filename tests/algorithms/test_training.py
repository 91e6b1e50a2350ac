import matplotlib
import numpy as np
import pytest

from mlpar.algorithms.training import TrainingResult

matplotlib.use("Agg")


def make(**kw):
    base = dict(label="run", weights=np.zeros(2), times=np.array([0.0, 1.0, 2.0]),
                losses=np.array([4.0, 2.0, 1.0]))
    return TrainingResult(**{**base, **kw})


def test_common_fields_and_repr():
    r = make()
    assert r.final_loss == 1.0 and r.n_updates == 2
    assert repr(r) == "TrainingResult(run: 2 updates, final loss 1)"


def test_plot_draws_loss_against_time_from_zero():
    r = make(times=np.array([5.0, 6.0, 7.0]), clock="virtual")
    ax = r.plot()
    (line,) = ax.get_lines()
    assert line.get_xdata().tolist() == [0.0, 1.0, 2.0] and line.get_label() == "run"
    assert "virtual" in ax.get_xlabel()


@pytest.mark.parametrize("kw, match", [({"clock": "wall"}, "clock"),
                                       ({"losses": np.ones(2)}, "same length")])
def test_bad_fields(kw, match):
    with pytest.raises(ValueError, match=match):
        make(**kw)


def test_subclasses_add_fields():
    from dataclasses import dataclass

    @dataclass(frozen=True, kw_only=True, repr=False, eq=False)
    class WithWorkers(TrainingResult):
        n_workers: int

    r = WithWorkers(label="x", weights=np.zeros(1), times=np.zeros(1), losses=np.ones(1), n_workers=3)
    assert isinstance(r, TrainingResult) and r.n_workers == 3
