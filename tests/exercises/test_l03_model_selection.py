"""The lesson-03 checks pass correct solutions (written differently) and reject wrong or
unfinished ones with a message naming the exercise, the case and what was wrong."""

import numpy as np
import pytest
from joblib import Parallel, delayed

from mlpar.algorithms.model_selection import cross_validation as ms
from mlpar.exercises import l03_model_selection as ex

# --- Exercise 1: shuffled k-fold -----------------------------------------------------------


def good_kfold(n, k, seed):
    return ms.kfold(n, k, seed=seed)


def good_kfold_lists_unsorted(n, k, seed):
    # written differently: strided parts of a permutation, plain lists, no sorting
    order = np.random.default_rng(seed).permutation(n)
    parts = [order[i::k] for i in range(k)]
    return [([int(r) for r in order if r not in set(p)], list(p)) for p in parts]


def unshuffled_kfold(n, k, seed):
    parts = np.array_split(np.arange(n), k)
    return [(np.setdiff1d(np.arange(n), p), p) for p in parts]


def seed_ignored_kfold(n, k, seed):
    return ms.kfold(n, k, seed=0)


def unseeded_kfold(n, k, seed):
    return ms.kfold(n, k, seed=int(np.random.default_rng().integers(1000)))


def overlapping_kfold(n, k, seed):
    return [(np.arange(n), te) for _, te in ms.kfold(n, k, seed=seed)]


def lopsided_kfold(n, k, seed):
    order = np.random.default_rng(seed).permutation(n)
    cuts = [order[: n - k + 1]] + [order[i : i + 1] for i in range(n - k + 1, n)]
    return [(np.setdiff1d(np.arange(n), c), c) for c in cuts]


def remainder_dropped_kfold(n, k, seed):
    order = np.random.default_rng(seed).permutation(n)
    m = n // k
    parts = [order[i * m : (i + 1) * m] for i in range(k)]
    return [(np.setdiff1d(np.arange(n), p), p) for p in parts]


def one_fold_short(n, k, seed):
    return ms.kfold(n, k, seed=seed)[:-1]


def float_rows(n, k, seed):
    return [(tr + 0.5, te + 0.5) for tr, te in ms.kfold(n, k, seed=seed)]


def test_kfold_accepts_correct_solutions(capsys):
    ex.check_kfold(good_kfold)
    ex.check_kfold(good_kfold_lists_unsorted)
    assert capsys.readouterr().out.count("✓ Exercise 1") == 2


@pytest.mark.parametrize(
    "bad, match",
    [
        (unshuffled_kfold, "consecutive rows; shuffle"),
        (seed_ignored_kfold, "seeds 0 and 1 gave the same first fold"),
        (unseeded_kfold, "same seed must give the same folds"),
        (overlapping_kfold, "train rows must be every row not in its test rows"),
        (lopsided_kfold, r"fold sizes should differ by at most 1, got \["),
        (remainder_dropped_kfold, "exactly once; together they hold"),
        (one_fold_short, "expected 3 \\(train, test\\) pairs, got 2"),
        (float_rows, "whole row numbers"),
    ],
)
def test_kfold_rejects_wrong_solutions(bad, match):
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_kfold(bad)
    assert str(err.value).startswith("Exercise 1 (shuffled k-fold)")
    assert "n=" in str(err.value)  # the case


# --- Exercise 2: parallel CV ---------------------------------------------------------------


def good_cv(model, X, y, folds, n_jobs):
    return Parallel(n_jobs=n_jobs)(
        delayed(ms.fit_and_score)(model, {}, X, y, tr, te) for tr, te in folds
    )


def good_cv_loky_generator(model, X, y, folds, n_jobs):
    # written differently: an explicit backend, results gathered from a generator
    tasks = [delayed(ms.fit_and_score)(model, {}, X, y, tr, te) for tr, te in folds]
    out = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator")(tasks)
    return np.array(list(out))


def serial_cv(model, X, y, folds, n_jobs):
    return [ms.fit_and_score(model, {}, X, y, tr, te) for tr, te in folds]


