"""The lesson-03 checks pass correct solutions (written differently) and reject wrong or
unfinished ones with a message naming the exercise, the case and what was wrong."""

import math

import numpy as np
import pytest
from joblib import Parallel, delayed

from mlpar.algorithms.model_selection import cross_validation as ms
from mlpar.exercises import l03_model_selection as ex

# --- Exercise 1: shuffled k-fold -----------------------------------------------------------


def good_kfold(n, k, seed):  # written by hand: the library's ms.kfold is refused by name
    parts = np.array_split(np.random.default_rng(seed).permutation(n), k)
    return [(np.sort(np.concatenate(parts[:i] + parts[i + 1:])), np.sort(parts[i]))
            for i in range(k)]


def good_kfold_lists_unsorted(n, k, seed):
    # written differently: strided parts of a permutation, plain lists, no sorting
    order = np.random.default_rng(seed).permutation(n)
    parts = [order[i::k] for i in range(k)]
    return [([int(r) for r in order if r not in set(p)], list(p)) for p in parts]


def unshuffled_kfold(n, k, seed):
    parts = np.array_split(np.arange(n), k)
    return [(np.setdiff1d(np.arange(n), p), p) for p in parts]


def seed_ignored_kfold(n, k, seed):
    return good_kfold(n, k, 0)


def unseeded_kfold(n, k, seed):
    return good_kfold(n, k, int(np.random.default_rng().integers(1000)))


def overlapping_kfold(n, k, seed):
    return [(np.arange(n), te) for _, te in good_kfold(n, k, seed)]


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
    return good_kfold(n, k, seed)[:-1]


def float_rows(n, k, seed):
    return [(tr + 0.5, te + 0.5) for tr, te in good_kfold(n, k, seed)]


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


def good_cv_threads(model, X, y, folds, n_jobs):  # right: threads (fits release the GIL)
    return Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(ms.fit_and_score)(model, {}, X, y, train, test) for train, test in folds)


def precomputed_scores_cv(model, X, y, folds, n_jobs):
    # issue 35: every fit runs serially here; the pool only hands back the numbers
    scores = [ms.fit_and_score(model, {}, X, y, tr, te) for tr, te in folds]
    return Parallel(n_jobs=n_jobs)(delayed(float)(s) for s in scores)


def refit_on_the_pool_too_cv(model, X, y, folds, n_jobs):
    serial_cv(model, X, y, folds, n_jobs)  # a serial pass first, then the parallel one
    return good_cv(model, X, y, folds, n_jobs)


def test_parallel_cv_accepts_correct_solutions(capsys):
    for solution in (good_cv, good_cv_loky_generator, good_cv_threads):
        ex.check_parallel_cv(solution)
    assert capsys.readouterr().out.count("✓ Exercise 2") == 3


@pytest.fixture
def short_wait(monkeypatch):
    """Fits that never meet are refused after WAIT_SECONDS; a second is plenty in tests."""
    monkeypatch.setattr(ex._FitLog, "WAIT_SECONDS", 1.0)


@pytest.mark.parametrize("bad, match", [
    (precomputed_scores_cv, "4 of the 4 fits ran in the calling thread, not on the pool"),
    (refit_on_the_pool_too_cv, "4 of the 8 fits ran in the calling thread"),
])
def test_parallel_cv_refuses_fits_done_outside_the_pool(bad, match, short_wait):
    with pytest.raises(AssertionError, match=match):
        ex.check_parallel_cv(bad)


def test_parallel_cv_refuses_a_pool_whose_fits_never_overlap(short_wait):
    def one_parallel_per_fold(model, X, y, folds, n_jobs):  # 4 tasks on 2 workers, one at a time
        scores = []
        for tr, te in folds:
            scores += Parallel(n_jobs=n_jobs)([delayed(ms.fit_and_score)(model, {}, X, y, tr, te)])
        return scores

    with pytest.raises(AssertionError, match="the fits ran one after another, never two at once"):
        ex.check_parallel_cv(one_parallel_per_fold)


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
def test_parallel_cv_rejects_wrong_solutions(bad, match, short_wait):
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


def idle_share_fraction(p, speedup):
    return 1 - speedup / p


def undivided_fraction(p, speedup):
    return 1 / speedup - 1 / p


