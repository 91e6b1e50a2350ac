"""The lesson 05 checks accept correct solutions written several ways and reject a catalogue of
plausible wrong ones, each with a message naming the exercise, the case and what was wrong."""

import numpy as np
import pytest

from mlpar.core import splits
from mlpar.exercises import l05_mapreduce as ex

GRADIENT = "Exercise 1"
ROUND = "Exercise 2"
STRAGGLERS = "Exercise 3"


def good_gradient(X, y, w, n_workers):
    parts = splits.shards(len(y), n_workers)
    return sum(X[s].T @ (X[s] @ w - y[s]) for s in parts) / len(y)


def other_gradient(X, y, w, n_workers):  # np.array_split and einsum, written differently
    total = np.zeros(X.shape[1])
    for Xi, yi in zip(np.array_split(X, n_workers), np.array_split(y, n_workers), strict=True):
        total += np.einsum("ij,i->j", Xi, Xi @ w - yi)
    return total / len(y)


def good_round_time(m, t, c):
    return max((m + 1) * t + c, 2 * m * t)


def other_round_time(m, t, c):
    link, last = m * t, 0.0
    for i in range(m):
        last = link = max(link, (i + 1) * t + c) + t
    return last


def good_simulate_round(compute, t):
    m = len(compute)
    done = sorted(((i + 1) * t + c, i) for i, c in enumerate(compute))
    link = m * t
    for finished, _ in done:
        link = max(link, finished) + t
    return link


def other_simulate_round(compute, t):
    import heapq

    events = [((i + 1) * t + c, i) for i, c in enumerate(compute)]
    heapq.heapify(events)
    link = len(compute) * t
    while events:
        link = max(link, heapq.heappop(events)[0]) + t
    return link


def test_solutions_pass(capsys):
    for gradient in (good_gradient, other_gradient):
        ex.check_mapreduce_gradient(gradient)
    for round_time in (good_round_time, other_round_time):
        ex.check_round_time(round_time)
    for simulate in (good_simulate_round, other_simulate_round):
        ex.check_simulate_round(simulate)
    assert capsys.readouterr().out.count("passed") == 6


def asarray_gradient(X, y, w, n_workers):  # converts the input first, then shards: right
    X, y = np.asarray(X, dtype=float), np.array(y)
    total = np.zeros(X.shape[1])
    for s in splits.shards(len(y), n_workers):
        total += X[s].T @ (X[s] @ w - y[s])
    return total / len(y)


def test_converting_the_input_first_is_a_style_not_a_way_round(capsys):
    originals = (np.asarray, np.array, np.ascontiguousarray)
    ex.check_mapreduce_gradient(asarray_gradient)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="computed on all"):  # converted, then whole
        ex.check_mapreduce_gradient(lambda X, y, w, m: _whole(np.asarray(X), np.asarray(y), w, m))
    with pytest.raises(AssertionError, match="shards taken from X"):  # a list hides the shards
        ex.check_mapreduce_gradient(
            lambda X, y, w, m: _whole(np.array(X.tolist()), np.array(y.tolist()), w, m))
    with pytest.raises(AssertionError, match="raised ZeroDivisionError"):
        ex.check_mapreduce_gradient(lambda X, y, w, m: 1 / 0)
    assert (np.asarray, np.array, np.ascontiguousarray) == originals  # numpy is given back


def _whole(X, y, w, m):
    return X.T @ (X @ w - y) / len(y)


def _whole_after_split(X, y, w, m):  # takes shards, then ignores them
    _ = [X[s] for s in splits.shards(len(y), m)]
    return np.dot(X.T, np.dot(X, w) - y) / len(y)


def _shard_means(X, y, w, m):
    parts = splits.shards(len(y), m)
    return sum(X[s].T @ (X[s] @ w - y[s]) / (s.stop - s.start) for s in parts)


def _off_by_one(X, y, w, m):
    k = len(y) // m
    return sum(X[i * k:(i + 1) * k - 1].T @ (X[i * k:(i + 1) * k - 1] @ w - y[i * k:(i + 1) * k - 1])
               for i in range(m)) / len(y)


