"""Amdahl and Gustafson: closed forms, and the fits recover a known serial fraction."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar import scaling_laws as sl


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
    assert fit.serial_fraction == pytest.approx(s, abs=1e-9)
    assert fit.residual < 1e-9


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 1.0), st.lists(st.integers(2, 256), min_size=1, max_size=6))
def test_fit_gustafson_recovers_exact_fraction(s, workers):
    fit = sl.fit_gustafson(workers, sl.gustafson_speedup(workers, s))
    assert fit.serial_fraction == pytest.approx(s, abs=1e-9)


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


def test_speedup_curves_call_run_with_each_worker_count():
    calls = []
    curve = sl.speedup_curve(lambda p: calls.append(p), [1, 2, 4], repeat=2)
    assert calls == [1, 1, 2, 2, 4, 4] and curve.workers == (1, 2, 4)
    assert curve.speedups[0] == 1.0 and len(curve.times) == 3
    calls.clear()
    scaled = sl.scaled_speedup_curve(lambda p, k: calls.append((p, k)), [1, 2], repeat=1)
    assert calls == [(1, 1), (2, 2), (1, 2)]
    assert scaled.serial_times is not None and len(scaled.speedups) == 2
    assert scaled.speedups[0] == 1.0


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
    assert len(ax.lines) == 3
    assert "amdahl" in repr(fit)
