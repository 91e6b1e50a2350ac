import numpy as np
import pytest

from mlpar import mapreduce
from mlpar.exercises import mapreduce as ex


def good_gradient(X, y, w, n_workers):
    parts = mapreduce.shards(len(y), n_workers)
    return sum(X[s].T @ (X[s] @ w - y[s]) for s in parts) / len(y)


def good_round_time(m, t, c):
    return max((m + 1) * t + c, 2 * m * t)


def good_simulate_round(compute, t):
    m = len(compute)
    done = sorted(((i + 1) * t + c, i) for i, c in enumerate(compute))
    link = m * t
    for finished, _ in done:
        link = max(link, finished) + t
    return link


def test_solutions_pass(capsys):
    ex.check_mapreduce_gradient(good_gradient)
    ex.check_round_time(good_round_time)
    ex.check_simulate_round(good_simulate_round)
    assert capsys.readouterr().out.count("passed") == 3


def test_wrong_answers_fail_with_a_hint():
    with pytest.raises(AssertionError, match="gradient"):
        ex.check_mapreduce_gradient(lambda X, y, w, m: good_gradient(X, y, w, m) * len(y))
    with pytest.raises(AssertionError, match="one link"):
        ex.check_round_time(lambda m, t, c: 2 * t + c)  # forgets that messages queue
    with pytest.raises(AssertionError, match="first come"):
        ex.check_simulate_round(lambda comp, t: len(comp) * t + max(comp) + t)


def test_unfinished_placeholder_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_mapreduce_gradient, ex.check_round_time, ex.check_simulate_round):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)


def test_reference_round_matches_closed_form():
    assert ex._simulated_round([2.0, 2.0, 10.0], 1.0) == 14.0
    assert np.isclose(ex._simulated_round([0.5] * 4, 1.0), 8.0)
