"""The lesson 09 figures draw without error and refuse input they cannot draw."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.datasets import make_circles, make_moons  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from mlpar.algorithms.svm import kernel_matrix as kernels  # noqa: E402
from mlpar.algorithms.svm import plots as svm_plots
from mlpar.algorithms.svm import smo


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
    # Seen edge-on, the plane is x = 0 and each class lies on its own side of it.
    first, second = (c.get_offsets()[:, 0] for c in fig.axes[1].collections[:2])
    assert (first.max() < 0 < second.min()) or (second.max() < 0 < first.min())
    plt.close(fig)
    with pytest.raises(ValueError, match="w: expected 3 weights"):
        svm_plots.plot_lifted(X, y, np.ones(2), 0.0)
    with pytest.raises(ValueError, match="non-zero"):
        svm_plots.plot_lifted(X, y, np.zeros(3), 0.0)
