"""Lessons 03 and 04 declare at least two claims each; the deterministic ones hold anywhere.

Timing claims are not asserted to hold (they depend on the machine): only that they return a
checked ``Claim`` for the right lesson with a threshold, which ``python -m mlpar.bench claims``
then reports as held or not.
"""

import math

import pytest

from mlpar.claims import l03_model_selection as l03
from mlpar.claims import l04_hogwild as l04
from mlpar.core.claims import Claim


@pytest.mark.parametrize("module, lesson", [(l03, "03"), (l04, "04")])
def test_each_lesson_declares_at_least_two_claims(module, lesson):
    assert len(module.CLAIMS) >= 2
    assert all(callable(f) and f.__doc__ for f in module.CLAIMS)


def test_parallel_cv_scores_are_identical_on_any_machine():
    claim = l03.parallel_cv_gives_identical_scores(quick=True)
    assert isinstance(claim, Claim) and claim.lesson == "03"
    assert claim.held is True and claim.value == 0.0


def test_all_sgd_variants_reach_the_same_loss_on_any_machine():
    claim = l04.all_variants_reach_the_same_loss(quick=True)
    assert claim.lesson == "04" and claim.held is True


def test_a_timing_claim_reports_a_figure_and_a_threshold():
    claim = l04.lock_free_beats_locked(quick=True)
    assert claim.lesson == "04" and claim.threshold == 1.5 and math.isfinite(claim.value)
    assert "lock-free" in repr(claim)


def test_parallel_cv_claim_reads_a_strong_curve_it_is_given():
    from mlpar.claims import l03_model_selection as c03
    from mlpar.cpu.scaling_laws import SpeedupCurve

    curve = SpeedupCurve(workers=(1, 2), samples=((2.0, 1.1), (2.1, 1.0)))
    claim = c03.parallel_cv_speeds_up(curve=curve)
    assert claim.held is True and claim.value == pytest.approx(2.0)
    scaled = SpeedupCurve(workers=(1, 2), samples=((1.0, 1.1),), serial_samples=((1.0, 2.0),))
    for wrong in ("1.8", scaled, SpeedupCurve(workers=(1, 4), samples=((2.0, 0.6),))):
        with pytest.raises(TypeError, match="curve"):
            c03.parallel_cv_speeds_up(curve=wrong)
