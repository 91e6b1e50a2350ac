"""Checks for lesson 01: a parallel axpy, a sum with two accumulators, a chunked parallel sum.

Each check looks at *how* the function works where the exercise is about how (numba's record
of the parallel loops it compiled; the function's syntax tree), and at what it returns.
Timing never decides.
"""

from __future__ import annotations

import ast
import math
import warnings

import numpy as np

from mlpar.exercises import as_array, call, expect, expect_close, fmt, passed, structure

#: Lengths every check tries: empty, tiny, odd, and long enough to split over threads.
LENGTHS = (0, 1, 2, 3, 7, 1000, 100_003)
#: Reductions that would sum the array for the student (Exercise 2 asks for the loop).
READY_MADE_SUMS = {"sum", "fsum", "reduce", "add", "cumsum", "nansum", "einsum", "dot", "mean"}


def _compile(name: str, func, *args):
    # Compiling (the first call) may warn that no parallel loop was found; the check says so.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(name, func, *args)


def _require_parallel(name: str, func, what: str) -> None:
    expect(name, callable(func), f"expected a function, got {type(func).__name__}")
    expect(name, hasattr(func, "targetoptions"),
           f"{what} is a plain Python function; decorate it with @njit(parallel=True) so "
           "numba compiles it and can run it on several threads")
    expect(name, structure.is_parallel_numba(func),
           f"{what} is compiled without parallel=True, so numba runs it on one thread; "
           "use @njit(parallel=True)")


def _require_parallel_loop(name: str, func, what: str) -> None:
    loops = structure.prange_loops(func)
    expect(name, loops > 0,
           f"numba found no prange loop in {what} (got 0 parallel loops from prange, expected "
           "at least 1): write the loop with prange, not range")


def check_axpy(axpy) -> None:
    """``axpy(a, x, y, out)`` writes ``a * x + y`` into ``out``, on several threads."""
    name = "Exercise 1 (parallel axpy)"
    _require_parallel(name, axpy, "axpy")
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        x, y = rng.random(n), rng.random(n)
        out = np.full(n, np.nan)
        returned = _compile(name, axpy, 2.5, x, y, out)
        if n and np.isnan(out).all() and returned is not None:
            raise AssertionError(f"{name}: for n={n} out was left unchanged (got NaN, expected "
                                 "2.5 * x + y); write the result into out[i] instead of "
                                 "returning a new array")
        expect_close(name, out, 2.5 * x + y, what=f"out for n={n}")
    _require_parallel_loop(name, axpy, "axpy")
    passed(name, f"compiled with {structure.prange_loops(axpy)} parallel loop(s); matches "
                 "2.5 * x + y for n = " + ", ".join(str(n) for n in LENGTHS))


def _two_accumulator_loop(name: str, func) -> None:
    tree = structure.source_tree(name, func)
    shortcuts = sorted(structure.calls(tree) & READY_MADE_SUMS)
    expect(name, not shortcuts,
           f"your function calls {', '.join(shortcuts)}(), a ready-made reduction; the "
           "exercise asks you to write the loop yourself, with two running sums")
    loops = [loop for loop in structure.loops(tree)
             if isinstance(loop, (ast.For, ast.While))]
    expect(name, bool(loops), "no loop found (got 0 loops, expected 1 with two accumulators)")
    most = max(len(structure.accumulators(loop)) for loop in loops)
    expect(name, most >= 2,
           f"the busiest loop updates {most} running sum(s), expected 2 in the same loop: two "
           "independent chains that the core can overlap (s0 += x[i]; s1 += x[i + 1])")


def check_sum_two_accumulators(sum_two_accumulators) -> None:
    """A loop with two running sums, right for even and odd lengths (the tail is the usual slip)."""
    name = "Exercise 2 (two accumulators)"
    call(name, sum_two_accumulators, np.ones(3))  # a placeholder says "not done yet" first
    _two_accumulator_loop(name, sum_two_accumulators)
    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 3, 10, 1001):
        x = rng.random(n)
        got = call(name, sum_two_accumulators, x)
        got = float(as_array(name, got, what=f"the sum for n={n}", shape=()))
        expected = math.fsum(x)
        if not math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-12):
            hint = ""
            if n % 2 and math.isclose(got, expected - x[-1], rel_tol=1e-12, abs_tol=1e-12):
                hint = "; that is the sum without the last element: add it when n is odd"
            elif n > 1 and math.isclose(got, math.fsum(x[::2]), rel_tol=1e-12, abs_tol=1e-12):
                hint = "; that is the sum of every other element: the second sum is missing"
            raise AssertionError(f"{name}: for n={n} got {fmt(got)}, expected {fmt(expected)}"
                                 f"{hint}")
    passed(name, "two running sums in one loop; correct for lengths 0, 1, 2, 3, 10 and 1001")


def check_chunked_sum(chunked_sum) -> None:
    """``chunked_sum(x, n_chunks)``: a prange over chunks, each summed into its own partial."""
    name = "Exercise 3 (chunked parallel sum)"
    _require_parallel(name, chunked_sum, "chunked_sum")
    rng = np.random.default_rng(3)
    for n, chunks in ((10, 2), (11, 3), (1000, 4), (7, 7), (5, 8), (100_003, 16), (0, 2)):
        x = rng.random(n)
        got = _compile(name, chunked_sum, x, chunks)
        got = float(as_array(name, got, what=f"the sum for n={n}, n_chunks={chunks}", shape=()))
        expected = math.fsum(x)
        if math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-12):
            continue
        hint = ("; less than the total: some elements are in no chunk (the last, shorter "
                "chunk must end at n)" if got < expected else
                "; more than the total: chunks overlap, so some elements count twice")
        raise AssertionError(f"{name}: for n={n} and n_chunks={chunks} got {fmt(got)}, "
                             f"expected {fmt(expected)}{hint}")
    _require_parallel_loop(name, chunked_sum, "chunked_sum")
    passed(name, "a parallel loop over chunks; equals math.fsum for 7 lengths and chunk counts")
