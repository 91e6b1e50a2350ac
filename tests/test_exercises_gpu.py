"""Lesson 10's exercise checks: right answers pass, typical mistakes fail with a hint."""

import math

import pytest

from mlpar import gpu
from mlpar.exercises import gpu as ex


def test_reference_solutions_pass(capsys):
    ex.check_grid_stride_indices(gpu.grid_stride_indices)
    ex.check_largest_tile(gpu.largest_tile)
    ex.check_break_even_intensity(gpu.break_even_intensity)
    out = capsys.readouterr().out
    assert out.count("passed") == 3


def test_unfinished_solution_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_grid_stride_indices, ex.check_largest_tile,
                  ex.check_break_even_intensity):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)


def test_block_stride_mistake_gets_a_hint():
    def stride_by_block(t, b, bd, gd, n):
        return list(range(b * bd + t, n, bd))

    with pytest.raises(AssertionError, match="gridDim × blockDim, not blockDim"):
        ex.check_grid_stride_indices(stride_by_block)


def test_wrong_start_gets_a_hint():
    def forgot_block(t, b, bd, gd, n):
        return list(range(t, n, bd * gd))

    with pytest.raises(AssertionError, match="blockIdx × blockDim \\+ threadIdx"):
        ex.check_grid_stride_indices(forgot_block)


def test_tile_ignoring_thread_limit_fails():
    def only_memory(shared, itemsize):
        t = 1
        while 2 * (2 * t) ** 2 * itemsize <= shared:
            t *= 2
        return t

    with pytest.raises(AssertionError, match="more than 1024 threads"):
        ex.check_largest_tile(only_memory)


def test_tile_ignoring_memory_fails():
    with pytest.raises(AssertionError, match="largest tile"):
        ex.check_largest_tile(lambda shared, itemsize: 32)


def test_break_even_without_infinity_fails():
    def formula_only(cpu, dev, link):
        return cpu * dev / (link * (dev - cpu)) if dev != cpu else 0.0

    with pytest.raises(AssertionError, match="return math.inf"):
        ex.check_break_even_intensity(formula_only)


def test_break_even_link_only_approximation_fails():
    with pytest.raises(AssertionError, match="solve F/P_cpu"):
        ex.check_break_even_intensity(
            lambda cpu, dev, link: cpu / link if dev > cpu else math.inf)