def test_serial_fraction_names_each_misreading():
    for bad, match in ((gustafson_fraction, "Gustafson"), (idle_share_fraction, "left idle"),
                       (undivided_fraction, r"divide by \(1 - 1/p\)")):
        with pytest.raises(AssertionError, match=match):
            ex.check_serial_fraction(bad)


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

CHECKS = [ex.check_kfold, ex.check_parallel_cv, ex.check_serial_fraction, ex.check_grid_speedup]


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


# --- Exercise 4: predict a grid search's speedup from the lesson's model ---------------------

def good_prediction(nc, nf, p, t, c):
    n = nc * nf
    return n * t / (math.ceil(n / p) * (t + c))


def good_prediction_by_rounds(n_candidates, n_folds, n_workers, task_seconds, dispatch_seconds):
    # written differently: count the busiest worker's tasks with divmod, compare the two times
    whole, extra = divmod(n_candidates * n_folds, n_workers)
    busiest = whole + (1 if extra else 0)
    serial = n_candidates * n_folds * task_seconds
    return np.float64(serial / (busiest * (task_seconds + dispatch_seconds)))


def no_dispatch(nc, nf, p, t, c):
    n = nc * nf
    return n * t / (math.ceil(n / p) * t)


def dispatch_in_serial_too(nc, nf, p, t, c):
    n = nc * nf
    return n * (t + c) / (math.ceil(n / p) * (t + c))


def no_ceiling(nc, nf, p, t, c):
    n = nc * nf
    return n * t / (n / p * (t + c))


def dispatch_once_per_worker(nc, nf, p, t, c):
    n = nc * nf
    return n * t / (math.ceil(n / p) * t + c)


def candidates_only(nc, nf, p, t, c):
    return nc * t / (math.ceil(nc / p) * (t + c))


def inverted(nc, nf, p, t, c):
    return 1 / good_prediction(nc, nf, p, t, c)


def amdahl_instead(nc, nf, p, t, c):  # a plausible mix-up with exercise 3: no per-task model
    s = c / (t + c)
    return 1 / (s + (1 - s) / p)


def rounded(nc, nf, p, t, c):
    return round(good_prediction(nc, nf, p, t, c), 2)


def test_grid_prediction_accepts_correct_solutions(capsys):
    for good in (good_prediction, good_prediction_by_rounds):
        ex.check_grid_speedup(good)
    assert capsys.readouterr().out.count("✓ Exercise 4") == 2


@pytest.mark.parametrize("bad, match", [
    (no_dispatch, "dispatch is missing"),
    (dispatch_in_serial_too, "dispatch is missing"),
    (no_ceiling, "the ceiling is missing"),
    (dispatch_once_per_worker, "dispatch is paid once per worker"),
    (candidates_only, "n counts candidates only"),
    (inverted, r"T\(p\)/T\(1\)"),
    (amdahl_instead, "expected"),
    (rounded, "expected"),
])
def test_grid_prediction_rejects_wrong_solutions(bad, match):
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_grid_speedup(bad)
    assert str(err.value).startswith("Exercise 4 (predict a grid search's speedup)")


def test_grid_prediction_cases_move_with_the_graders_seed(monkeypatch):
    from mlpar.exercises import GRADING_SEED_VARIABLE

    visible = ex._grid_cases()
    monkeypatch.setenv(GRADING_SEED_VARIABLE, "12345")
    assert ex._grid_cases() != visible
    table = {case: good_prediction(*case) for case in visible}
    with pytest.raises(AssertionError, match="Exercise 4"):  # answers copied from the lesson
        ex.check_grid_speedup(lambda *case: table.get(case, 1.0))


def _timing(measured_parallel, **changes):
    from mlpar.algorithms.model_selection import speedup

    fields = dict(n_candidates=4, n_folds=5, n_workers=2, cores=2, task_seconds=0.01,
                  slowest_task_seconds=0.011, dispatch_seconds=0.002, serial_seconds=0.2,
                  parallel_seconds=measured_parallel)
    return speedup.GridTiming(**{**fields, **changes})


