"""Loop and matrix-operation versions agree; each against an independent reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from mlpar.cpu import vectorized as vz

GRADIENTS = [vz.gradient_loop, vz.gradient_matrix]
DISTANCES = [vz.distances_loop, vz.distances_broadcast, vz.distances_matrix]


@pytest.mark.parametrize("gradient", GRADIENTS)
@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 30), d=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_gradient_matches_finite_differences(gradient, n, d, seed):
    X, y, _ = vz.least_squares_data(n, d, seed=seed)
    w = np.random.default_rng(seed + 1).standard_normal(d)
    # The loss is quadratic, so the central difference is exact up to rounding.
    h = 1e-3
    numeric = np.array([
        (vz.least_squares_loss(X, y, w + h * e) - vz.least_squares_loss(X, y, w - h * e)) / (2 * h)
        for e in np.eye(d)
    ])
    np.testing.assert_allclose(gradient(X, y, w), numeric, rtol=1e-6, atol=1e-6)


def test_gradient_vanishes_at_the_least_squares_solution():
    X, y, _ = vz.least_squares_data(40, 5, seed=3)
    w_star = np.linalg.lstsq(X, y, rcond=None)[0]
    for gradient in GRADIENTS:
        np.testing.assert_allclose(gradient(X, y, w_star), 0.0, atol=1e-10)


def test_loop_and_matrix_gradients_agree():
    X, y, w_true = vz.least_squares_data(200, 12, seed=4)
    w = np.zeros(12)
    np.testing.assert_allclose(vz.gradient_loop(X, y, w), vz.gradient_matrix(X, y, w),
                               rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("distances", DISTANCES)
@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 12), m=st.integers(1, 12), d=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_distances_equal_scipy_cdist(distances, n, m, d, seed):
    X = vz.random_points(n, d, seed=seed)
    Y = vz.random_points(m, d, seed=seed + 1)
    got = distances(X, Y)
    assert got.shape == (n, m)
    # The ‖x‖²+‖y‖²−2xᵀy form loses relative accuracy near zero: absolute tolerance.
    np.testing.assert_allclose(got, cdist(X, Y), rtol=1e-10, atol=1e-6)


@pytest.mark.parametrize("distances", DISTANCES)
def test_distance_to_itself_is_zero_and_never_nan(distances):
    X = vz.random_points(10, 3, seed=5) * 1e3
    D = distances(X, X)
    assert not np.isnan(D).any()
    np.testing.assert_allclose(np.diag(D), 0.0, atol=1e-4)


@pytest.mark.parametrize("gradient", GRADIENTS + [vz.least_squares_loss])
def test_bad_least_squares_input_is_rejected(gradient):
    X, y, w = vz.least_squares_data(6, 3)
    with pytest.raises(ValueError, match=r"y: expected 6 rows to match X, got 5"):
        gradient(X, y[:5], w)
    with pytest.raises(ValueError, match=r"w: expected 3 entries to match the columns of X, got 4"):
        gradient(X, y, np.zeros(4))
    with pytest.raises(ValueError, match=r"X: expected a 2-D array, got 1-D"):
        gradient(y, y, w)
    with pytest.raises(TypeError, match=r"w: expected a numpy array, got list"):
        gradient(X, y, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("distances", DISTANCES)
def test_bad_point_sets_are_rejected(distances):
    X = vz.random_points(4, 3)
    with pytest.raises(ValueError, match=r"Y: expected 3 columns \(features\) to match X"):
        distances(X, vz.random_points(4, 2))
    with pytest.raises(TypeError, match=r"X: expected dtype float64, got int64"):
        distances(np.ones((2, 3), dtype=np.int64), X)


def test_data_helpers_are_seeded_and_validated():
    a = vz.least_squares_data(5, 2, seed=9)
    b = vz.least_squares_data(5, 2, seed=9)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_allclose(vz.least_squares_data(50, 3, noise=0.0)[0]
                               @ vz.least_squares_data(50, 3, noise=0.0)[2],
                               vz.least_squares_data(50, 3, noise=0.0)[1])
    with pytest.raises(ValueError, match=r"noise: expected a number in \[0.0, inf\], got -1.0"):
        vz.least_squares_data(5, 2, noise=-1.0)
    with pytest.raises(ValueError, match=r"seed: expected an integer >= 0, got -1"):
        vz.random_points(3, 2, seed=-1)
