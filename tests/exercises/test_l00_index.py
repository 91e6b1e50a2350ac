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
    "sums, not squares": (lambda x, ex_, k: sum(ex_.map(np.sum, np.array_split(x, k))),
                          "expected its chunk's sum of squares"),
    # issue 35: the pool runs tasks that do nothing while the caller computes the sum
    "idle pool, caller sums": (
        lambda x, ex_, k: [list(ex_.map(lambda c: 0.0, np.array_split(x, k)))] and float(x @ x),
        "task 0 returned 0, expected its chunk's sum of squares"),
    "tasks return squares, caller sums them": (
        lambda x, ex_, k: float(sum(np.sum(s) for s in ex_.map(np.square, np.array_split(x, k)))),
        "expected its chunk's sum of squares"),
    "returns None": (lambda x, ex_, k: [ex_.map(square_sum, np.array_split(x, k))] and None,
                     "expected a number"),
    "raises inside": (lambda x, ex_, k: 1 / 0, "ZeroDivisionError"),
}


def submit_numpy_dot(x, executor, n_chunks):  # correct (issue 35): the chunk passed twice
    futures = [executor.submit(np.dot, c, c) for c in np.array_split(x, n_chunks)]
    return sum(f.result() for f in futures)


def map_with_einsum(x, executor, n_chunks):  # correct: a named function, numpy scalars back
    def task(chunk):
        return np.einsum("i,i->", chunk, chunk)

    return float(np.sum(list(executor.map(task, np.array_split(x, n_chunks)))))


def test_exercise_1_correct_solutions_pass(capsys):
    for solution in (reference_sum, submit_with_bounds, submit_numpy_dot, map_with_einsum):
        ex.check_parallel_sum_of_squares(solution)
    assert capsys.readouterr().out.count("passed") == 4


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
    assert pool.results == {0: 1, 1: 2, 2: 8}  # what each task returned, by task number


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


def converts_its_inputs_inside(A, B):  # correct (issue 35): np.asarray hides the product
    with threadpool_limits(limits=1, user_api="blas"):
        return np.asarray(A) @ np.asarray(B)


def converts_its_inputs_first(A, B):  # correct: a defensive conversion before the limit
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    with threadpool_limits(limits=1, user_api="blas"):
        return A @ B


def limit_as_a_call(A, B):  # correct: the limit set and restored by hand, the product between
    A, B = np.array(A), np.array(B)
    limit = threadpool_limits(1)
    product = np.matmul(A, B)
    limit.restore_original_limits()
    return product


def one_line(A, B):  # correct: the limit and the product on one line
    A, B = np.array(A), np.array(B)
    with threadpool_limits(1): return A @ B  # noqa: E701


def converted_then_outside(A, B):  # wrong: converted, then multiplied after the block
    A, B = np.asarray(A), np.asarray(B)
    with threadpool_limits(limits=1, user_api="blas"):
        pass
    return A @ B


def product_before_copy_inside(A, B):  # wrong: computed on 2 threads, only copied inside
    product = np.asarray(A) @ np.asarray(B)
    with threadpool_limits(limits=1, user_api="blas"):
        return product.copy()


def test_exercise_3_correct_solutions_pass(capsys):
    for solution in (one_thread, one_thread_any_api_with_dot, converts_its_inputs_inside,
                     converts_its_inputs_first, limit_as_a_call, one_line):
        ex.check_one_blas_thread(solution)
    assert capsys.readouterr().out.count("passed") == 6


def test_exercise_3_a_product_by_python_loops_inside_the_limit_is_a_right_answer(capsys):
    # BLAS is limited while the (slow) product is computed: what the exercise asks, if slowly
    def loops_inside(A, B):
        with threadpool_limits(limits=1, user_api="blas"):
            return python_loops(A, B)

    ex.check_one_blas_thread(loops_inside)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("func, match", [
    (no_limit, "ran with 2 BLAS threads"),
    (product_outside_the_block, "ran with 2 BLAS threads"),
    (limits_openmp_only, "ran with 2 BLAS threads"),
    (python_loops, "ran with 2 BLAS threads"),
    (converted_then_outside, "the line that computed the product ran with 2 BLAS threads"),
    (product_before_copy_inside, "the line that computed the product ran with 2 BLAS threads"),
    (transposed, r"transposed\?"),
    (lambda A, B: None, "is None"),
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
                                   ex.check_one_blas_thread, ex.check_predict_seconds])
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
         "check_one_blas_thread": one_thread,
         "check_predict_seconds": lambda n, g: 2 * n**3 / (g * 1e9)}
WRONG = {"check_parallel_sum_of_squares": WRONG_SUMS["one task"][0],
         "check_usable_threads": lambda a, q: a,
         "check_one_blas_thread": no_limit,
         "check_predict_seconds": lambda n, g: n**3 / (g * 1e9)}


@pytest.mark.parametrize("wrong", list(WRONG))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong, capsys, graded_alone):
    failed = graded_alone({c: (getattr(ex, c), RIGHT[c], WRONG[c]) for c in RIGHT}, wrong)
    assert list(failed) == [wrong]


# --- Exercise 4: predict, then measure ------------------------------------------------------

EX4 = "Exercise 4"


def predict_seconds(n, gflops):
    return 2 * n**3 / (gflops * 1e9)


def predict_seconds_by_counting(n, gflops):  # correct, written differently: flops over flop/s
    multiply_adds = n * n * n
    flops = 2 * multiply_adds
    return flops / gflops * 1e-9


def predict_seconds_numpy(n, gflops):  # a 0-d numpy result is a number too
    return np.float64(n) ** 3 * np.float64(2e-9) / np.float64(gflops)


@pytest.mark.parametrize("solution", [predict_seconds, predict_seconds_by_counting,
                                      predict_seconds_numpy])