def test_grid_prediction_reports_the_measurement_without_grading_it(capsys):
    predicted_time = 10 * (0.01 + 0.002)  # ⌈20/2⌉ tasks of t + c
    ex.check_grid_speedup(good_prediction, _timing(predicted_time))
    out = capsys.readouterr().out
    assert "✓ Exercise 4" in out and "your prediction for the search just measured: 1.67×" in out
    assert "within 10%" in out
    ex.check_grid_speedup(good_prediction, _timing(0.2, slowest_task_seconds=0.03, cores=1))
    out = capsys.readouterr().out
    assert "✓ Exercise 4" in out and "measured 1.00× (-40%)" in out
    assert "2 workers share 1 usable core" in out and "the tasks are not equal" in out
    ex.check_grid_speedup(good_prediction, _timing(0.09))
    assert "dispatch overlapped with work" in capsys.readouterr().out
    with pytest.raises(TypeError, match="measurement: expected a GridTiming"):
        ex.check_grid_speedup(good_prediction, {"measured": 1.5})


# --- each exercise graded on its own (issue 25 item 3) -------------------------------------

RIGHT = {"check_kfold": good_kfold, "check_parallel_cv": good_cv,
         "check_serial_fraction": good_fraction, "check_grid_speedup": good_prediction}
WRONG = {"check_kfold": unshuffled_kfold, "check_parallel_cv": serial_cv,
         "check_serial_fraction": gustafson_fraction, "check_grid_speedup": no_ceiling}


@pytest.mark.parametrize("wrong", list(WRONG))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong, capsys, graded_alone):
    failed = graded_alone({c: (getattr(ex, c), RIGHT[c], WRONG[c]) for c in RIGHT}, wrong)
    assert list(failed) == [wrong]


def test_parallel_cv_says_when_this_machine_cannot_show_tasks(monkeypatch):
    import joblib._multiprocessing_helpers as helpers

    monkeypatch.setattr(helpers, "mp", None)  # /dev/shm missing or read-only
    with pytest.raises(AssertionError, match="joblib cannot start pools on this machine"):
        ex.check_parallel_cv(good_cv)


# --- the library's own version of an exercise is refused by name (issue 35 §4) -----------------


@pytest.mark.parametrize("check, borrowed, match", [
    (ex.check_kfold, lambda n, k, seed: __import__("mlpar.core.splits").core.splits.kfold(n, k, seed=seed),
     "calls splits.kfold"),
    (ex.check_kfold, lambda n, k, seed: ms.kfold(n, k, seed=seed), "calls cross_validation.kfold"),
    (ex.check_serial_fraction,
     lambda p, S: __import__("mlpar.cpu.scaling_laws").cpu.scaling_laws.fit_amdahl(
         [1, p], [1.0, S]).serial_fraction, "calls scaling_laws.fit_amdahl"),
    (ex.check_grid_speedup,
     lambda nc, nf, p, t, c: __import__("mlpar.algorithms.model_selection.speedup").algorithms
     .model_selection.speedup.predicted_speedup(nc * nf, p, t, c), "calls speedup.predicted_speedup"),
])
def test_the_librarys_version_is_refused_by_name(check, borrowed, match):
    with pytest.raises(AssertionError, match=match):
        check(borrowed)


def _sklearn_kfold(n, k, seed):
    from sklearn.model_selection import KFold

    return list(KFold(k, shuffle=True, random_state=seed).split(np.zeros(n)))


def _sklearn_cv(model, X, y, folds, n_jobs):
    from sklearn.model_selection import cross_val_score

    return cross_val_score(model, X, y, cv=folds, n_jobs=n_jobs)


def _course_cv(model, X, y, folds, n_jobs):
    return ms.cross_validate(model, X, y, folds, backend="threading", n_jobs=n_jobs).scores


@pytest.mark.parametrize("check, borrowed, match", [
    (ex.check_kfold, _sklearn_kfold, "calls scikit-learn's KFold"),
    (ex.check_parallel_cv, _sklearn_cv, "calls scikit-learn's cross-validation"),
    (ex.check_parallel_cv, _course_cv, "calls cross_validation.cross_validate"),
])
def test_one_call_that_does_the_whole_exercise_is_refused(check, borrowed, match, short_wait):
    # scikit-learn's versions gave the right folds and scores, with real parallel tasks:
    # they passed before (review of 2026-11-27)
    with pytest.raises(AssertionError, match=match):
        check(borrowed)

