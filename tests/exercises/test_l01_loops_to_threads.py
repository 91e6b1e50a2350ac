"""Lesson 01's checks: right answers written differently pass; wrong ones fail by name.

Every wrong solution here returned the right numbers under the old checks or is a plausible
slip; each must now fail with a message naming the exercise and what was wrong.
"""

import math

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


@pytest.mark.parametrize("solution", [good_axpy, axpy_by_blocks])
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


@pytest.mark.parametrize("solution", [good_sum, sum_over_halves])
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


@pytest.mark.parametrize("solution", [good_chunked, chunked_by_strides])
def test_correct_chunked_sum_passes(solution, capsys):
    ex.check_chunked_sum(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 3")


@pytest.mark.parametrize("wrong, message", [
    (chunked_floor_size, "for n=11 and n_chunks=3 got .*expected .*less than the total"),
    (chunked_overlapping, "got .*expected .*chunks overlap"),
    (chunked_serial, "no prange loop .*got 0"),
    (chunked_not_parallel, "without parallel=True"),
    (chunked_nan, "plain Python function"),
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
