"""Lesson 09's thread claim: not applicable with one core (nothing measured), and otherwise
judged on the median of rounds taken until it is told apart from 1.5×. Hardware is faked."""

import pytest

from mlpar.claims import l09_svm_kernels as claims09
from mlpar.core import environment


def _figures(ratios, threads=2):
    return {"n": 1200, "d": 16, "threads": threads, "one_s": 0.02, "many_s": 0.02 / max(ratios),
            "speedup": max(ratios), "ratios": tuple(ratios)}


def test_one_core_is_not_applicable_and_measures_nothing(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    monkeypatch.setattr(claims09.svm_bench, "kernel_thread_speedup",
                        lambda *a, **k: pytest.fail("measured on one core"))
    claim = claims09.kernel_matrix_scales_on_threads(quick=True)
    assert claim.held is None and "n/a" in repr(claim) and "2 usable cores" in repr(claim)


@pytest.mark.parametrize("ratios, held, rounds", [
    ((1.2, 1.9, 1.8, 1.9, 1.9, 1.8, 1.9, 1.9, 1.9), True, 9),  # one slow round costs three more
    ((1.1, 1.3, 1.2, 1.2, 1.3, 1.1), False, 6),
    ((1.2, 1.9) * 13, None, 15),           # quick: at most 15 rounds, then undecided
])
def test_the_median_of_rounds_decides_and_the_rounds_are_shown(monkeypatch, ratios, held, rounds):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    script = iter(ratios)
    monkeypatch.setattr(claims09.svm_bench, "kernel_thread_speedup",
                        lambda *a, **k: _figures((next(script),)))
    claim = claims09.kernel_matrix_scales_on_threads(quick=True)
    assert claim.held is held
    text = repr(claim)
    assert f"median of {rounds} interleaved rounds" in text
    assert "needs >= 1.5×" in text
    if held is False:
        assert "slowest thread" in text and "another program holds a core" not in text
    if held is None:
        assert "undecided here" in text and "1.2–1.9×" in text
