"""Kernel SVM trained by Sequential Minimal Optimization (SMO), the algorithm inside libsvm.

The dual problem of the soft-margin SVM with labels ``y_i in {-1, +1}`` is

    minimise   f(a) = 1/2 a^T Q a - sum_i a_i,     Q_ij = y_i y_j K(x_i, x_j)
    subject to 0 <= a_i <= C,   sum_i y_i a_i = 0.

SMO changes two multipliers at a time, the smallest step that keeps ``sum y_i a_i = 0``:
``a_i += y_i t`` and ``a_j -= y_j t``. Along that line ``f`` is a parabola in ``t`` with slope
``y_i G_i - y_j G_j`` and curvature ``K_ii + K_jj - 2 K_ij``, where ``G = Q a - 1`` is the
gradient, kept up to date after every step (the "gradient cache"; Platt's original paper keeps
the equivalent error cache ``E_i = f(x_i) - y_i``). The step is the parabola's minimum, clipped
to the box.

Working-set selection (which pair): with ``I_up`` the indices whose ``a_i`` may move so that
``y_i a_i`` grows and ``I_low`` those where it may shrink,

* ``i`` maximises ``-y_i G_i`` over ``I_up`` (the worst KKT violator);
* ``'second_order'`` (libsvm, Fan, Chen & Lin 2005): ``j`` maximises the guaranteed decrease
  ``b^2 / a`` with ``b = -y_i G_i + y_j G_j > 0`` and ``a = K_ii + K_jj - 2 K_ij``;
* ``'first_order'``: ``j`` minimises ``-y_j G_j`` over ``I_low`` (the maximal violating pair).

The loop stops when ``max_{I_up} -y G - min_{I_low} -y G < tol``, libsvm's stopping rule, so
the same ``tol`` as scikit-learn's ``SVC(tol=...)`` means the same thing here.

Binary only. One-vs-one (what ``SVC`` does for k classes) trains k(k-1)/2 of these machines,
one per pair of classes on that pair's samples, and predicts by majority vote.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numba
import numpy as np

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.core import threads as _threads  # noqa: F401  (thread-safe numba layer, before any call)
from mlpar.core import validation

MAX_SAMPLES = 20_000  # the kernel matrix is n*n*8 bytes: 3.2 GB here; beyond it, use a cascade
TAU = 1e-12  # libsvm's floor for a non-positive curvature


def pair_step(alpha_i, alpha_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    """One SMO update of the pair ``(i, j)``; returns the step ``t`` and the new ``a_i, a_j``.

    ``t`` is the minimum of the parabola ``f(a_i + y_i t, a_j - y_j t)``, clipped so that both
    multipliers stay in ``[0, C]``. With ``i`` in ``I_up`` and ``j`` in ``I_low``, ``t >= 0``.
    """
    curvature = K_ii + K_jj - 2.0 * K_ij
    if curvature <= 0.0:
        curvature = TAU
    t = (-y_i * G_i + y_j * G_j) / curvature
    # How far each multiplier may move in the direction of the step before it hits the box.
    room_i = C - alpha_i if y_i > 0 else alpha_i
    room_j = alpha_j if y_j > 0 else C - alpha_j
    t = min(t, room_i, room_j)
    new_i = alpha_i + y_i * t
    new_j = alpha_j - y_j * t
    # Land exactly on a bound when clipped, so "a_i == C" and "a_i == 0" tests stay exact.
    if t == room_i:
        new_i = C if y_i > 0 else 0.0
    if t == room_j:
        new_j = 0.0 if y_j > 0 else C
    return t, new_i, new_j


_pair_step = numba.njit(cache=True)(pair_step)


@numba.njit(cache=True, nogil=True)
def _ensure_row(K, have, X, i, code, gamma, degree, coef0):
    # Kernel rows on demand: a solve touches only the rows of the pairs it selects, often far
    # fewer than n, so computing them lazily (libsvm's kernel cache does the same) saves work.
    if not have[i]:
        kernels._gram_row(X, X, i, code, gamma, degree, coef0, K)
        have[i] = True


@numba.njit(cache=True, nogil=True)
def _smo_loop(K, have, diag, X, code, gamma, degree, coef0, y, C, tol, max_iter, second_order,
              alpha, G):
    # K: (n, n) kernel rows, filled where have[i]; diag: (n,) K[t, t]; y: (n,) +-1.0;
    # alpha, G: (n,) updated in place.
    n = y.shape[0]
    it = 0
    gap = np.inf
    while it < max_iter:
        # i: the most violating index in I_up.
        g_max = -np.inf
        i = -1
        for t in range(n):
            if (y[t] > 0 and alpha[t] < C) or (y[t] < 0 and alpha[t] > 0):
                v = -y[t] * G[t]
                if v >= g_max:
                    g_max = v
                    i = t
        # j: over I_low, and the smallest -y G there for the stopping rule.
        g_min = np.inf
        best = np.inf
        j = -1
        if i >= 0 and second_order:
            _ensure_row(K, have, X, i, code, gamma, degree, coef0)
        for t in range(n):
            if (y[t] > 0 and alpha[t] > 0) or (y[t] < 0 and alpha[t] < C):
                v = -y[t] * G[t]
                if v < g_min:
                    g_min = v
                if i >= 0:
                    b = g_max - v
                    if b > 0.0:
                        if second_order:
                            a = diag[i] + diag[t] - 2.0 * K[i, t]
                            if a <= 0.0:
                                a = TAU
                            score = -(b * b) / a
                        else:
                            score = v
                        if score <= best:
                            best = score
                            j = t
        gap = g_max - g_min
        if gap < tol or j < 0:
            break
        _ensure_row(K, have, X, i, code, gamma, degree, coef0)
        _ensure_row(K, have, X, j, code, gamma, degree, coef0)
        step, ai, aj = _pair_step(
            alpha[i], alpha[j], y[i], y[j], G[i], G[j], diag[i], diag[j], K[i, j], C
        )
        alpha[i] = ai
        alpha[j] = aj
        # Gradient cache: G_k += y_k t (K_ki - K_kj); rows i and j are contiguous (K symmetric).
        for k in range(n):
            G[k] += y[k] * step * (K[i, k] - K[j, k])
        it += 1
    return it, gap


@numba.njit(cache=True, nogil=True)
def _rho(y, alpha, G, C):
    # libsvm's bias: the mean of y G over free multipliers, else the middle of the feasible range.
    ub = np.inf
    lb = -np.inf
    total = 0.0
    n_free = 0
    for t in range(y.shape[0]):
        yg = y[t] * G[t]
        if alpha[t] >= C:
            if y[t] < 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        elif alpha[t] <= 0.0:
            if y[t] > 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        else:
            n_free += 1
            total += yg
    return total / n_free if n_free > 0 else 0.5 * (ub + lb)


@dataclass(frozen=True)
class SVMModel:
    """A trained binary kernel SVM: ``f(x) = sum_s dual_coef[s] K(sv_s, x) + intercept``.

    ``dual_coef`` holds ``y_s a_s`` for the support vectors (``a_s > 0``), as in scikit-learn;
    ``classes[1]`` is the positive class (``f > 0``).
    """

    support: np.ndarray = field(repr=False)
    support_vectors: np.ndarray = field(repr=False)
    dual_coef: np.ndarray = field(repr=False)
    intercept: float
    classes: tuple
    kernel: str
    C: float
    gamma: float
    degree: int
    coef0: float
    tol: float
    n_iter: int
    gap: float
    dual_objective: float
    converged: bool

    @property
    def n_support(self) -> int:
        return int(self.support.shape[0])

    def decision_function(self, X: np.ndarray, *, parallel: bool = True) -> np.ndarray:
        """``f(X)``, shape ``(m,)``: positive means ``classes[1]``."""
        X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
        if X.shape[1] != self.support_vectors.shape[1]:
            raise ValueError(
                f"X: expected {self.support_vectors.shape[1]} columns as in training, "
                f"got {X.shape[1]}"
            )
        Kx = kernels.kernel_matrix(
            X, self.support_vectors, kernel=self.kernel, gamma=self.gamma,
            degree=self.degree, coef0=self.coef0, parallel=parallel,
        )
        return Kx @ self.dual_coef + self.intercept

    def predict(self, X: np.ndarray, *, parallel: bool = True) -> np.ndarray:
        labels = np.asarray(self.classes)
        return labels[(self.decision_function(X, parallel=parallel) > 0).astype(int)]

    def score(self, X: np.ndarray, y: np.ndarray, *, parallel: bool = True) -> float:
        """Accuracy on ``(X, y)``."""
        validation.same_length("X", X, "y", y)
        return float(np.mean(self.predict(X, parallel=parallel) == np.asarray(y)))


def signed_labels(y) -> tuple[np.ndarray, tuple]:
    """Map two class labels to ``-1.0`` (``classes[0]``) and ``+1.0`` (``classes[1]``)."""
    if isinstance(y, np.ndarray):
        validation.real_array("y", y)
    y = np.asarray(y)
    if y.dtype.kind not in "iubfUS":
        raise TypeError(f"y: expected class labels (integers, strings or numbers), got dtype {y.dtype}")
    if y.ndim != 1:
        raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y: expected finite labels, got NaN or inf")
    classes = np.unique(y)
    if classes.size != 2:
        raise ValueError(
            f"y: expected exactly two classes (binary SVM; use one-vs-one for more), "
            f"got {classes.size}: {classes[:5].tolist()}"
        )
    return np.where(y == classes[1], 1.0, -1.0), (classes[0].item(), classes[1].item())


def svm_params(X: np.ndarray, *, C: float = 1.0, kernel: str = "rbf", gamma="scale",
               degree: int = 3, coef0: float = 0.0, tol: float = 1e-3) -> dict:
    """The SVM's parameters, validated, with ``gamma='scale'`` resolved on ``X``.

    What every solver of the same SVM shares (``fit_smo_fast``, the cascade): one dict that can
    be passed on as ``fit_smo(X, y, **params)``.
    """
    params = {"C": validation.positive("C", C), "kernel": kernel,
              "gamma": kernels.resolve_gamma(gamma, X), "degree": degree, "coef0": coef0,
              "tol": validation.number("tol", tol, low=0.0, high=1.0, low_open=True)}
    _, params["gamma"], params["degree"], params["coef0"] = kernels.check_kernel_args(
        kernel, params["gamma"], degree, coef0)
    return params


def dual_objective(K: np.ndarray, y_signed: np.ndarray, alpha: np.ndarray) -> float:
    """``1/2 a^T Q a - sum a`` with ``Q = (y y^T) * K``: what SMO (and libsvm) minimise."""
    y_signed = validation.array("y_signed", y_signed, ndim=1, min_size=1, numeric=True)
    alpha = validation.array("alpha", alpha, ndim=1, numeric=True)
    K = validation.array("K", K, ndim=2, numeric=True, finite=True)
    validation.same_shape("y_signed", y_signed, "alpha", alpha)
    if K.shape != (y_signed.size, y_signed.size):
        raise ValueError(f"K: expected shape {(y_signed.size, y_signed.size)}, got {K.shape}")
    ya = y_signed * alpha
    return float(0.5 * ya @ K @ ya - alpha.sum())


def _check_kernel_values(values, kernel, gamma, degree, coef0) -> None:
    # An overflowing kernel (a polynomial of degree 500) gives inf/NaN entries, and SMO on them
    # "converges" to a NaN model; refuse it with the parameters that caused it.
    if not np.all(np.isfinite(values)):
        detail = f"degree={degree}, gamma={gamma:g}, coef0={coef0:g}" if kernel == "poly" else (
            f"gamma={gamma:g}")
        raise ValueError(
            f"kernel: expected finite kernel values, got NaN or inf from the {kernel!r} kernel "
            f"with {detail} on X; lower the degree or gamma, or scale X"
        )


def fit_smo(
    X: np.ndarray,
    y,
    *,
    C: float = 1.0,
    kernel: str = "rbf",
    gamma="scale",
    degree: int = 3,
    coef0: float = 0.0,
    tol: float = 1e-3,
    selection: str = "second_order",
    max_iter: int | None = None,
    kernel_rows: str = "lazy",
    parallel: bool = True,
) -> SVMModel:
    """Train a binary kernel SVM with SMO.

    Parameters
    ----------
    X : float64 array, shape (n, d); y : labels, shape (n,), exactly two distinct values.
    C : box constraint (> 0). kernel, gamma, degree, coef0 : as ``SVC`` (``gamma='scale'`` too).
    tol : stopping tolerance on the maximal KKT violation (libsvm's ``eps``).
    selection : 'second_order' (libsvm's rule) or 'first_order' (maximal violating pair).
    max_iter : cap on pair updates; default ``max(10_000_000, 100 n)`` as libsvm.
    kernel_rows : 'lazy' computes a kernel row the first time a selected pair needs it (serial,
        inside the loop); 'all' computes the whole matrix first with ``kernels.kernel_matrix``.
    parallel : with ``kernel_rows='all'``, compute the matrix on numba's threads. The SMO loop
        itself is serial: each step depends on the gradient the previous one left.
    """
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    validation.finite_data("X", X)  # bad data named as such, before the solver starts
    validation.same_length("X", X, "y", y)
    if np.asarray(y).dtype.kind == "f":
        validation.finite_data("y", np.asarray(y))
    y_signed, classes = signed_labels(y)
    parallel = validation.flag("parallel", parallel)
    n = X.shape[0]
    if n > MAX_SAMPLES:
        raise ValueError(
            f"X: expected at most {MAX_SAMPLES} rows (the kernel matrix is n*n*8 bytes), got {n}; "
            "train on shards with mlpar.algorithms.svm.cascade instead"
        )
    C = validation.positive("C", C)
    gamma = kernels.resolve_gamma(gamma, X)
    code, gamma, degree, coef0 = kernels.check_kernel_args(kernel, gamma, degree, coef0)
    tol = validation.number("tol", tol, low=0.0, high=1.0, low_open=True)
    validation.choice("selection", selection, ("second_order", "first_order"))
    validation.choice("kernel_rows", kernel_rows, ("lazy", "all"))
    if max_iter is None:
        max_iter = max(10_000_000, 100 * n)
    max_iter = validation.positive_int("max_iter", max_iter, maximum=10**9)

    X = np.ascontiguousarray(X)
    if kernel_rows == "all":
        K = kernels.kernel_matrix(
            X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, parallel=parallel
        )
        have = np.ones(n, dtype=np.bool_)
        diag = np.diag(K).copy()
    else:
        K = np.empty((n, n))  # untouched pages cost no memory until a row is computed
        have = np.zeros(n, dtype=np.bool_)
        diag = np.empty(n)
        kernels._kernel_diagonal(X, code, gamma, degree, coef0, diag)
    _check_kernel_values(diag if kernel_rows == "lazy" else K, kernel, gamma, degree, coef0)
    alpha = np.zeros(n)
    G = -np.ones(n)  # gradient of f at a = 0
    n_iter, gap = _smo_loop(
        K, have, diag, X, code, gamma, degree, coef0, y_signed, C, tol, max_iter,
        selection == "second_order", alpha, G,
    )
    if not (np.isfinite(gap) and np.all(np.isfinite(G))):
        _check_kernel_values(np.array([np.nan]), kernel, gamma, degree, coef0)
    params = {"C": C, "kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0,
              "tol": tol}
    return SVMModel(**solution_fields(X, y_signed, classes, alpha, G, params, n_iter=n_iter,
                                      gap=gap, max_iter=max_iter))


def solution_fields(X, y_signed, classes, alpha, G, params: dict, *, n_iter: int, gap: float,
                    max_iter: int) -> dict:
    """``SVMModel``'s fields from a solver's final multipliers ``alpha`` and gradient ``G``.

    Warns when the solver stopped at ``max_iter`` before the gap fell under ``tol``.
    """
    converged = bool(gap < params["tol"])
    if not converged:
        warnings.warn(
            f"SMO stopped after max_iter={max_iter} pair updates with a KKT gap of {gap:.3g} "
            f"(tol={params['tol']}); raise max_iter or tol", RuntimeWarning, stacklevel=3,
        )
    rho = _rho(y_signed, alpha, G, params["C"])
    support = np.flatnonzero(alpha > 0)
    # From the gradient cache: Q a = G + 1, so f(a) = 1/2 a.(G + 1) - sum a = 1/2 a.(G - 1).
    objective = float(0.5 * alpha @ (G - 1.0))
    return dict(
        support=support, support_vectors=X[support].copy(), dual_coef=(y_signed * alpha)[support],
        intercept=float(-rho), classes=classes, n_iter=int(n_iter), gap=float(gap),
        dual_objective=objective, converged=converged, **params,
    )


def kkt_violations(model: SVMModel, X: np.ndarray, y) -> np.ndarray:
    """How far each training point is from its KKT condition, shape ``(n,)``, in units of margin.

    With ``m_i = y_i f(x_i)``: a point with ``a_i = 0`` needs ``m_i >= 1``, one with ``a_i = C``
    needs ``m_i <= 1``, and a free one ``m_i = 1``. At an SMO solution with tolerance ``tol``
    every entry is at most ``tol`` (up to rounding).
    """
    if not isinstance(model, SVMModel):
        raise TypeError(f"model: expected an SVMModel (fit_smo), got {type(model).__name__}")
    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
    y_signed, _ = signed_labels(y)
    validation.same_length("X", X, "y", y)
    margins = y_signed * model.decision_function(X)
    alpha = np.zeros(len(y_signed))
    alpha[model.support] = np.abs(model.dual_coef)
    at_zero = alpha == 0
    at_c = alpha >= model.C
    free = ~at_zero & ~at_c
    out = np.zeros_like(margins)
    out[at_zero] = np.maximum(0.0, 1.0 - margins[at_zero])
    out[at_c] = np.maximum(0.0, margins[at_c] - 1.0)
    out[free] = np.abs(margins[free] - 1.0)
    return out

