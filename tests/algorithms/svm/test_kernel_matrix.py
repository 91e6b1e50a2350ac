"""The numba kernel matrices against scikit-learn's pairwise kernels and a numpy reference."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.core.threads import using_threads


@pytest.fixture
def points():
    rng = np.random.default_rng(0)
    return rng.normal(size=(37, 5)), rng.normal(size=(23, 5))


@pytest.mark.parametrize("parallel", [True, False])
def test_matches_sklearn(points, parallel):
    X, Y = points
    np.testing.assert_allclose(
        kernels.kernel_matrix(X, Y, kernel="linear", parallel=parallel), linear_kernel(X, Y),
        rtol=1e-12, atol=1e-12,
    )
    np.testing.assert_allclose(
        kernels.kernel_matrix(X, Y, kernel="poly", gamma=0.3, degree=3, coef0=1.5,
                              parallel=parallel),
        polynomial_kernel(X, Y, degree=3, gamma=0.3, coef0=1.5), rtol=1e-12,
    )
    np.testing.assert_allclose(
        kernels.kernel_matrix(X, Y, kernel="rbf", gamma=0.2, parallel=parallel),
        rbf_kernel(X, Y, gamma=0.2), rtol=1e-12, atol=1e-15,
    )


@pytest.mark.parametrize("kernel", kernels.KERNELS)
def test_numpy_reference_and_symmetry(points, kernel):
    X, _ = points
    K = kernels.kernel_matrix(X, kernel=kernel, gamma=0.4, degree=2, coef0=1.0)
    ref = kernels.kernel_matrix_numpy(X, kernel=kernel, gamma=0.4, degree=2, coef0=1.0)
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(K, K.T)
    # A kernel matrix is positive semi-definite: no eigenvalue below rounding.
    assert np.linalg.eigvalsh(K).min() > -1e-8 * np.abs(K).max()


def test_thread_count_does_not_change_result(points):
    X, Y = points
    with using_threads(1):
        one = kernels.kernel_matrix(X, Y, gamma=0.7)
    assert np.array_equal(one, kernels.kernel_matrix(X, Y, gamma=0.7))


def test_lifted_features_reproduce_squared_dot():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 2))
    phi = kernels.lifted_features(X)
    np.testing.assert_allclose(phi @ phi.T, (X @ X.T) ** 2, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="2 columns"):
        kernels.lifted_features(np.ones((3, 3)))


def test_resolve_gamma_scale_matches_sklearn_rule():
    X = np.random.default_rng(2).normal(scale=3.0, size=(50, 4))
    assert kernels.resolve_gamma("scale", X) == pytest.approx(1.0 / (4 * X.var()))
    assert kernels.resolve_gamma(0.5, X) == 0.5
    with pytest.raises(ValueError, match="gamma"):
        kernels.resolve_gamma("auto", X)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kernel": "sigmoid"}, ValueError, "kernel: expected one of"),
        ({"gamma": 0.0}, ValueError, "gamma"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"degree": 0}, ValueError, "degree"),
        ({"coef0": float("nan")}, ValueError, "coef0"),
        ({"parallel": 1}, TypeError, "parallel"),
    ],
)
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        kernels.kernel_matrix(np.ones((3, 2)), **kwargs)


def test_bad_arrays():
    with pytest.raises(ValueError, match="X: expected finite"):
        kernels.kernel_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(TypeError, match="X: expected dtype float64"):
        kernels.kernel_matrix(np.ones((3, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="Y: expected 2 columns"):
        kernels.kernel_matrix(np.ones((3, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="X: expected a 2-D"):
        kernels.kernel_matrix(np.ones(3))