def _equal_shards_drop_remainder(X, y, w, m):
    k = len(y) // m
    return sum(X[i * k:(i + 1) * k].T @ (X[i * k:(i + 1) * k] @ w - y[i * k:(i + 1) * k])
               for i in range(m)) / len(y)


def _divide_by_workers(X, y, w, m):
    return good_gradient(X, y, w, m) * len(y) / m


WRONG_GRADIENTS = {
    "whole data set": (_whole, "computed on all"),
    "whole data set after taking shards": (_whole_after_split, "computed on all"),
    "missing 1/n": (lambda X, y, w, m: good_gradient(X, y, w, m) * len(y), "missing 1/n"),
    "mean of shard means": (_shard_means, "Exercise 1"),
    "off-by-one shards": (_off_by_one, "differs from the reference"),
    "remainder rows dropped": (_equal_shards_drop_remainder, "differs from the reference"),
    "divided by workers, not rows": (_divide_by_workers, "Exercise 1"),
    "transposed X": (lambda X, y, w, m: good_gradient(X, y, w, m)[:, None], "shape"),
    "returns None": (lambda X, y, w, m: None, "None"),
    "returns a list": (lambda X, y, w, m: list(good_gradient(X, y, w, m)), "got list"),
    "NaN": (lambda X, y, w, m: good_gradient(X, y, w, m) * np.nan, "NaN"),
    "raises": (lambda X, y, w, m: X.nope, "raised AttributeError"),
}


@pytest.mark.parametrize("case", WRONG_GRADIENTS)
def test_wrong_gradients_are_rejected(case):
    wrong, message = WRONG_GRADIENTS[case]
    with pytest.raises(AssertionError, match=GRADIENT) as info:
        ex.check_mapreduce_gradient(wrong)
    assert message in str(info.value)
    assert "worker" in str(info.value) or "raised" in str(info.value)  # names the case


WRONG_ROUNDS = {
    "messages never queue": lambda m, t, c: 2 * t + c,
    "compute-bound only": lambda m, t, c: (m + 1) * t + c,
    "link-bound only": lambda m, t, c: 2 * m * t,
    "everything in sequence": lambda m, t, c: 2 * m * t + c,
    "replies counted once": lambda m, t, c: m * t + c,
    "None": lambda m, t, c: None,
    "a list": lambda m, t, c: [1.0, 2.0],
    "NaN": lambda m, t, c: float("nan"),
    "raises": lambda m, t, c: 1 / 0,
    # the simulator's own answer for equal shares (compute-bound cases with several workers
    # tell it apart even without the refusal) and the simulator itself
    "the library's equal_round": lambda m, t, c: ex.equal_round(m, t, c),
    "the simulator, run by hand": lambda m, t, c: ex._simulated_round([c] * m, t),
}


@pytest.mark.parametrize("case", WRONG_ROUNDS)
def test_wrong_round_times_are_rejected(case):
    with pytest.raises(AssertionError, match=ROUND) as info:
        ex.check_round_time(WRONG_ROUNDS[case])
    text = str(info.value)
    assert "worker" in text or "raised" in text or "SimulatedCluster" in text  # names the case


def _worker_order(compute, t):
    link = len(compute) * t
    for i, c in enumerate(compute):  # replies in worker order, not in the order they finish
        link = max(link, (i + 1) * t + c) + t
    return link


def _ignores_broadcast(compute, t):
    link = 0.0
    for done in sorted((i + 1) * t + c for i, c in enumerate(compute)):
        link = max(link, done) + t
    return link


WRONG_STRAGGLERS = {
    "replies in worker order": _worker_order,
    "replies before the broadcast ends": _ignores_broadcast,
    "slowest worker only": lambda comp, t: len(comp) * t + max(comp) + t,
    "None": lambda comp, t: None,
    "an array": lambda comp, t: np.array(comp),
    "raises": lambda comp, t: comp["x"],
    "the simulator, run by hand": lambda comp, t: ex._simulated_round(comp, t),
}


def _scaled(compute, t, *, wrong):
    # the reference with one message time written wrong: right only when t = 1
    m = len(compute)
    finished = sorted(((i + 1) * (t if wrong != "receive" else 1 / t) + c, i)
                      for i, c in enumerate(compute))
    link = m * t if wrong != "broadcast" else m / t
    for done, _ in finished:
        link = max(link, done) + t
    return link


