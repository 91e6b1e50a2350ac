"""The fast SMO solves the same SVM as the readable one and as libsvm, whatever its settings."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_circles, make_moons
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mlpar.algorithms.svm import smo, smo_fast

TOL = 1e-3


def _data(name):
    if name == "moons":
        return make_moons(300, noise=0.25, random_state=0)
    if name == "circles":  # the hard problem of the benchmark, small
        return make_circles(400, noise=0.2, factor=0.5, random_state=0)
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


CASES = [
    ("moons", {"kernel": "rbf", "C": 1.0, "gamma": 0.5}),
    ("circles", {"kernel": "rbf", "C": 100.0, "gamma": 2.0}),
    ("circles", {"kernel": "rbf", "C": 1000.0, "gamma": 10.0}),
    ("circles", {"kernel": "poly", "C": 1.0, "gamma": 1.0, "degree": 2, "coef0": 1.0}),
    ("cancer", {"kernel": "rbf", "C": 10.0, "gamma": 0.02}),
    ("cancer", {"kernel": "linear", "C": 0.1}),
]
IDS = [f"{name}-{p['kernel']}-C{p['C']:g}" for name, p in CASES]


def _alpha(model, n):
    alpha = np.zeros(n)
    alpha[model.support] = np.abs(model.dual_coef)
    return alpha


def _kernel(X, params):
    extra = {k: v for k, v in params.items() if k in ("gamma", "degree", "coef0")}
    metric = "polynomial" if params["kernel"] == "poly" else params["kernel"]
    return pairwise_kernels(X, metric=metric, **extra)


def _same_support_up_to_ties(a_support, b_support, X, y, reference):
    # Points on the margin (y f(x) = 1) may be in either set with a tiny multiplier: ties.
    y_signed, _ = smo.signed_labels(y)
    margin = y_signed * reference.decision_function(X)
    clear = np.abs(margin - 1.0) > 0.05
    in_a = np.isin(np.arange(len(y)), a_support)
    in_b = np.isin(np.arange(len(y)), b_support)
    np.testing.assert_array_equal(in_a[clear], in_b[clear])


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_same_solution_as_readable_smo_and_libsvm(name, params):
    X, y = _data(name)
    fast = smo_fast.fit_smo_fast(X, y, tol=TOL, **params)
    readable = smo.fit_smo(X, y, tol=TOL, **params)
    ref = SVC(tol=TOL, **params).fit(X, y)
    y_signed, _ = smo.signed_labels(y)
    K = _kernel(X, params)
    theirs = smo.dual_objective(K, y_signed, np.abs(np.bincount(ref.support_, np.abs(
        ref.dual_coef_[0]), minlength=len(y))))
    assert fast.converged
    assert fast.dual_objective == pytest.approx(readable.dual_objective, rel=1e-3)
    assert fast.dual_objective == pytest.approx(theirs, rel=1e-3)
    # The objective from the solver's gradient equals a direct evaluation: the gradient of the
    # multipliers dropped by shrinking was rebuilt correctly.
    direct = smo.dual_objective(K, y_signed, _alpha(fast, len(y)))
    assert fast.dual_objective == pytest.approx(direct, rel=1e-9)
    _same_support_up_to_ties(fast.support, ref.support_, X, y, ref)
    _same_support_up_to_ties(fast.support, readable.support, X, y, ref)
    # KKT holds on every point, not only on the active set.
    assert smo.kkt_violations(fast, X, y).max() <= TOL * (1 + 1e-6)
    # Decision values agree with libsvm's, relative to their scale.
    f_ours, f_ref = fast.decision_function(X), ref.decision_function(X)
    assert np.max(np.abs(f_ours - f_ref)) <= 0.02 * max(1.0, np.max(np.abs(f_ref)))


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_without_shrinking_it_takes_the_readable_solvers_exact_steps(name, params):
    X, y = _data(name)
    fast = smo_fast.fit_smo_fast(X, y, tol=TOL, shrinking=False, **params)
    readable = smo.fit_smo(X, y, tol=TOL, **params)
    assert fast.n_iter == readable.n_iter
    np.testing.assert_array_equal(fast.support, readable.support)
    np.testing.assert_allclose(fast.dual_coef, readable.dual_coef, rtol=1e-12, atol=1e-12)
    assert fast.smallest_active_set == len(y) and fast.shrink_passes == 0


@pytest.mark.parametrize(("name", "params"), CASES[1:3], ids=IDS[1:3])
def test_shrinking_on_and_off_give_the_same_solution(name, params):
    X, y = _data(name)
    on = smo_fast.fit_smo_fast(X, y, tol=TOL, shrinking=True, **params)
    off = smo_fast.fit_smo_fast(X, y, tol=TOL, shrinking=False, **params)
    assert on.dual_objective == pytest.approx(off.dual_objective, rel=1e-4)
    f_on, f_off = on.decision_function(X), off.decision_function(X)
    assert np.max(np.abs(f_on - f_off)) <= 0.02 * np.max(np.abs(f_off))
    _same_support_up_to_ties(on.support, off.support, X, y, off)
    # Shrinking did happen, and it scanned fewer multipliers per step.
    assert on.shrink_passes > 0 and on.smallest_active_set < len(y)
    assert on.mean_active_set < off.mean_active_set


@pytest.mark.parametrize("shrinking", [True, False])
def test_any_cache_size_gives_the_same_solution(shrinking):
    X, y = _data("circles")
    params = {"C": 100.0, "gamma": 2.0, "tol": TOL, "shrinking": shrinking}
    models = [smo_fast.fit_smo_fast(X, y, cache_mb=mb, **params) for mb in (200, 0.5, 0.01, 0)]
    assert [m.cache_columns for m in models] == [400, 163, 3, 2]
    for m in models[1:]:  # the same kernel values in the same order: the very same steps
        assert m.n_iter == models[0].n_iter
        np.testing.assert_array_equal(m.support, models[0].support)
        np.testing.assert_array_equal(m.dual_coef, models[0].dual_coef)
    evaluations = [m.kernel_evaluations for m in models]
    assert evaluations == sorted(evaluations)  # a smaller cache recomputes more
    assert evaluations[-1] > 5 * evaluations[0]
    assert models[0].cache_misses <= len(y) * 2  # a large cache computes each column ~once


def test_max_iter_warns_and_still_reports_a_correct_gradient():
    X, y = _data("circles")
    with pytest.warns(RuntimeWarning, match="max_iter"):
        model = smo_fast.fit_smo_fast(X, y, C=1000.0, gamma=10.0, max_iter=2500)
    assert not model.converged and model.n_iter == 2500
    y_signed, _ = smo.signed_labels(y)
    direct = smo.dual_objective(_kernel(X, {"kernel": "rbf", "gamma": 10.0}), y_signed,
                                _alpha(model, len(y)))
    assert model.dual_objective == pytest.approx(direct, rel=1e-9)


def test_labels_classes_and_model_type():
    X, y = _data("moons")
    labels = np.where(y == 1, "yes", "no")
    model = smo_fast.fit_smo_fast(X, labels)
    assert isinstance(model, smo.SVMModel) and model.classes == ("no", "yes")
    np.testing.assert_array_equal(model.predict(X), SVC().fit(X, labels).predict(X))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"shrinking": 1}, TypeError, "shrinking: expected True or False"),
        ({"cache_mb": -1.0}, ValueError, "cache_mb"),
        ({"selection": "first_order"}, TypeError, "unexpected keyword"),
        ({"C": 0.0}, ValueError, "C: expected a number in"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"kernel": "sigmoid"}, ValueError, "kernel: expected one of"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"y": np.zeros(10)}, ValueError, "exactly two classes"),
        ({"X": np.ones(10)}, ValueError, "X"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"X": np.random.default_rng(0).normal(size=(10, 2)), "y": np.arange(10) % 2}
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(error, match=match):
        smo_fast.fit_smo_fast(X, y, **args)
