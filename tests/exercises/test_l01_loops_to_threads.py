"""Lesson 01's checks: right answers written differently pass; wrong ones fail by name.

Every wrong solution here returned the right numbers under the old checks or is a plausible
slip; each must now fail with a message naming the exercise and what was wrong.
"""

import math

import numba
import numpy as np
import pytest
from numba import njit, prange

from mlpar.exercises import l01_loops_to_threads as ex

pytestmark = pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")

EX1, EX2, EX3 = "Exercise 1", "Exercise 2", "Exercise 3"


# --- Exercise 1: parallel axpy ---------------------------------------------------------------

@njit(parallel=True)
def good_axpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


@njit(parallel=True)
def axpy_by_blocks(a, x, y, out):  # prange over blocks of 1024, a serial loop inside each
    n = x.shape[0]
    for b in prange((n + 1023) // 1024):
        for i in range(b * 1024, min(b * 1024 + 1024, n)):
            out[i] = y[i] + x[i] * a


@njit(parallel=True)
def axpy_array_expression(a, x, y, out):  # parallel, but not the prange loop asked for
    out[:] = a * x + y


@njit(parallel=True)
def axpy_off_by_one(a, x, y, out):
    for i in prange(x.shape[0] - 1):
        out[i] = a * x[i] + y[i]


def axpy_plain_python(a, x, y, out):
    out[:] = a * x + y


@njit
def axpy_serial_numba(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


@njit(parallel=True)
def axpy_range_not_prange(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


@njit(parallel=True)
def axpy_wrong_formula(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * (x[i] + y[i])


@njit(parallel=True)
def axpy_returns_instead(a, x, y, out):
    result = np.empty_like(x)
    for i in prange(x.shape[0]):
        result[i] = a * x[i] + y[i]
    return result


@njit(parallel=True)
def axpy_raises(a, x, y, out):
    raise ValueError("oops")


@njit(parallel=True)
def axpy_prange_only_zeroes(a, x, y, out):  # issue 35: the prange fills, a serial loop works
    for i in prange(x.shape[0]):
        out[i] = 0.0
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


@njit(parallel=True)
def axpy_one_iteration(a, x, y, out):  # a prange of one iteration: one thread does it all
    for _ in prange(1):
        for i in range(x.shape[0]):
            out[i] = a * x[i] + y[i]


@njit(parallel=True)
def axpy_through_the_module(a, x, y, out):  # numba.prange spelled through the module
    for i in numba.prange(len(x)):
        out[i] = y[i] + a * x[i]


@njit(parallel=True)
def axpy_with_a_helper(a, x, y, out):  # each iteration calls a compiled helper for a block
    n = x.shape[0]
    for b in prange((n + 255) // 256):
        _axpy_block(a, x, y, out, b * 256, min(n, b * 256 + 256))


@njit
def _axpy_block(a, x, y, out, lo, hi):
    for i in range(lo, hi):
        out[i] = a * x[i] + y[i]


@pytest.mark.parametrize("solution", [good_axpy, axpy_by_blocks, axpy_through_the_module,
                                      axpy_with_a_helper])
def test_correct_axpy_passes(solution, capsys):
    ex.check_axpy(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 1")


@pytest.mark.parametrize("wrong, message", [
    (axpy_plain_python, "plain Python function"),
    (axpy_serial_numba, "without parallel=True"),
    (axpy_range_not_prange, r"no prange loop .*got 0 parallel loops from prange"),
    (axpy_array_expression, r"no prange loop .*got 0 parallel loops from prange"),
    (axpy_off_by_one, r"out for n=1 differs .*got nan, expected"),
    (axpy_wrong_formula, r"out for n=1 differs .*got .*expected"),
    (axpy_returns_instead, "left unchanged .*write the result into out"),
    (axpy_raises, "raised ValueError: oops"),
    (axpy_prange_only_zeroes, "element.s. of x are read outside the prange loop"),
    (axpy_one_iteration, "one iteration of the prange loop writes all of out"),
    (None, "expected a function, got NoneType"),
    ([1, 2], "expected a function, got list"),
])
def test_wrong_axpy_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX1} .*{message}"):
        ex.check_axpy(wrong)


def test_placeholder_axpy_says_not_done():
    @njit(parallel=True)
    def placeholder(a, x, y, out):
        raise NotImplementedError

    with pytest.raises(AssertionError, match=f"^{EX1}.*not done yet"):
        ex.check_axpy(placeholder)


# --- Exercise 2: two accumulators ------------------------------------------------------------

@njit
def good_sum(x):
    s0 = s1 = 0.0
    n = x.shape[0]
    for i in range(0, n - 1, 2):
        s0 += x[i]
        s1 += x[i + 1]
    if n % 2:
        s0 += x[n - 1]
    return s0 + s1


def sum_over_halves(x):  # plain Python, two chains over the two halves, in one loop
    half = len(x) // 2
    left = 0.0
    right = 0.0
    for i in range(half):
        left = left + x[i]
        right = right + x[half + i]
    if len(x) % 2:
        right = right + x[-1]
    return left + right


@njit
def sum_forgetting_the_tail(x):
    s0 = s1 = 0.0
    for i in range(0, x.shape[0] - 1, 2):
        s0 += x[i]
        s1 += x[i + 1]
    return s0 + s1


@njit
def sum_by_method(x):
    return x.sum()


def sum_by_numpy(x):
    return np.sum(x)


def sum_by_builtin(x):
    return sum(x)


def sum_by_fsum(x):
    return math.fsum(x)


@njit
def sum_one_chain(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@njit
def sum_two_loops(x):
    s0 = 0.0
    for i in range(0, x.shape[0], 2):
        s0 += x[i]
    s1 = 0.0
    for i in range(1, x.shape[0], 2):
        s1 += x[i]
    return s0 + s1


@njit
def sum_every_other(x):
    s0 = s1 = 0.0
    for i in range(0, x.shape[0], 2):
        s0 += x[i]
        s1 += 0.0
    return s0 + s1


def sum_returns_list(x):
    s0 = s1 = 0.0
    for i in range(len(x)):
        s0 += x[i]
        s1 += 0.0
    return [s0, s1]


def sum_returns_none(x):
    s0 = s1 = 0.0
    for i in range(len(x)):
        s0 += x[i]
        s1 += 0.0


@njit
def sum_one_chain_and_a_counter(x):  # issue 35: count += 1 is not a second running sum
    s = 0.0
    count = 0
    for i in range(x.shape[0]):
        s += x[i]
        count += 1
    return s


@njit
def sum_second_chain_unused(x):  # two sums, but only one reaches the result
    s0 = s1 = 0.0
    for i in range(x.shape[0]):
        s0 += x[i]
        s1 += 1.0
    return s0


@njit
def sum_four_in_a_while_loop(x):  # four chains in a while loop: more than two is fine
    a = b = c = d = 0.0
    i, n = 0, x.shape[0]
    while i + 3 < n:
        a += x[i]
        b += x[i + 1]
        c += x[i + 2]
        d += x[i + 3]
        i += 4
    while i < n:
        a += x[i]
        i += 1
    return (a + b) + (c + d)


@pytest.mark.parametrize("solution", [good_sum, sum_over_halves, sum_four_in_a_while_loop])
def test_correct_sum_passes(solution, capsys):
    ex.check_sum_two_accumulators(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 2")


@pytest.mark.parametrize("wrong, message", [
    (sum_by_method, r"calls sum\(\), a ready-made reduction"),
    (sum_by_numpy, r"calls sum\(\)"),
    (sum_by_builtin, r"calls sum\(\)"),
    (sum_by_fsum, r"calls fsum\(\)"),
    (sum_one_chain, "updates 1 running sum.*expected 2"),
    (sum_two_loops, "updates 1 running sum.*expected 2"),
    (sum_forgetting_the_tail, "for n=1 got 0, expected .*without the last element"),
    (sum_every_other, "for n=2 got .*every other element"),
    (sum_returns_list, "should be 0-D|has shape"),
    (sum_returns_none, "is None"),
    (sum_one_chain_and_a_counter, "one chain of 1000 dependent additions"),
    (sum_second_chain_unused, "for n=1 got 1, expected|one chain of 1000"),
])
def test_wrong_sum_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX2} .*({message})"):
        ex.check_sum_two_accumulators(wrong)


def test_placeholder_sum_says_not_done():
    @njit
    def placeholder(x):
        raise NotImplementedError

    with pytest.raises(AssertionError, match=f"^{EX2}.*not done yet"):
        ex.check_sum_two_accumulators(placeholder)


def test_sum_whose_source_cannot_be_read_is_reported():
    namespace = {}
    exec("def f(x):\n    return 0.0\n", namespace)
    with pytest.raises(AssertionError, match=f"^{EX2}.*cannot read your function's source"):
        ex.check_sum_two_accumulators(namespace["f"])


# --- Exercise 3: chunked parallel sum --------------------------------------------------------

@njit(parallel=True)
def good_chunked(x, n_chunks):
    n = x.shape[0]
    size = (n + n_chunks - 1) // n_chunks
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        s = 0.0
        for i in range(c * size, min((c + 1) * size, n)):
            s += x[i]
        partial[c] = s
    return partial.sum()


@njit(parallel=True)
def chunked_by_strides(x, n_chunks):  # chunk c takes elements c, c + n_chunks, ...
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        for i in range(c, x.shape[0], n_chunks):
            partial[c] += x[i]
    total = 0.0
    for c in range(n_chunks):
        total += partial[c]
    return total


@njit(parallel=True)
def chunked_floor_size(x, n_chunks):
    size = x.shape[0] // n_chunks
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        for i in range(c * size, (c + 1) * size):
            partial[c] += x[i]
    return partial.sum()


@njit(parallel=True)
def chunked_overlapping(x, n_chunks):
    n = x.shape[0]
    size = (n + n_chunks - 1) // n_chunks
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        for i in range(c * size, min((c + 1) * size + 1, n)):
            partial[c] += x[i]
    return partial.sum()


@njit(parallel=True)
def chunked_serial(x, n_chunks):
    n = x.shape[0]
    size = (n + n_chunks - 1) // n_chunks
    partial = np.zeros(n_chunks)
    for c in range(n_chunks):
        for i in range(c * size, min((c + 1) * size, n)):
            partial[c] += x[i]
    total = 0.0
    for c in range(n_chunks):
        total += partial[c]
    return total


@njit
def chunked_not_parallel(x, n_chunks):
    return x.sum()


def chunked_nan(x, n_chunks):
    return float("nan")


@njit(parallel=True)
def chunked_size_one_short(x, n_chunks):  # a mutant that survived: ceil(n/k) - 1 when n % k == 1
    n = x.shape[0]
    size = (n + n_chunks - 2) // n_chunks
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        for i in range(c * size, min((c + 1) * size, n)):
            partial[c] += x[i]
    return partial.sum()


@njit(parallel=True)
def chunked_plain_prange(x, n_chunks):  # issue 35: a prange reduction that ignores n_chunks
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s


@njit(parallel=True)
def chunked_serial_tail(x, n_chunks):  # floor-sized chunks, the remainder summed serially
    n = x.shape[0]
    size = n // n_chunks
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        for i in range(c * size, (c + 1) * size):
            partial[c] += x[i]
    total = partial.sum()
    for i in range(n_chunks * size, n):
        total += x[i]
    return total


@njit(parallel=True)
def chunked_by_bounds(x, n_chunks):  # bounds from integer arithmetic, a prange reduction
    n = x.shape[0]
    total = 0.0
    for c in prange(n_chunks):
        lo, hi = c * n // n_chunks, (c + 1) * n // n_chunks
        s = 0.0
        for i in range(lo, hi):
            s += x[i]
        total += s
    return total


@njit(parallel=True)
def chunked_by_slices(x, n_chunks):  # each chunk summed from a slice
    n = x.shape[0]
    size = -(-n // n_chunks)
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        partial[c] = x[c * size:min(n, (c + 1) * size)].sum()
    return partial.sum()


@pytest.mark.parametrize("solution", [good_chunked, chunked_by_bounds, chunked_by_slices])
def test_correct_chunked_sum_passes(solution, capsys):
    ex.check_chunked_sum(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 3")


@pytest.mark.parametrize("wrong, message", [
    (chunked_floor_size, "for n=11 and n_chunks=3 got .*expected .*less than the total"),
    (chunked_overlapping, "got .*expected .*chunks overlap"),
    (chunked_serial, "no prange loop .*got 0"),
    (chunked_not_parallel, "without parallel=True"),
    (chunked_nan, "plain Python function"),
    (chunked_size_one_short, "for n=13 and n_chunks=4 got .*less than the total"),
    (chunked_plain_prange, "reads x in 1000 iterations, expected 4.*elements.*n_chunks is ignored"),
    (chunked_by_strides, "not one contiguous chunk"),
    (chunked_serial_tail, "for n=1000 and n_chunks=4, .*read outside the prange|for n=11 .*read outside"),
])
def test_wrong_chunked_sum_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX3} .*{message}"):
        ex.check_chunked_sum(wrong)


def test_chunked_sum_returning_nan_or_none_is_reported():
    @njit(parallel=True)
    def gives_nan(x, n_chunks):
        total = 0.0
        for _ in prange(n_chunks):
            total += np.nan
        return total

    @njit(parallel=True)
    def gives_array(x, n_chunks):
        partial = np.zeros(n_chunks)
        for c in prange(n_chunks):
            partial[c] = 1.0
        return partial

    with pytest.raises(AssertionError, match=f"^{EX3}.*contains NaN"):
        ex.check_chunked_sum(gives_nan)
    with pytest.raises(AssertionError, match=rf"^{EX3}.*has shape \(2,\), expected \(\)"):
        ex.check_chunked_sum(gives_array)


# --- Exercise 4: predict axpy's rate from the roofline ---------------------------------------

EX4 = "Exercise 4"


def predict_axpy(bandwidth_gbps):
    return bandwidth_gbps * 2 / 32


def predict_axpy_by_intensity(bandwidth_gbps):  # the same model, written as the roofline reads
    flops, bytes_read, bytes_written = 2, 16, 8
    intensity = flops / (bytes_read + 2 * bytes_written)
    return min(float("inf"), intensity * bandwidth_gbps)


def predict_axpy_numpy(bandwidth_gbps):  # a 0-d numpy result is a number too
    return np.float64(bandwidth_gbps) / np.float64(16)


@pytest.mark.parametrize("solution", [predict_axpy, predict_axpy_by_intensity, predict_axpy_numpy])
def test_correct_axpy_prediction_passes(solution, capsys):
    ex.check_axpy_prediction(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 4")


GIB = 2**30 / 1e9


@pytest.mark.parametrize("wrong, message", [
    (lambda b: b * 2 / 24, "write-allocate"),                 # bytes without write-allocate
    (lambda b: b * 1 / 32, "2 flops"),                        # flops miscounted
    (lambda b: b / 24, "1 flop and 24 bytes"),                # both
    (lambda b: b * 2 / 16, "only the bytes read"),            # reads only
    (lambda b: b * 2 / 40, "you counted a as an array"),      # the scalar as an array
    (lambda b: b * 2 / 32 / GIB, "GB and GiB mixed"),         # GB vs GiB, both ways
    (lambda b: b * 2 / 32 * GIB, "GB and GiB mixed"),
    (lambda b: b, "the bandwidth in GB/s, not a rate"),       # GB/s for GFLOP/s
    (lambda b: b * 16, "bytes per flop, not flops per byte"),  # intensity upside down
    (lambda b: 1.5625, "does not change with the inputs"),    # the visible case hard-coded
    (lambda b: b * 2 / 33, r"got .*expected"),                # any other wrong value
    (lambda b: None, "is None; did the function forget"),
    (lambda b: [b / 16], r"has shape \(1,\), expected \(\)"),
    (lambda b: float("nan"), "NaN or infinity"),
    (lambda b: "1.0", "got"),
    (None, "expected a function"),
])
def test_wrong_axpy_prediction_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX4} .*{message}"):
        ex.check_axpy_prediction(wrong)


def test_axpy_prediction_cases_move_with_the_grading_seed(monkeypatch):
    seen = {}

    def spy(bandwidth_gbps):
        seen.setdefault(key, []).append(bandwidth_gbps)
        return predict_axpy(bandwidth_gbps)

    for key in ("0", "1"):
        monkeypatch.setenv("MLPAR_GRADING_SEED", key)
        ex.check_axpy_prediction(spy)
    assert seen["0"] != seen["1"]


def test_a_prediction_that_calls_the_courses_model_is_refused():
    def by_the_model(bandwidth_gbps):
        from mlpar.exercises import l01_loops_to_threads as lib

        return lib.axpy_model(bandwidth_gbps)

    with pytest.raises(AssertionError, match=f"^{EX4}.*calls axpy_model, the course's own"):
        ex.check_axpy_prediction(by_the_model)
    with pytest.raises(AssertionError, match="calls axpy_model"):
        ex.check_axpy_prediction(lambda b: ex.axpy_model(b))


def test_the_measurement_reports_and_never_grades(capsys):
    n = 1 << 12
    x, y, out = np.ones(n), np.full(n, 2.0), np.empty(n)
    for prediction in (predict_axpy, lambda b: 0.0):  # a wrong prediction is not graded here
        ratio = ex.measure_axpy_prediction(prediction, bandwidth_gbps=20.0, arrays=(x, y, out))
        text = capsys.readouterr().out
        assert ratio > 0 and "predicted 1.25 GFLOP/s" in text and "why:" in text
    assert "the model's is used" in text and np.all(out == 4.5)
    assert "2/32" not in text and "× 2" not in text  # the formula Exercise 4 asks for
    # the student's axpy is timed when it computes a·x + y; a wrong one falls back
    ex.measure_axpy_prediction(predict_axpy, bandwidth_gbps=20.0, arrays=(x, y, out),
                               axpy=good_axpy)
    assert "your axpy" in capsys.readouterr().out
    ex.measure_axpy_prediction(predict_axpy, bandwidth_gbps=20.0, arrays=(x, y, out),
                               axpy=axpy_wrong_formula)
    assert "a reference parallel axpy" in capsys.readouterr().out
    with pytest.raises(ValueError, match="bandwidth_gbps"):
        ex.measure_axpy_prediction(predict_axpy, bandwidth_gbps=-1.0, arrays=(x, y, out))


# --- each exercise graded on its own ---------------------------------------------------------

RIGHT = {"axpy": good_axpy, "sum": good_sum, "chunked": good_chunked, "predict": predict_axpy}
WRONG = {"axpy": axpy_wrong_formula, "sum": sum_forgetting_the_tail,
         "chunked": chunked_overlapping, "predict": lambda b: b * 2 / 24}
CHECKS = {"axpy": ("check_axpy", EX1), "sum": ("check_sum_two_accumulators", EX2),
          "chunked": ("check_chunked_sum", EX3), "predict": ("check_axpy_prediction", EX4)}


@pytest.mark.parametrize("wrong_one", sorted(CHECKS))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong_one, capsys, graded_alone):
    failed = graded_alone({key: (getattr(ex, check), RIGHT[key], WRONG[key])
                           for key, (check, _) in CHECKS.items()}, wrong_one)
    assert list(failed) == [wrong_one]
    assert failed[wrong_one].startswith(CHECKS[wrong_one][1])
