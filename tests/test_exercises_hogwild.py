"""The lesson 04 checks accept the reference solutions and reject typical mistakes."""

import numpy as np
import pytest

from mlpar.exercises import hogwild as ex


def delta_solution(indptr, indices, n_features):
    degree = np.bincount(indices, minlength=n_features)
    return degree.max() / np.count_nonzero(np.diff(indptr))


def rho_solution(indptr, indices):
    rows = [set(indices[indptr[i] : indptr[i + 1]]) for i in range(len(indptr) - 1)]
    rows = [r for r in rows if r]
    return max(sum(bool(r & s) for s in rows) for r in rows) / len(rows)


def sgd_step_solution(w, cols, vals, label, step):
    margin = vals @ w[cols]
    z = label * margin
    minus_sigmoid = -np.exp(-z) / (1 + np.exp(-z)) if z >= 0 else -1 / (1 + np.exp(z))
    w[cols] -= step * label * minus_sigmoid * vals


def test_reference_solutions_pass(capsys):
    ex.check_delta(delta_solution)
    ex.check_rho(rho_solution)
    ex.check_sgd_step(sgd_step_solution)
    out = capsys.readouterr().out
    assert out.count("passed") == 3


def test_delta_without_normalising_fails():
    with pytest.raises(AssertionError, match="Exercise 1"):
        ex.check_delta(lambda indptr, indices, n: float(np.bincount(indices).max()))


def test_rho_without_counting_the_row_itself_gets_a_hint():
    def rho_minus_self(indptr, indices):
        return rho_solution(indptr, indices) - 1 / (len(indptr) - 1)

    with pytest.raises(AssertionError, match="with itself"):
        ex.check_rho(rho_minus_self)


def test_sgd_step_with_the_wrong_sign_fails():
    def wrong_sign(w, cols, vals, label, step):
        sgd_step_solution(w, cols, vals, label, -step)

    with pytest.raises(AssertionError, match="differs from the reference"):
        ex.check_sgd_step(wrong_sign)


def test_sgd_step_that_copies_fails():
    def copies(w, cols, vals, label, step):
        w = w.copy()
        sgd_step_solution(w, cols, vals, label, step)
        return w

    with pytest.raises(AssertionError, match="in place"):
        ex.check_sgd_step(copies)


def test_unfinished_placeholder_says_not_done():
    def placeholder(*args):
        raise NotImplementedError

    for check in (ex.check_delta, ex.check_rho, ex.check_sgd_step):
        with pytest.raises(AssertionError, match="not done yet"):
            check(placeholder)
