import math

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_limits

from mlpar.exercises import l00_index as ex

# --- Exercise 1 -------------------------------------------------------------------------------


def square_sum(chunk):
    return float(chunk @ chunk)


def reference_sum(x, executor, n_chunks):
    return sum(executor.map(square_sum, np.array_split(x, n_chunks)))


def submit_with_bounds(x, executor, n_chunks):  # correct, written differently: submit + slices
    bounds = [len(x) * i // n_chunks for i in range(n_chunks + 1)]
    futures = [executor.submit(lambda c: (c**2).sum(), x[a:b]) for a, b in zip(bounds, bounds[1:])]
    return math.fsum(f.result() for f in futures)


WRONG_SUMS = {
    "serial, no executor": (lambda x, ex_, k: float((x**2).sum()), "no task reached the executor"),
    "one task": (lambda x, ex_, k: ex_.submit(square_sum, x).result(), "1 task"),
    "drops the remainder": (
        lambda x, ex_, k: sum(ex_.map(square_sum, np.split(x[: len(x) - len(x) % k], k))),
        "together hold"),
    "unbalanced chunks": (
        lambda x, ex_, k: sum(ex_.map(square_sum, [x[: len(x) - k + 1]] + [x[len(x) - k + 1 + i:][:1]
                                                                       for i in range(k - 1)])),
        "unbalanced"),
    "sums, not squares": (lambda x, ex_, k: sum(ex_.map(np.sum, np.array_split(x, k))), "got"),
    "returns None": (lambda x, ex_, k: [ex_.map(square_sum, np.array_split(x, k))] and None,
                     "expected a number"),
    "raises inside": (lambda x, ex_, k: 1 / 0, "ZeroDivisionError"),
}


def test_exercise_1_correct_solutions_pass(capsys):
    ex.check_parallel_sum_of_squares(reference_sum)
    ex.check_parallel_sum_of_squares(submit_with_bounds)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("label", WRONG_SUMS)
def test_exercise_1_wrong_solutions_fail(label):
    func, match = WRONG_SUMS[label]
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_parallel_sum_of_squares(func)
    assert str(err.value).startswith("Exercise 1")


def test_exercise_1_the_pool_really_runs_tasks_in_threads():
    with ex.RecordingExecutor(workers=2) as pool:
        assert list(pool.map(abs, [-1, -2])) == [1, 2]
        assert pool.submit(pow, 2, 3).result() == 8
    assert len(pool.tasks) == 3


# --- Exercise 2 -------------------------------------------------------------------------------


def test_exercise_2_correct_solutions_pass(capsys):
    ex.check_usable_threads(lambda a, q: a if q is None else max(1, min(a, int(q))))
    ex.check_usable_threads(lambda a, q: min(a, max(1, math.floor(q or a))))
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("func, match", [
    (lambda a, q: a if q is None else min(a, round(q)), r"usable_threads\(8, 1.5\) returned 2"),
    (lambda a, q: a if q is None else min(a, math.ceil(q)), r"usable_threads\(8, 1.5\) returned 2"),
    (lambda a, q: a if q is None else int(q), r"usable_threads\(4, 16.0\) returned 16"),
    (lambda a, q: a if q is None else min(a, int(q)), r"usable_threads\(16, 0.5\) returned 0"),
    (lambda a, q: a if q is None else min(a, q), "returned 2.0 .float."),
    (lambda a, q: None, "returned None"),
    (lambda a, q: True, "returned True"),
])
def test_exercise_2_wrong_solutions_fail(func, match):
    with pytest.raises(AssertionError, match=match):
        ex.check_usable_threads(func)


# --- Exercise 3 -------------------------------------------------------------------------------


def one_thread(A, B):
    with threadpool_limits(limits=1, user_api="blas"):
        return A @ B


def one_thread_any_api_with_dot(A, B):  # correct, written differently
    with ThreadpoolController().limit(limits=1):
        return np.dot(A, B)


def no_limit(A, B):
    return A @ B


def product_outside_the_block(A, B):
    with threadpool_limits(limits=1, user_api="blas"):
        pass
    return A @ B


def limits_openmp_only(A, B):
    with threadpool_limits(limits=1, user_api="openmp"):
        return A @ B


def python_loops(A, B):
    A, B = np.asarray(A), np.asarray(B)
    return np.array([[sum(A[i, t] * B[t, j] for t in range(A.shape[1])) for j in range(B.shape[1])]
                     for i in range(A.shape[0])])


def transposed(A, B):
    with threadpool_limits(limits=1, user_api="blas"):
        return (A @ B).T


def test_exercise_3_correct_solutions_pass(capsys):
    ex.check_one_blas_thread(one_thread)
    ex.check_one_blas_thread(one_thread_any_api_with_dot)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("func, match", [
    (no_limit, "ran with 2 BLAS threads"),
    (product_outside_the_block, "ran with 2 BLAS threads"),
    (limits_openmp_only, "ran with 2 BLAS threads"),
    (python_loops, "no matrix product reached BLAS"),
    (transposed, r"transposed\?"),
    (lambda A, B: None, "no matrix product reached BLAS"),
])
def test_exercise_3_wrong_solutions_fail(func, match):
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_one_blas_thread(func)
    assert str(err.value).startswith("Exercise 3")


def test_exercise_3_returning_none_after_a_correct_product_is_named():
    def forgot_return(A, B):
        with threadpool_limits(limits=1, user_api="blas"):
            A @ B

    with pytest.raises(AssertionError, match="is None"):
        ex.check_one_blas_thread(forgot_return)


@pytest.mark.parametrize("check", [ex.check_parallel_sum_of_squares, ex.check_usable_threads,
                                   ex.check_one_blas_thread])
@pytest.mark.parametrize("answer", [None, [1, 2], "text", 3])
def test_a_non_function_or_unfinished_answer_is_a_clear_failure(check, answer):
    with pytest.raises(AssertionError, match="expected a function"):
        check(answer)

    def unfinished(*args):
        raise NotImplementedError

    with pytest.raises(AssertionError, match="not done yet"):
        check(unfinished)


# --- each exercise graded on its own (issue 25 item 3) -----------------------------------------

RIGHT = {"check_parallel_sum_of_squares": reference_sum,
         "check_usable_threads": lambda a, q: a if q is None else max(1, min(a, int(q))),
         "check_one_blas_thread": one_thread}
WRONG = {"check_parallel_sum_of_squares": WRONG_SUMS["one task"][0],
         "check_usable_threads": lambda a, q: a,
         "check_one_blas_thread": no_limit}


@pytest.mark.parametrize("wrong", list(WRONG))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong, capsys):
    failed = []
    for check, answer in RIGHT.items():
        try:
            getattr(ex, check)(WRONG[check] if check == wrong else answer)
        except AssertionError:
            failed.append(check)
    assert failed == [wrong]
