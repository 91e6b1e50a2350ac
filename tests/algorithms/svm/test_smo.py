"""SMO against libsvm (scikit-learn's SVC) with the same C, kernel, gamma and tolerance."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_circles, make_moons
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mlpar.algorithms.svm import smo

TOL = 1e-3


def _split(X, y):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _dataset(name):
    if name == "moons":
        return _split(*make_moons(300, noise=0.25, random_state=0))
    if name == "circles":
        return _split(*make_circles(300, factor=0.5, noise=0.1, random_state=0))
    return _split(*load_breast_cancer(return_X_y=True))


CASES = [
    ("moons", {"kernel": "rbf", "C": 1.0, "gamma": 0.5}),
    ("moons", {"kernel": "rbf", "C": 10.0, "gamma": 2.0}),
    ("circles", {"kernel": "rbf", "C": 1.0, "gamma": 1.0}),
    ("circles", {"kernel": "poly", "C": 1.0, "gamma": 1.0, "degree": 2, "coef0": 1.0}),
    ("cancer", {"kernel": "rbf", "C": 1.0, "gamma": 0.02}),
    ("cancer", {"kernel": "linear", "C": 0.1}),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]['kernel']}-C{c[1]['C']}")
def fitted(request):
    name, params = request.param
    Xtr, Xte, ytr, yte = _dataset(name)
    ours = smo.fit_smo(Xtr, ytr, tol=TOL, **params)
    ref = SVC(tol=TOL, **params).fit(Xtr, ytr)
    return Xtr, Xte, ytr, yte, params, ours, ref


def _kernel(X, params):
    extra = {k: v for k, v in params.items() if k in ("gamma", "degree", "coef0")}
    metric = "polynomial" if params["kernel"] == "poly" else params["kernel"]
    return pairwise_kernels(X, metric=metric, **extra)


def test_dual_objective_matches_libsvm(fitted):
    Xtr, _, ytr, _, params, ours, ref = fitted
    y_signed, _ = smo.signed_labels(ytr)
    alpha = np.zeros(len(ytr))
    alpha[ref.support_] = np.abs(ref.dual_coef_[0])
    theirs = smo.dual_objective(_kernel(Xtr, params), y_signed, alpha)
    assert ours.converged
    assert ours.dual_objective == pytest.approx(theirs, rel=1e-3)
    # The objective reported from the gradient cache agrees with a direct evaluation.
    alpha_ours = np.zeros(len(ytr))
    alpha_ours[ours.support] = np.abs(ours.dual_coef)
    direct = smo.dual_objective(_kernel(Xtr, params), y_signed, alpha_ours)
    assert ours.dual_objective == pytest.approx(direct, rel=1e-10)


def test_same_test_accuracy_and_decisions(fitted):
    _, Xte, _, yte, _, ours, ref = fitted
    assert ours.score(Xte, yte) == ref.score(Xte, yte)
    np.testing.assert_array_equal(ours.predict(Xte), ref.predict(Xte))
    r = np.corrcoef(ours.decision_function(Xte), ref.decision_function(Xte))[0, 1]
    assert r > 0.999


def test_support_vectors_equal_away_from_ties(fitted):
    Xtr, _, ytr, _, _, ours, ref = fitted
    y_signed, _ = smo.signed_labels(ytr)
    margin = y_signed * ref.decision_function(Xtr)
    clear = np.abs(margin - 1.0) > 0.05  # points on the margin may be in either set: ties
    ours_sv = np.isin(np.arange(len(ytr)), ours.support)
    ref_sv = np.isin(np.arange(len(ytr)), ref.support_)
    np.testing.assert_array_equal(ours_sv[clear], ref_sv[clear])
    assert abs(ours.n_support - len(ref.support_)) <= max(3, 0.03 * len(ref.support_))


def test_kkt_conditions_hold(fitted):
    Xtr, _, ytr, _, _, ours, _ = fitted
    assert smo.kkt_violations(ours, Xtr, ytr).max() <= TOL * (1 + 1e-6)
    # The equality constraint sum y a = 0 holds to rounding.
    assert abs(ours.dual_coef.sum()) < 1e-9 * max(1.0, ours.C * len(ytr))
    assert np.all(np.abs(ours.dual_coef) <= ours.C)


def test_first_order_selection_reaches_the_same_solution():
    Xtr, Xte, ytr, yte = _dataset("moons")
    second = smo.fit_smo(Xtr, ytr, gamma=1.0, tol=1e-4)
    first = smo.fit_smo(Xtr, ytr, gamma=1.0, tol=1e-4, selection="first_order")
    assert first.dual_objective == pytest.approx(second.dual_objective, rel=1e-4)
    assert first.n_iter >= second.n_iter  # the second-order rule exists to save steps


def test_labels_and_gamma_scale_follow_sklearn():
    Xtr, Xte, ytr, _ = _dataset("moons")
    labels = np.where(ytr == 1, "yes", "no")
    ours = smo.fit_smo(Xtr, labels)
    ref = SVC().fit(Xtr, labels)
    assert ours.classes == ("no", "yes")
    np.testing.assert_array_equal(ours.predict(Xte), ref.predict(Xte))
    assert ours.gamma == pytest.approx(ref._gamma)


def test_pair_step_stays_in_box_keeps_equality_and_descends():
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(300):
        C = rng.uniform(0.1, 5)
        ai, aj = rng.uniform(0, C, size=2)  # both free: i may go up, j may go down
        yi, yj = rng.choice([-1.0, 1.0], size=2)
        Gi, Gj = rng.normal(size=2)
        if -yi * Gi + yj * Gj <= 0:  # SMO only steps on a violating pair
            continue
        Kii, Kjj, Kij = 1.0, 1.0, rng.uniform(-0.9, 0.9)
        t, ni, nj = smo.pair_step(ai, aj, yi, yj, Gi, Gj, Kii, Kjj, Kij, C)
        assert t > 0
        assert 0.0 <= ni <= C and 0.0 <= nj <= C
        assert yi * ni + yj * nj == pytest.approx(yi * ai + yj * aj, abs=1e-12)
        # Change of the dual objective along the step: slope * t + curvature * t^2 / 2 < 0.
        change = (yi * Gi - yj * Gj) * t + 0.5 * (Kii + Kjj - 2 * Kij) * t * t
        assert change < 0
        checked += 1
    assert checked > 100


def test_max_iter_warns_and_reports_not_converged():
    Xtr, _, ytr, _ = _dataset("moons")
    with pytest.warns(RuntimeWarning, match="max_iter"):
        model = smo.fit_smo(Xtr, ytr, gamma=1.0, max_iter=3)
    assert not model.converged and model.n_iter == 3


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"y": np.zeros(10)}, ValueError, "exactly two classes"),
        ({"y": np.arange(10) % 3}, ValueError, "exactly two classes"),
        ({"C": 0.0}, ValueError, "C: expected a number in"),
        ({"C": -1.0}, ValueError, "C: expected a number in"),
        ({"gamma": 0.0}, ValueError, "gamma"),
        ({"gamma": -2.0}, ValueError, "gamma"),
        ({"kernel": "sigmoid"}, ValueError, "kernel: expected one of"),
        ({"X": np.full((10, 2), np.nan)}, ValueError, "X: NaN at row 0, column 0"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"selection": "random"}, ValueError, "selection"),
        ({"kernel_rows": "some"}, ValueError, "kernel_rows"),
        ({"y": np.arange(9) % 2}, ValueError, "y: expected 10 rows"),
        ({"max_iter": 0}, ValueError, "max_iter"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"X": np.random.default_rng(0).normal(size=(10, 2)), "y": np.arange(10) % 2}
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(error, match=match):
        smo.fit_smo(X, y, **args)


def test_predict_checks_columns():
    Xtr, _, ytr, _ = _dataset("moons")
    model = smo.fit_smo(Xtr, ytr)
    with pytest.raises(ValueError, match="X: expected 2 columns"):
        model.predict(np.ones((3, 5)))


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear"])
def test_lazy_rows_and_full_matrix_give_the_same_solve(kernel):
    Xtr, _, ytr, _ = _dataset("circles")
    lazy = smo.fit_smo(Xtr, ytr, kernel=kernel, gamma=0.7, coef0=1.0)
    full = smo.fit_smo(Xtr, ytr, kernel=kernel, gamma=0.7, coef0=1.0, kernel_rows="all")
    assert lazy.n_iter == full.n_iter
    np.testing.assert_array_equal(lazy.support, full.support)
    np.testing.assert_allclose(lazy.dual_coef, full.dual_coef, rtol=1e-9, atol=1e-12)


def test_too_many_samples_points_to_the_cascade():
    n = smo.MAX_SAMPLES + 1
    X = np.zeros((n, 1))
    with pytest.raises(ValueError, match="svm.cascade"):
        smo.fit_smo(X, np.arange(n) % 2)