WRONG_STRAGGLERS["broadcast ends at m/t"] = lambda comp, t: _scaled(comp, t, wrong="broadcast")
WRONG_STRAGGLERS["receives at (i + 1)/t"] = lambda comp, t: _scaled(comp, t, wrong="receive")


@pytest.mark.parametrize("case", WRONG_STRAGGLERS)
def test_wrong_straggler_rounds_are_rejected(case):
    with pytest.raises(AssertionError, match=STRAGGLERS) as info:
        ex.check_simulate_round(WRONG_STRAGGLERS[case])
    text = str(info.value)
    assert "compute times" in text or "raised" in text or "SimulatedCluster" in text


def test_unfinished_placeholder_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_mapreduce_gradient, ex.check_round_time, ex.check_simulate_round):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)


def test_reference_round_matches_closed_form():
    assert ex._simulated_round([2.0, 2.0, 10.0], 1.0) == 14.0
    assert np.isclose(ex._simulated_round([0.5] * 4, 1.0), 8.0)


# --- Exercise 4: predict the best number of workers (predict, then measure) ------------------
BEST = "Exercise 4"


def good_best(C, t):
    return np.sqrt(C / t)


def other_best(C, t):  # bisection on the slope of (m + 1)t + C/m, to machine precision
    low, high = 1e-9, 1e12
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if t - C / mid**2 < 0 else (low, mid)
    return (low + high) / 2


def test_best_workers_solutions_pass(capsys):
    import math

    for solution in (good_best, other_best, lambda C, t: math.sqrt(C / t),
                     lambda C, t: math.exp((math.log(C) - math.log(t)) / 2)):
        ex.check_best_workers(solution)
    out = capsys.readouterr().out
    assert out.count("passed") == 4 and "real-valued optimum" in out


WRONG_BEST = {
    "everything in sequence: √(C/2t)": (lambda C, t: np.sqrt(C / (2 * t)), "√(C/2t)"),
    "no square root": (lambda C, t: C / t, "square root is missing"),
    "inverted ratio": (lambda C, t: np.sqrt(C * t), "√(C·t)"),
    "two messages per worker: √(2C/t)": (lambda C, t: np.sqrt(2 * C / t), "√(2C/t)"),
    "rounded": (lambda C, t: round(np.sqrt(C / t)), "rounded"),
    "hard-coded lesson case": (lambda C, t: 22.857142857142858, "expected"),
    "None": (lambda C, t: None, "None"),
    "a list": (lambda C, t: [np.sqrt(C / t)], "shape"),
    "NaN": (lambda C, t: float("nan"), "finite"),
    "raises": (lambda C, t: C["x"], "raised"),
}


@pytest.mark.parametrize("case", WRONG_BEST)
def test_wrong_best_workers_are_rejected(case):
    wrong, message = WRONG_BEST[case]
    with pytest.raises(AssertionError, match=BEST) as info:
        ex.check_best_workers(wrong)
    assert message in str(info.value)


def test_each_exercise_is_graded_on_its_own(graded_alone):
    # Issue 25 item 3: one exercise wrong and the rest right fails exactly that check.
    right = {ex.check_mapreduce_gradient: good_gradient, ex.check_round_time: good_round_time,
             ex.check_simulate_round: good_simulate_round, ex.check_best_workers: good_best}
    wrong = {ex.check_mapreduce_gradient: _whole, ex.check_round_time: WRONG_ROUNDS["link-bound only"],
             ex.check_simulate_round: _worker_order, ex.check_best_workers: WRONG_BEST["no square root"][0]}
    cases = {check: (check, right[check], wrong[check]) for check in right}
    for broken in right:
        assert list(graded_alone(cases, broken)) == [broken]


def test_grading_seed_changes_the_cases(monkeypatch):
    from mlpar.exercises import GRADING_SEED_VARIABLE

    seen = []

    def spy(C, t):
        seen.append((C, t))
        return np.sqrt(C / t)

    ex.check_best_workers(spy)
    monkeypatch.setenv(GRADING_SEED_VARIABLE, "12345")
    ex.check_best_workers(spy)
    half = len(seen) // 2
    assert seen[:half] != seen[half:]