def test_exercise_4_correct_solutions_pass(solution, capsys):
    ex.check_predict_seconds(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 4")


@pytest.mark.parametrize("wrong, message", [
    (lambda n, g: n**3 / (g * 1e9), "you counted n³ flops"),           # the 2 missing
    (lambda n, g: 2 * n**2 / (g * 1e9), "you counted 2n² flops"),      # n² work
    (lambda n, g: n * n / (g * 1e9), "you counted n² flops"),
    (lambda n, g: 2 * n**3 / g, "GFLOP/s and flop/s mixed"),            # 1e9 missing
    (lambda n, g: 2 * n**3 * 1e9 / g, "1e9 is on the wrong side"),
    (lambda n, g: 2 * n**3 / (g * 2**30), "not 2\\^30"),
    (lambda n, g: g * 1e9 / (2 * n**3), "inverted"),                    # rate / work
    (lambda n, g: 2 * n**3 / (g * 1e6), "that is milliseconds"),        # ms, not s
    (lambda n, g: 2e3 * n**3 / (g * 1e9), "that is milliseconds"),
    (lambda n, g: 2 * n**3 / (g * 1e3), "that is microseconds"),
    (lambda n, g: 0.04, "does not change with the inputs"),             # the visible case
    (lambda n, g: 0.04 if n == 1000 else 1.0, r"got 1, expected .*right only for n=1000"),
    (lambda n, g: 0.04 if n == 1000 else 2 * n**3 / g, "right only for n=1000"),
    (lambda n, g: 3 * n**3 / (g * 1e9), r"got .*expected"),             # any other wrong value
    (lambda n, g: None, "is None; did the function forget"),
    (lambda n, g: [2 * n**3 / (g * 1e9)], r"has shape \(1,\), expected \(\)"),
    (lambda n, g: float("nan"), "NaN or infinity"),
    (lambda n, g: "0.04", "got"),
    (lambda n, g: 1 / 0, "raised ZeroDivisionError"),
    (None, "expected a function"),
    ([1, 2], "expected a function"),
])
def test_exercise_4_wrong_solutions_fail(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX4} .*{message}"):
        ex.check_predict_seconds(wrong)


def test_exercise_4_refuses_the_checks_own_model_by_name():
    def borrowed(n, gflops):  # the mutation run's survivor: right values, no modelling done
        return ex.matmul_seconds_model(n, gflops)

    with pytest.raises(AssertionError, match="calls exercises.matmul_seconds_model"):
        ex.check_predict_seconds(borrowed)
    assert ex.matmul_seconds_model(1000, 50.0) == pytest.approx(0.04)  # restored


def test_exercise_4_placeholder_says_not_done():
    def placeholder(n, gflops):
        raise NotImplementedError

    with pytest.raises(AssertionError, match=f"^{EX4}.*not done yet"):
        ex.check_predict_seconds(placeholder)


def test_exercise_4_cases_move_with_the_grading_seed(monkeypatch):
    seen = {}

    def spy(n, gflops):
        seen.setdefault(key, []).append((n, gflops))
        return predict_seconds(n, gflops)

    for key in ("0", "1"):
        monkeypatch.setenv("MLPAR_GRADING_SEED", key)
        ex.check_predict_seconds(spy)
    assert seen["0"] != seen["1"]
    assert ex.VISIBLE_CASE in seen["0"] and ex.VISIBLE_CASE in seen["1"]


def test_exercise_4_the_measurement_reports_and_never_grades(capsys):
    for prediction in (predict_seconds, lambda n, g: 0.0):  # a wrong prediction is not graded
        ratio = ex.measure_matmul_prediction(prediction, gflops=2.0, n=100, threads=1)
        text = capsys.readouterr().out
        assert math.isfinite(ratio) and ratio > 0
        assert "predicted 1 ms for n = 100 at 2 GFLOP/s" in text and "why:" in text
    assert "the model's is used" in text


@pytest.mark.parametrize("kwargs, error, match", [
    ({"gflops": -1.0}, ValueError, "gflops"),
    ({"gflops": float("nan")}, ValueError, "gflops"),
    ({"gflops": 1.0, "n": 0}, ValueError, "n: expected a positive integer"),
    ({"gflops": 1.0, "n": 10.5}, TypeError, "n: expected a positive integer"),
    ({"gflops": 1.0, "threads": 0}, ValueError, "threads"),
    ({"gflops": 1.0, "seed": -1}, ValueError, "seed"),
])
def test_exercise_4_the_measurement_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        ex.measure_matmul_prediction(predict_seconds, **kwargs)


def test_predict_seconds_accepts_the_exact_count_of_a_schoolbook_product(capsys):
    # n³ multiplications and n²(n - 1) additions: what "each multiplication and each addition
    # is one flop" gives when counted exactly; it was refused with "expected 0.04"
    ex.check_predict_seconds(lambda n, gflops: (2 * n**3 - n**2) / (gflops * 1e9))
    assert "exact count" in capsys.readouterr().out


def test_predict_seconds_still_refuses_a_count_off_by_more_than_the_exact_one():
    with pytest.raises(AssertionError, match="expected"):
        ex.check_predict_seconds(lambda n, gflops: (2 * n**3 - 2 * n**2) / (gflops * 1e9))


def test_sum_of_squares_refuses_strided_chunks():
    # x[i::k] has the right sizes and sums; the prompt asks for contiguous chunks (it passed)
    def strided(x, executor, n_chunks):
        return sum(executor.map(lambda c: float(c @ c), [x[i::n_chunks] for i in range(n_chunks)]))

    with pytest.raises(AssertionError, match="do not sit next to each other"):
        ex.check_parallel_sum_of_squares(strided)
