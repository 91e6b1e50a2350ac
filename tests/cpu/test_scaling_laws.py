"""Amdahl and Gustafson: closed forms, and the fits recover a known serial fraction."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.cpu import scaling_laws as sl


def test_amdahl_closed_form_and_limit():
    p = np.array([1, 2, 4, 1_000_000])
    S = sl.amdahl_speedup(p, 0.1)
    np.testing.assert_allclose(S[:3], [1.0, 1 / 0.55, 1 / 0.325])
    assert S[-1] < 10.0 and S[-1] > 9.99  # never past 1/s


def test_gustafson_closed_form():
    np.testing.assert_allclose(sl.gustafson_speedup([1, 2, 64], 0.25), [1.0, 1.75, 48.25])


def test_no_serial_part_is_ideal_and_all_serial_is_flat():
    p = [1, 3, 8]
    np.testing.assert_allclose(sl.amdahl_speedup(p, 0.0), p)
    np.testing.assert_allclose(sl.amdahl_speedup(p, 1.0), 1.0)
    np.testing.assert_allclose(sl.gustafson_speedup(p, 1.0), 1.0)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 1.0), st.lists(st.integers(2, 256), min_size=1, max_size=6))
def test_fit_amdahl_recovers_exact_fraction(s, workers):
    p = [1] + workers
    fit = sl.fit_amdahl(p, sl.amdahl_speedup(p, s))
    assert fit.serial_fraction == pytest.approx(s, abs=1e-7)
    assert fit.residual < 1e-7


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 1.0), st.lists(st.integers(2, 256), min_size=1, max_size=6))
def test_fit_gustafson_recovers_exact_fraction(s, workers):
    fit = sl.fit_gustafson(workers, sl.gustafson_speedup(workers, s))
    assert fit.serial_fraction == pytest.approx(s, abs=1e-7)


@pytest.mark.parametrize("s", [0.02, 0.1, 0.3])
def test_fit_amdahl_from_noisy_synthetic_timings(s):
    p = np.array([1, 2, 4, 8, 16, 32])
    times = sl.synthetic_times(p, s, t1=3.0, noise=0.01, seed=1)
    fit = sl.fit_amdahl(p, times[0] / times)
    assert abs(fit.serial_fraction - s) < 0.02
    assert fit.limit == pytest.approx(1 / fit.serial_fraction)


def test_synthetic_times_are_seeded():
    a = sl.synthetic_times([1, 2, 4], 0.1, noise=0.05, seed=3)
    b = sl.synthetic_times([1, 2, 4], 0.1, noise=0.05, seed=3)
    c = sl.synthetic_times([1, 2, 4], 0.1, noise=0.05, seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_speedup_curves_warm_up_then_interleave_rounds():
    calls = []
    curve = sl.speedup_curve(lambda p: calls.append(p), [1, 2, 4], repeat=2)
    # one untimed warm-up of each configuration, then rounds that visit every one in turn
    assert calls == [1, 2, 4, 1, 2, 4, 1, 2, 4] and curve.workers == (1, 2, 4)
    assert curve.speedups[0] == 1.0 and len(curve.times) == 3
    assert curve.round_speedups.shape == (2, 3) and np.all(curve.round_speedups[:, 0] == 1.0)
    calls.clear()
    scaled = sl.scaled_speedup_curve(lambda p, k: calls.append((p, k)), [1, 2], repeat=1)
    assert calls == [(1, 1), (2, 2), (1, 2)] * 2
    assert scaled.serial_times is not None and len(scaled.speedups) == 2
    assert scaled.speedups[0] == 1.0 and scaled.round_speedups.shape == (1, 2)


def test_a_cheaper_warm_up_replaces_the_untimed_calls():
    calls = []
    sl.speedup_curve(lambda p: calls.append(p), [1, 2, 4], repeat=1,
                     warm_up=lambda p: calls.append(("warm", p)))
    assert calls == [("warm", 1), ("warm", 2), ("warm", 4), 1, 2, 4]
    calls.clear()
    sl.scaled_speedup_curve(lambda p, k: calls.append((p, k)), [2, 4], repeat=1,
                            warm_up=lambda p: calls.append(("warm", p)))
    # every pool a round uses is warmed once, one worker's included
    assert calls == [("warm", 1), ("warm", 2), ("warm", 4), (2, 2), (4, 4), (1, 2), (1, 4)]
    with pytest.raises(TypeError, match="warm_up"):
        sl.speedup_curve(lambda p: None, [1, 2], warm_up=3)


def test_scaled_speedup_divides_times_from_the_same_round():
    # Round 1 is slow for everything (a burst of load): per-round ratios stay the same.
    # fake clock: each timed call lasts the next duration (warm-up calls are not timed)
    ticks = iter([t for d in [1, 1, 2, 3, 3, 6] for t in (0.0, float(d))])
    real = sl.time.perf_counter
    sl.time.perf_counter = lambda: next(ticks)
    try:
        curve = sl.scaled_speedup_curve(lambda p, k: None, [1, 2], repeat=2)
    finally:
        sl.time.perf_counter = real
    np.testing.assert_allclose(curve.round_speedups, [[1.0, 2.0], [1.0, 2.0]])


def test_exactly_determined_fit_says_so_and_cannot_test_the_law():
    fit = sl.fit_amdahl([1, 2], [1.0, 1.7], rounds=[[1.0, 1.6], [1.0, 1.8], [1.0, 1.7]])
    assert fit.exactly_determined and fit.dof == 0 and fit.residual < 1e-9
    assert fit.serial_fraction == pytest.approx(2 / 1.7 - 1, abs=1e-9)
    assert fit.uncertainty > 0 and fit.rounds == 3
    text = " ".join(fit.evidence())
    assert "cannot: test Amdahl's law" in text
    assert "exactly determined" in repr(fit)
    # 1.7 ± 0.1 is 3 spreads under 2, but 3 rounds (2 dof) need t = 4.30 at 95 % (issue 31)
    assert "not told apart from the ideal 2: the gap is 3.0 spreads, and 3 rounds need 4.30" in text
    many = sl.fit_amdahl([1, 2, 4, 8], sl.amdahl_speedup([1, 2, 4, 8], 0.1))
    assert not many.exactly_determined and many.dof == 2
    assert "can: test the law" in " ".join(many.evidence())


def test_the_gap_to_the_ideal_is_judged_by_students_t_not_by_a_fixed_two_sigma():
    two = sl.fit_amdahl([1, 2], [1.0, 1.79], rounds=[[1.0, 1.78], [1.0, 1.80]])  # 1 dof
    text = " ".join(two.evidence())
    assert "2 rounds give no usable uncertainty" in text and "rough guide" in text
    assert "below the ideal" not in text
    five = sl.fit_amdahl([1, 2], [1.0, 1.79],
                         rounds=[[1, 1.78], [1, 1.80], [1, 1.79], [1, 1.77], [1, 1.81]])
    assert "is below the ideal 2" in " ".join(five.evidence()) and "4 dof" in " ".join(five.evidence())
    assert sl.t_quantile(2) == pytest.approx(12.706, abs=1e-3)
    assert sl.t_quantile(5) == pytest.approx(2.776, abs=1e-3)
    assert sl.t_quantile(1) == float("inf")


def test_a_scaled_curve_shows_the_grown_jobs_serial_time_and_weak_efficiency():
    curve = sl.SpeedupCurve(workers=(1, 2), samples=((0.2, 0.25),),
                            serial_samples=((0.2, 0.4),))
    text = repr(curve)
    assert "the grown job on 1 worker p=2: 400.0 ms" in text
    assert "weak-scaling efficiency p=2: 0.80" in text
    assert curve.speedups[-1] == pytest.approx(1.6)  # 400 / 250, readable from the line


def test_fit_uses_relative_residuals():
    # The fit is the minimiser of the sum of squared *relative* gaps (checked on a fine grid),
    # which here differs from the minimiser of the absolute gaps (pulled by the large S).
    p = np.array([2, 8, 64])
    S = sl.amdahl_speedup(p, 0.05) * np.array([1.2, 1.0, 0.6])
    grid = np.linspace(0, 0.2, 20_001)
    law = 1.0 / (grid[:, None] + (1.0 - grid[:, None]) / p)  # Amdahl's S at every grid point

    def best(weights):
        cost = np.sum(((law - S) / weights) ** 2, axis=1)
        return grid[int(np.argmin(cost))]

    fit = sl.fit_amdahl(p, S)
    assert fit.serial_fraction == pytest.approx(best(S), abs=2e-5)
    assert abs(best(np.ones(3)) - best(S)) > 1e-3


def test_amdahl_and_gustafson_fractions_convert():
    # The same program: Amdahl s = 0.1 at p = 2 is a serial share 0.2/1.1 of the 2-worker time,
    # and the scaled speedup computed from that share equals the strong speedup there.
    sg = sl.gustafson_fraction(0.1, [2])[0]
    assert sg == pytest.approx(0.2 / 1.1)
    assert sl.gustafson_speedup([2], sg)[0] == pytest.approx(sl.amdahl_speedup([2], 0.1)[0],
                                                            rel=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sl.amdahl_speedup([1, 2], 1.5), "serial_fraction"),
        (lambda: sl.amdahl_speedup([0, 2], 0.1), "workers"),
        (lambda: sl.amdahl_speedup([], 0.1), "workers"),
        (lambda: sl.fit_amdahl([1, 2], [1.0]), "speedups"),
        (lambda: sl.fit_amdahl([1, 2], [1.0, -2.0]), "speedups"),
        (lambda: sl.fit_amdahl([1, 1], [1.0, 1.0]), "above 1"),
        (lambda: sl.fit_gustafson([1], [1.0]), "above 1"),
        (lambda: sl.synthetic_times([1, 2], 0.1, noise=0.9), "noise"),
        (lambda: sl.speedup_curve(lambda p: None, []), "workers"),
        (lambda: sl.speedup_curve(lambda p: None, [0]), "workers"),
    ],
)
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError, match="serial_fraction"):
        sl.amdahl_speedup([1, 2], "0.1")
    with pytest.raises(TypeError, match="run"):
        sl.speedup_curve(3, [1])


def test_plot_draws_measured_and_fitted():
    import matplotlib

    matplotlib.use("Agg")
    fit = sl.fit_amdahl([1, 2, 4], [1.0, 1.8, 3.0])
    ax = fit.plot(up_to=16)
    assert len(ax.lines) >= 3  # ideal, fit, measured (with error bars)
    assert "amdahl" in repr(fit)


def test_no_speedup_is_reported_as_no_estimate():
    fit = sl.fit_amdahl([1, 2], [1.0, 0.83], rounds=[[1.0, 0.8], [1.0, 0.86]])
    text = " ".join(fit.evidence())
    assert "cannot: estimate s at all" in text and "can: s =" not in text
    assert "ceiling" not in text  # s = 1: no ceiling to extrapolate


def test_agreement_compares_the_two_fits_in_gustafsons_terms():
    amdahl = sl.fit_amdahl([1, 2], [1, 1.76], rounds=[[1, 1.6], [1, 1.9], [1, 1.76]])
    same = sl.fit_gustafson([1, 2], [1, 1.8], rounds=[[1, 1.75], [1, 1.85], [1, 1.8]])
    other = sl.fit_gustafson([1, 2], [1, 1.31], rounds=[[1, 1.30], [1, 1.32], [1, 1.31]])
    assert sl.agreement(amdahl, same).endswith("they agree within one uncertainty")
    text = sl.agreement(amdahl, other)
    assert "they DISAGREE" in text and "at p = 2: 0.240" in text
    one_round = sl.fit_gustafson([1, 2], [1, 1.8])
    assert "cannot judge agreement" in sl.agreement(amdahl, one_round)
    apart = sl.fit_gustafson([1, 4], [1, 3.0], rounds=[[1, 2.9], [1, 3.1]])
    assert sl.agreement(amdahl, apart).startswith("cannot compare")
    with pytest.raises(TypeError, match="amdahl: expected a ScalingFit of amdahl's law"):
        sl.agreement(same, same)
    with pytest.raises(TypeError, match="gustafson"):
        sl.agreement(amdahl, 0.2)


def test_agreement_is_not_claimed_where_it_holds_by_construction():
    # review of 2026-11-27: with no speedup both s sit at the bound 1, and two rounds give no
    # usable uncertainty, yet the lesson printed "they agree within one uncertainty"
    flat_a = sl.fit_amdahl([1, 2], [1, 0.78], rounds=[[1, 0.78], [1, 0.87]])
    flat_g = sl.fit_gustafson([1, 2], [1, 0.95], rounds=[[1, 0.95], [1, 0.8]])
    assert flat_a.serial_fraction == flat_g.serial_fraction == 1.0
    text = sl.agreement(flat_a, flat_g)
    assert text.startswith("cannot compare") and "by construction" in text
    two_a = sl.fit_amdahl([1, 2], [1, 1.76], rounds=[[1, 1.6], [1, 1.9]])
    two_g = sl.fit_gustafson([1, 2], [1, 1.8], rounds=[[1, 1.75], [1, 1.85]])
    assert "cannot judge agreement: 2 rounds give no usable uncertainty" in sl.agreement(two_a, two_g)