def one_job_cv(model, X, y, folds, n_jobs):
    return Parallel(n_jobs=1)(delayed(ms.fit_and_score)(model, {}, X, y, tr, te) for tr, te in folds)


def one_task_cv(model, X, y, folds, n_jobs):
    return Parallel(n_jobs=n_jobs)([delayed(serial_cv)(model, X, y, folds, n_jobs)])[0]


def reversed_cv(model, X, y, folds, n_jobs):
    return good_cv(model, X, y, folds, n_jobs)[::-1]


def train_score_cv(model, X, y, folds, n_jobs):
    return Parallel(n_jobs=n_jobs)(delayed(ms.fit_and_score)(model, {}, X, y, tr, tr)
                                   for tr, _ in folds)


def missing_fold_cv(model, X, y, folds, n_jobs):
    return good_cv(model, X, y, folds[:-1], n_jobs)


def test_parallel_cv_accepts_correct_solutions(capsys):
    ex.check_parallel_cv(good_cv)
    ex.check_parallel_cv(good_cv_loky_generator)
    assert capsys.readouterr().out.count("✓ Exercise 2") == 2


@pytest.mark.parametrize(
    "bad, match",
    [
        (serial_cv, "no joblib.Parallel ran"),
        (one_job_cv, "ran with n_jobs=1, expected"),
        (one_task_cv, "received 1 task\\(s\\), expected one per fold \\(4\\)"),
        (reversed_cv, "wrong order"),
        (train_score_cv, "differ from the serial ones"),
        (missing_fold_cv, "expected 4 scores \\(one per fold\\), got 3"),
    ],
)
def test_parallel_cv_rejects_wrong_solutions(bad, match):
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_parallel_cv(bad)
    assert str(err.value).startswith("Exercise 2 (parallel CV): 4 folds, n_jobs=2")


def test_recording_backend_restores_joblib():
    from joblib import parallel as jp

    before = dict(jp.BACKENDS)
    with pytest.raises(AssertionError):
        ex.check_parallel_cv(serial_cv)
    assert dict(jp.BACKENDS) == before


# --- Exercise 3: serial fraction -----------------------------------------------------------


def good_fraction(p, speedup):
    return (1 / speedup - 1 / p) / (1 - 1 / p)


def good_fraction_rearranged(p, speedup):
    return (p / speedup - 1) / (p - 1)


def gustafson_fraction(p, speedup):
    return (p - speedup) / (p - 1)


def inverted_fraction(p, speedup):
    return 1 / speedup


def test_serial_fraction_accepts_correct_solutions(capsys):
    ex.check_serial_fraction(good_fraction)
    ex.check_serial_fraction(good_fraction_rearranged)
    assert capsys.readouterr().out.count("✓ Exercise 3") == 2


@pytest.mark.parametrize(
    "bad, match",
    [
        (gustafson_fraction, "that is Gustafson's"),
        (inverted_fraction, r"s for p=2, speedup=2 is 0.5, expected 0"),
    ],
)
def test_serial_fraction_rejects_wrong_solutions(bad, match):
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_serial_fraction(bad)
    assert str(err.value).startswith("Exercise 3 (serial fraction)")


# --- every check: never crash on a half-written answer -------------------------------------

CHECKS = [ex.check_kfold, ex.check_parallel_cv, ex.check_serial_fraction]


def unfinished(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    "answer, match",
    [
        (lambda *a: None, "None"),
        (lambda *a: [[1, 2], [3]], "Exercise"),
        (lambda *a: np.zeros((2, 3)), "Exercise"),
        (lambda *a: float("nan"), "Exercise"),
        (lambda *a: [float("nan")] * 4, "Exercise"),
        (lambda *a: 1 / 0, "raised ZeroDivisionError"),
        (unfinished, "not done yet"),
        (None, "expected a function"),
    ],
)
def test_checks_never_crash(check, answer, match):
    with pytest.raises(AssertionError, match=match) as err:
        check(answer)
    assert str(err.value).startswith("Exercise ")
