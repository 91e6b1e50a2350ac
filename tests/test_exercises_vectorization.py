import numpy as np
import pytest
from numba import njit, prange

from mlpar.exercises import vectorization as ex


@njit(parallel=True)
def good_axpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


@njit(parallel=True)
def off_by_one_axpy(a, x, y, out):
    for i in prange(x.shape[0] - 1):
        out[i] = a * x[i] + y[i]


def plain_axpy(a, x, y, out):
    out[:] = a * x + y


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


@njit
def sum_forgetting_the_tail(x):
    s0 = s1 = 0.0
    for i in range(0, x.shape[0] - 1, 2):
        s0 += x[i]
        s1 += x[i + 1]
    return s0 + s1


def test_reference_solutions_pass(capsys):
    ex.check_axpy(good_axpy)
    ex.check_sum_two_accumulators(good_sum)
    ex.check_axpy_intensity(lambda: 2 / 24)
    assert capsys.readouterr().out.count("✓") == 3


def test_wrong_solutions_fail_helpfully():
    with pytest.raises(AssertionError, match="differs from the reference in 1 place"):
        ex.check_axpy(off_by_one_axpy)
    with pytest.raises(AssertionError, match="decorate axpy with @njit"):
        ex.check_axpy(plain_axpy)
    with pytest.raises(AssertionError, match="Did you add the last element when n is odd"):
        ex.check_sum_two_accumulators(sum_forgetting_the_tail)
    with pytest.raises(AssertionError, match="Count the flops per element"):
        ex.check_axpy_intensity(lambda: 1 / 24)


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")  # no prange in a stub
def test_placeholder_is_reported_as_not_done():
    @njit(parallel=True)
    def placeholder(a, x, y, out):
        raise NotImplementedError("exercise")

    with pytest.raises(AssertionError, match="not done yet"):
        ex.check_axpy(placeholder)
    assert np.isfinite(good_sum(np.ones(3)))
