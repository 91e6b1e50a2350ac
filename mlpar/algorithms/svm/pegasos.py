"""Linear SVM trained by stochastic sub-gradient descent: Pegasos (Shalev-Shwartz et al., 2007).

The primal problem, with ``lam > 0`` and labels ``y_i in {-1, +1}``:

    minimise  P(w) = lam/2 ||w||^2 + 1/n sum_i max(0, 1 - y_i w . x_i).

Step ``t`` (counted from 1) draws a mini-batch ``B`` of ``k`` samples, and with step size
``eta_t = 1 / (lam t)`` moves along the sub-gradient of ``P`` on that batch:

    w <- (1 - eta_t lam) w + eta_t / k  sum_{i in B, y_i w.x_i < 1} y_i x_i,

then (optionally) projects ``w`` onto the ball of radius ``1/sqrt(lam)``, where the optimum lies.
A bias is learnt by appending a constant feature 1 to every sample, so it is regularised like
the weights: exactly what ``LinearSVC(loss='hinge', C=1/(lam n), intercept_scaling=1)`` solves,
which is the reference the tests compare with.

SGD is the *optimizer*; the SVM (the hinge-loss model) is the *method*; the same model can be
trained by SMO on the dual (``mlpar.algorithms.svm.smo``) and must reach the same objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from mlpar.core import validation


@numba.njit(cache=True)
def _pegasos_epoch(Xa, y, w, order, lam, batch, t0, project):
    # Xa: (n, d+1) samples with the constant column; w: (d+1,) updated in place; order: a
    # permutation of 0..n-1 giving this epoch's batches. Returns the step counter after it.
    n, d = Xa.shape
    t = t0
    radius = 1.0 / np.sqrt(lam)
    grad = np.zeros(d)
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        t += 1
        eta = 1.0 / (lam * t)
        grad[:] = 0.0
        for p in range(start, stop):
            i = order[p]
            s = 0.0
            for k in range(d):
                s += w[k] * Xa[i, k]
            if y[i] * s < 1.0:
                for k in range(d):
                    grad[k] += y[i] * Xa[i, k]
        scale = 1.0 - eta * lam
        step = eta / (stop - start)
        norm2 = 0.0
        for k in range(d):
            w[k] = scale * w[k] + step * grad[k]
            norm2 += w[k] * w[k]
        if project and norm2 * lam > 1.0:
            shrink = radius / np.sqrt(norm2)
            for k in range(d):
                w[k] *= shrink
    return t


def primal_objective(w: np.ndarray, b: float, X: np.ndarray, y_signed: np.ndarray, lam: float):
    """``lam/2 (||w||^2 + b^2) + mean hinge``: the bias is regularised, as Pegasos learns it."""
    X = validation.array("X", X, ndim=2, min_size=1, finite=True, numeric=True)
    w = validation.array("w", w, ndim=1, numeric=True)
    y_signed = validation.array("y_signed", y_signed, ndim=1, numeric=True)
    validation.same_length("X", X, "y_signed", y_signed)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w: expected {X.shape[1]} weights to match X's columns, got {w.shape[0]}")
    b = validation.number("b", b)
    lam = validation.positive("lam", lam)
    margins = y_signed * (X @ w + b)
    return float(0.5 * lam * (w @ w + b * b) + np.maximum(0.0, 1.0 - margins).mean())


@dataclass(frozen=True)
class PegasosResult:
    """Weights, bias and the objective after every epoch (entry 0: before training, w = 0)."""

    w: np.ndarray = field(repr=False)
    b: float
    lam: float
    batch_size: int
    n_steps: int
    objective: np.ndarray = field(repr=False)
    classes: tuple

    @property
    def final_objective(self) -> float:
        return float(self.objective[-1])

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True)
        if X.shape[1] != self.w.shape[0]:
            raise ValueError(f"X: expected {self.w.shape[0]} columns, got {X.shape[1]}")
        return X @ self.w + self.b

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.classes)[(self.decision_function(X) > 0).astype(int)]

    def plot(self, ax=None, reference: float | None = None):
        """Objective against epochs (log scale above the reference, if one is given)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3))
        epochs = np.arange(self.objective.size)
        if reference is None:
            ax.plot(epochs, self.objective, marker=".")
            ax.set_ylabel("primal objective P(w)")
        else:
            ax.semilogy(epochs, np.maximum(self.objective - reference, 1e-12), marker=".")
            ax.set_ylabel("P(w) − P(reference)")
        ax.set_xlabel("epoch")
        ax.set_title(f"Pegasos, λ = {self.lam:.3g}, batch {self.batch_size}")
        return ax


def fit_pegasos(
    X: np.ndarray,
    y,
    *,
    lam: float = 1e-3,
    n_epochs: int = 20,
    batch_size: int = 1,
    project: bool = True,
    seed: int = 0,
) -> PegasosResult:
    """Train a linear SVM with Pegasos; ``X`` float64 (n, d), ``y`` two classes (n,).

    Each epoch visits the samples in a fresh random order (drawn from ``seed``) in batches of
    ``batch_size``; the objective ``P`` is recorded after every epoch.
    """
    from mlpar.algorithms.svm.smo import signed_labels

    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    validation.finite_data("X", X)  # bad data named as such, not later as a diverging step
    validation.same_length("X", X, "y", y)
    if np.asarray(y).dtype.kind == "f":
        validation.finite_data("y", np.asarray(y))
    y_signed, classes = signed_labels(y)
    lam = validation.positive("lam", lam)
    n_epochs = validation.positive_int("n_epochs", n_epochs, maximum=100_000)
    batch_size = validation.positive_int("batch_size", batch_size)
    project = validation.flag("project", project)
    rng = np.random.default_rng(validation.seed("seed", seed))

    n, d = X.shape
    Xa = np.ascontiguousarray(np.column_stack([X, np.ones(n)]))
    w = np.zeros(d + 1)
    curve = [primal_objective(w[:-1], w[-1], X, y_signed, lam)]
    t = 0
    for _ in range(n_epochs):
        t = _pegasos_epoch(Xa, y_signed, w, rng.permutation(n), lam, batch_size, t, project)
        curve.append(primal_objective(w[:-1], w[-1], X, y_signed, lam))
    return PegasosResult(
        w=w[:-1].copy(), b=float(w[-1]), lam=lam, batch_size=batch_size, n_steps=int(t),
        objective=np.array(curve), classes=classes,
    )
