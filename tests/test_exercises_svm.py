"""The lesson 09 checks accept the reference solutions and reject typical mistakes."""

import numpy as np
import pytest

from mlpar import kernels, smo
from mlpar.exercises import svm


def test_rbf_check():
    svm.check_rbf_kernel(lambda X, Y, g: kernels.kernel_matrix_numpy(X, Y, kernel="rbf", gamma=g))
    with pytest.raises(AssertionError, match="square"):
        svm.check_rbf_kernel(
            lambda X, Y, g: np.exp(-g * np.linalg.norm(X[:, None] - Y[None], axis=2))
        )
    with pytest.raises(AssertionError, match="not done yet"):
        svm.check_rbf_kernel(lambda X, Y, g: (_ for _ in ()).throw(NotImplementedError))


def test_pair_update_check():
    svm.check_pair_update(lambda *a: smo.pair_step(*a)[1:])

    def unclipped(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
        t = (-y_i * G_i + y_j * G_j) / (K_ii + K_jj - 2 * K_ij)
        return a_i + y_i * t, a_j - y_j * t

    with pytest.raises(AssertionError, match="outside"):
        svm.check_pair_update(unclipped)

    def wrong_sign(a_i, a_j, y_i, y_j, *rest):
        return a_i + 0.01 * y_i, a_j  # moves a_i only: the equality constraint breaks

    with pytest.raises(AssertionError, match="changed"):
        svm.check_pair_update(wrong_sign)


def test_pegasos_check():
    def step(w, X, y, lam, t):
        eta = 1 / (lam * t)
        active = y * (X @ w) < 1
        return (1 - eta * lam) * w + eta / len(y) * (y[active, None] * X[active]).sum(0)

    svm.check_pegasos_step(step)
    with pytest.raises(AssertionError, match="pegasos_step"):
        svm.check_pegasos_step(lambda w, X, y, lam, t: w)
