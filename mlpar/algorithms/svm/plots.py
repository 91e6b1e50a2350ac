"""Pictures for lesson 09: an SVM's decision boundary, and a data set lifted into 3-D."""

from __future__ import annotations

import numpy as np

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.core import validation

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
    # Proxies so that a legend also explains the lines drawn by ``contour``.
    ax.plot([], [], color="k", lw=1.2, label="boundary f = 0")
    ax.plot([], [], color="k", lw=0.8, ls="--", label="margins f = ±1")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("$x_1$ (feature 1, data units)", fontsize=8)
    ax.set_ylabel("$x_2$ (feature 2, data units)", fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_lifted(X: np.ndarray, y, w: np.ndarray, b: float, *, figsize=(9, 3.6)):
    """Left: 2-D points no line separates. Right: the same points lifted by
    ``kernels.lifted_features`` into 3-D and seen edge-on to the plane ``w . phi(x) + b = 0``
    that separates them: the horizontal axis is the signed distance to the plane (along ``w``),
    the vertical one a direction inside the plane, so the plane is the vertical line at 0.
    Returns the figure."""
    import matplotlib.pyplot as plt

    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True)
    y = np.asarray(y)
    Z = kernels.lifted_features(X)
    w = validation.array("w", np.asarray(w, dtype=np.float64), ndim=1)
    if w.shape != (3,):
        raise ValueError(f"w: expected 3 weights for the lifted space, got shape {w.shape}")
    norm = float(np.linalg.norm(w))
    if norm == 0.0:
        raise ValueError("w: expected a non-zero normal vector, got all zeros")
    normal = w / norm
    # An in-plane direction: the sqrt(2) x1 x2 axis with its component along w removed.
    inside = np.array([0.0, 1.0, 0.0]) - normal[1] * normal
    inside /= np.linalg.norm(inside)
    across = (Z @ w + b) / norm
    along = Z @ inside
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=figsize, constrained_layout=True)
    for label, color in zip(np.unique(y), _COLORS):
        ax.scatter(*X[y == label].T, s=8, color=color, label=f"class {label}")
        ax2.scatter(across[y == label], along[y == label], s=8, color=color)
    ax.set_aspect("equal")
    ax.set_title("input space: no straight line separates the classes", fontsize=9)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.legend(fontsize=8, loc="upper right")
    ax2.axvline(0.0, color="k", lw=1.2)
    ax2.text(0.0, 0.02, " the plane", transform=ax2.get_xaxis_transform(), va="bottom", fontsize=8)
    ax2.set_xlabel(r"signed distance to the plane, $(w\cdot\phi(x) + b)\,/\,|w|$")
    ax2.set_ylabel("a direction in the plane")
    ax2.set_title(r"lifted space $\phi(x) = (x_1^2, \sqrt{2}x_1x_2, x_2^2)$, seen edge-on",
                  fontsize=9)
    return fig
