import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.cpu import reduction

SUMS = [reduction.sum_one_accumulator, reduction.sum_four_accumulators, reduction.sum_fastmath]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), max_size=300))
def test_sums_agree_with_fsum(values):
    x = np.array(values, dtype=np.float64)
    exact = math.fsum(values)
    for f in SUMS:
        assert math.isclose(f(x), exact, rel_tol=1e-9, abs_tol=1e-7), f.__name__


def test_one_accumulator_is_the_plain_left_to_right_sum():
    x = np.random.default_rng(0).random(1001)
    s = 0.0
    for v in x:
        s += v
    assert reduction.sum_one_accumulator(x) == s


@pytest.mark.parametrize("f", SUMS)
def test_bad_input(f):
    with pytest.raises(TypeError, match="x: expected dtype float64"):
        f(np.ones(3, dtype=np.int32))
    with pytest.raises(ValueError, match="C-contiguous"):
        f(np.ones(10)[::2])
    with pytest.raises(ValueError, match="1-D"):
        f(np.ones((2, 2)))
