"""The lesson 09 figures draw without error and refuse input they cannot draw."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.datasets import make_circles, make_moons  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from mlpar import kernels, smo, svm_plots  # noqa: E402


def test_decision_boundary_for_ours_and_sklearn():
    X, y = make_moons(80, noise=0.2, random_state=0)
    for model in (smo.fit_smo(X, y, gamma=1.0), SVC(gamma=1.0).fit(X, y)):
        ax = svm_plots.plot_decision_boundary(model, X, y, resolution=20, title="t")
        assert ax.get_title() == "t"
        plt.close(ax.figure)
    with pytest.raises(ValueError, match="X: expected 2 columns"):
        svm_plots.plot_decision_boundary(model, np.ones((5, 3)), np.arange(5) % 2)
    with pytest.raises(ValueError, match="resolution"):
        svm_plots.plot_decision_boundary(model, X, y, resolution=0)


def test_lifted_picture():
    X, y = make_circles(60, factor=0.4, noise=0.05, random_state=0)
    Z = kernels.lifted_features(X)
    plane = smo.fit_smo(Z, y, kernel="linear", C=10.0)
    fig = svm_plots.plot_lifted(X, y, plane.dual_coef @ plane.support_vectors, plane.intercept)
    assert len(fig.axes) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match="w: expected 3 weights"):
        svm_plots.plot_lifted(X, y, np.ones(2), 0.0)
