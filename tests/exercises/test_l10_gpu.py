"""Lesson 10's exercise checks: right answers pass, typical mistakes fail with a hint.

The kernel exercise runs in a fresh interpreter on numba's CUDA simulator (chosen before numba
is imported there), whatever this test process imported before.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mlpar.exercises import l10_gpu as ex
from mlpar.gpu import backend as gpu


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
    with pytest.raises(AssertionError, match="Exercise 3 .largest tile."):
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


def test_a_correct_alternative_for_each_arithmetic_exercise_passes(capsys):
    def stride_while(t, b, bd, gd, n):
        out, i = [], b * bd + t
        while i < n:
            out.append(i)
            i += bd * gd
        return out

    def tile_by_formula(shared, itemsize):
        side = min(math.isqrt(1024), math.isqrt(shared // (2 * itemsize)))
        return 1 << (side.bit_length() - 1) if side else 0

    def even_by_times(cpu, dev, link):
        if dev <= cpu:
            return math.inf
        # seconds for F = 1 flop: host 1/cpu; device 1/dev + (1/I)/link; equal at I
        return 1 / (link * (1 / cpu - 1 / dev))

    ex.check_grid_stride_indices(stride_while)
    ex.check_largest_tile(tile_by_formula)
    ex.check_break_even_intensity(even_by_times)
    assert capsys.readouterr().out.count("passed") == 3


@pytest.mark.parametrize("check", [ex.check_grid_stride_indices, ex.check_largest_tile,
                                   ex.check_break_even_intensity])
@pytest.mark.parametrize("answer", [lambda *a: None, lambda *a: [1.5, "x"], lambda *a: float("nan"),
                                    lambda *a: np.array([1, 2]), lambda *a: 1 / 0])
def test_odd_answers_fail_with_a_message_not_a_crash(check, answer):
    with pytest.raises(AssertionError, match="Exercise"):
        check(answer)


KERNELS = textwrap.dedent('''
    import json
    from mlpar.gpu import backend as gpu
    gpu.choose_cuda_backend("simulator")
    from numba import cuda
    from mlpar.exercises import l10_gpu as ex

    @cuda.jit
    def grid_stride(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            y[i] += a * x[i]

    @cuda.jit
    def while_loop(a, x, y):  # correct, written differently
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        while i < y.size:
            y[i] = y[i] + x[i] * a
            i += cuda.gridDim.x * cuda.blockDim.x

    @cuda.jit
    def one_element_per_thread(a, x, y):
        i = cuda.grid(1)
        if i < x.shape[0]:
            y[i] += a * x[i]

    @cuda.jit
    def no_bounds_check(a, x, y):
        i = cuda.grid(1)
        while True:
            y[i] += a * x[i]
            i += cuda.gridsize(1)

    @cuda.jit
    def stride_by_block(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.blockDim.x):
            y[i] += a * x[i]

    @cuda.jit
    def scales_the_sum(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            y[i] = a * (x[i] + y[i])

    @cuda.jit
    def forgets_a(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            y[i] += x[i]

    def not_a_kernel(a, x, y):
        y[:] += a * x

    @cuda.jit
    def unfinished(a, x, y):
        raise NotImplementedError("exercise: replace this line with your solution")

    results = {}
    for name, kernel in [("grid_stride", grid_stride), ("while_loop", while_loop),
                         ("one_element_per_thread", one_element_per_thread),
                         ("no_bounds_check", no_bounds_check), ("stride_by_block", stride_by_block),
                         ("scales_the_sum", scales_the_sum), ("forgets_a", forgets_a),
                         ("not_a_kernel", not_a_kernel), ("unfinished", unfinished),
                         ("none", None), ("a list", [1, 2])]:
        try:
            ex.check_axpy_kernel(kernel)
            results[name] = "passed"
        except AssertionError as err:
            results[name] = str(err)
    print("RESULT " + json.dumps(results))
''')


@pytest.fixture(scope="module")
def kernel_results():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", KERNELS], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [s for s in done.stdout.splitlines() if s.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("name", ["grid_stride", "while_loop"])
def test_correct_kernels_pass(kernel_results, name):
    assert kernel_results[name] == "passed"


@pytest.mark.parametrize("name, match", [
    ("one_element_per_thread", "never updated; .* stride cuda.gridsize"),
    ("no_bounds_check", "indexed past the end"),
    ("stride_by_block", "updated more than once; .* not blockDim.x"),
    ("scales_the_sum", r"expected y\[i\] \+ a \* x\[i\]"),
    ("forgets_a", r"expected y\[i\] \+ a \* x\[i\]"),
    ("not_a_kernel", "expected a kernel made with @cuda.jit"),
    ("unfinished", "not done yet"),
    ("none", "expected a kernel made with @cuda.jit, got NoneType"),
    ("a list", "expected a kernel made with @cuda.jit, got list"),
])
def test_wrong_kernels_fail_with_the_reason(kernel_results, name, match):
    import re

    message = kernel_results[name]
    assert message.startswith("Exercise 2 (a CUDA kernel)"), message
    assert re.search(match, message), message
