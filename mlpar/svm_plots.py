"""Pictures for lesson 09: an SVM's decision boundary, and a data set lifted into 3-D."""

from __future__ import annotations

import numpy as np

from . import kernels, validation

_COLORS = ("tab:blue", "tab:orange")


def plot_decision_boundary(model, X: np.ndarray, y, ax=None, *, resolution: int = 120,
                           title: str | None = None):
    """Regions ``f > 0`` / ``f < 0``, the margins ``f = ±1``, the points, and circled support vectors.

    ``model`` is anything with ``decision_function`` and ``classes`` (``smo.SVMModel``) or
    ``classes_`` (scikit-learn); ``X`` must have 2 columns.
    """
    import matplotlib.pyplot as plt

    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True)
    if X.shape[1] != 2:
        raise ValueError(f"X: expected 2 columns to draw in the plane, got {X.shape[1]}")
    resolution = validation.positive_int("resolution", resolution)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4))
    pad = 0.3
    (x0, y0), (x1, y1) = X.min(0) - pad, X.max(0) + pad
    gx, gy = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    f = model.decision_function(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    ax.contourf(gx, gy, f, levels=[-np.inf, 0, np.inf], colors=["#dbe8f6", "#fde3cc"])
    ax.contour(gx, gy, f, levels=[-1, 0, 1], colors="k", linestyles=["--", "-", "--"],
               linewidths=[0.8, 1.2, 0.8])
    classes = getattr(model, "classes", None)
    if classes is None:
        classes = tuple(model.classes_)
    y = np.asarray(y)
    for label, color in zip(classes, _COLORS):
        pts = X[y == label]
        ax.scatter(pts[:, 0], pts[:, 1], s=8, color=color, label=f"class {label}")
    support = getattr(model, "support", None)
    if support is None:
        support = getattr(model, "support_", None)
    if support is not None and len(support) <= len(X):
        sv = X[support]
        ax.scatter(sv[:, 0], sv[:, 1], s=40, facecolors="none", edgecolors="k", linewidths=0.6,
                   label="support vectors")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_lifted(X: np.ndarray, y, w: np.ndarray, b: float, *, figsize=(10, 4)):
    """Left: 2-D points no line separates. Right: the same points lifted by
    ``kernels.lifted_features`` into 3-D, with the plane ``w . phi(x) + b = 0`` that separates
    them. Returns the figure."""
    import matplotlib.pyplot as plt

    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True)
    y = np.asarray(y)
    Z = kernels.lifted_features(X)
    w = validation.array("w", np.asarray(w, dtype=np.float64), ndim=1)
    if w.shape != (3,):
        raise ValueError(f"w: expected 3 weights for the lifted space, got shape {w.shape}")
    fig = plt.figure(figsize=figsize, constrained_layout=True)
    ax = fig.add_subplot(1, 2, 1)
    ax3 = fig.add_subplot(1, 2, 2, projection="3d")
    for label, color in zip(np.unique(y), _COLORS):
        ax.scatter(*X[y == label].T, s=8, color=color, label=f"class {label}")
        ax3.scatter(*Z[y == label].T, s=6, color=color)
    ax.set_aspect("equal")
    ax.set_title("input space: no straight line separates the classes", fontsize=9)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.legend(fontsize=8, loc="upper right")
    # The plane w1 z1 + w2 z2 + w3 z3 + b = 0, drawn as z3 over a (z1, z2) grid (w3 != 0 here).
    z1, z2 = np.meshgrid(np.linspace(Z[:, 0].min(), Z[:, 0].max(), 10),
                         np.linspace(Z[:, 1].min(), Z[:, 1].max(), 10))
    if abs(w[2]) > 1e-12:
        ax3.plot_surface(z1, z2, -(w[0] * z1 + w[1] * z2 + b) / w[2], alpha=0.25, color="gray")
    ax3.set_xlabel("$x_1^2$")
    ax3.set_ylabel(r"$\sqrt{2}\,x_1x_2$")
    ax3.set_zlabel("$x_2^2$")
    ax3.view_init(elev=8, azim=-82)  # almost along the x1*x2 axis: the plane is seen edge-on
    ax3.set_title("lifted space: a plane separates them", fontsize=9)
    return fig
