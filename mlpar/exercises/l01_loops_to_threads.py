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
from numba import njit, prange

from mlpar.exercises import (
    as_array,
    call,
    case_seed,
    close_enough,
    expect,
    expect_close,
    fmt,
    grade_prediction,
    passed,
    structure,
)

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
    rng = np.random.default_rng(case_seed(1))
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
    rng = np.random.default_rng(case_seed(2))
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
    rng = np.random.default_rng(case_seed(3))
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
    print("  The question: with 2 chunks or more, 2 threads can share the work. Far beyond the "
          "cache the sum does 1 flop per 8 bytes read, far left of the ridge, so a second thread "
          "helps only as far as one thread left memory bandwidth unused (section 6's product).")


# --- Exercise 4: predict, then measure ------------------------------------------------------

#: Flops and bytes counted per element of axpy ``out[i] = a·x[i] + y[i]`` (write-allocate).
AXPY_FLOPS = 2
AXPY_BYTES = 32


def axpy_model(bandwidth_gbps: float) -> float:
    """The roofline's rate for axpy past the cache: bandwidth × 2 flops / 32 bytes (GFLOP/s)."""
    return bandwidth_gbps * AXPY_FLOPS / AXPY_BYTES


_GIB = 2**30 / 1e9
AXPY_MISREADINGS = (
    (lambda b: b * 2 / 24, "you counted 24 bytes per element; out is written, and the core "
                           "reads a cache line before it writes into it (write-allocate): "
                           "8 + 8 + 2·8 = 32 bytes"),
    (lambda b: b * 1 / 32, "you counted 1 flop per element; a·x[i] + y[i] is a multiply and "
                           "an add: 2 flops"),
    (lambda b: b * 1 / 24, "1 flop and 24 bytes: axpy does 2 flops per element (multiply, "
                           "add) and moves 32 bytes (write-allocate counts out twice)"),
    (lambda b: b * 2 / 16, "you counted only the bytes read (x and y: 16); out's 8 bytes are "
                           "read and written back too: 32 bytes"),
    (lambda b: b * 2 / 40, "you counted a as an array; it is one number in a register, so "
                           "only x, y (read) and out (read and written) move: 32 bytes"),
    (lambda b: b * 2 / 32 / _GIB, "GB and GiB mixed: GB/s and GFLOP/s are both powers of ten "
                                  "(10^9), so no 2^30 belongs in the prediction"),
    (lambda b: b * 2 / 32 * _GIB, "GB and GiB mixed: GB/s and GFLOP/s are both powers of ten "
                                  "(10^9), so no 2^30 belongs in the prediction"),
    (lambda b: b, "that is the bandwidth in GB/s, not a rate in GFLOP/s: multiply it by the "
                  "flops per byte (the arithmetic intensity)"),
    (lambda b: b * 32 / 2, "bytes per flop, not flops per byte: the intensity is flops / bytes "
                           "= 2 / 32"),
)


def check_axpy_prediction(predict_axpy_gflops) -> None:
    """``predict_axpy_gflops(bandwidth_gbps)``: the roofline's GFLOP/s for axpy past the cache.

    Graded against the model at several bandwidths, exactly; each way to misread the model
    (bytes without write-allocate, flops miscounted, GB vs GiB, ...) is refused by name.
    """
    name = "Exercise 4 (predict axpy from the roofline)"
    rng = np.random.default_rng(case_seed(14))
    cases = [(float(b),) for b in np.round(rng.uniform(5.0, 400.0, 4), 3)] + [(25.0,)]
    grade_prediction(name, predict_axpy_gflops, cases, axpy_model, AXPY_MISREADINGS,
                     what="the predicted GFLOP/s", names=("bandwidth_gbps",))
    passed(name, "bandwidth × 2 flops / 32 bytes at 5 bandwidths; now measure it")


@njit(parallel=True)
def _reference_axpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


def measure_axpy_prediction(predict_axpy_gflops, *, bandwidth_gbps: float, arrays) -> float:
    """Time a reference parallel axpy on ``arrays`` (x, y, out; ``out`` is overwritten) and
    print how far the measurement fell from the prediction at ``bandwidth_gbps``, and why.

    Timing never grades: this only reports. The prediction used is the student's when it
    matches the model, else the model's (and it says so). Returns measured / predicted.
    """
    from mlpar.claims import l01_loops_to_threads as l01_claims
    from mlpar.core import timing, validation
    from mlpar.cpu import stream

    bandwidth_gbps = validation.positive("bandwidth_gbps", bandwidth_gbps)
    x, y, out = stream.three_arrays("arrays", arrays, written=2)
    predicted = axpy_model(bandwidth_gbps)
    note = ""
    try:
        got = float(predict_axpy_gflops(bandwidth_gbps))
    except Exception:  # noqa: BLE001 - a broken prediction is graded by the check, not here
        got = float("nan")
    if not close_enough(got, predicted):
        note = " (your function's value differs from the model; the model's is used)"
    n = x.shape[0]
    t = timing.measure(_reference_axpy, 2.5, x, y, out, repeat=5,
                       nbytes=AXPY_BYTES * n, flops=AXPY_FLOPS * n)
    ratio = t.gflops / predicted
    print(f"predicted {predicted:.3g} GFLOP/s = {bandwidth_gbps:.3g} GB/s × 2/32{note}")
    print(f"measured  {t.gflops:.3g} GFLOP/s ({t.gbps:.3g} GB/s counted) on n = {n:,}: "
          f"{ratio:.0%} of the prediction")
    reason = l01_claims.memory_precondition()
    if reason:
        why = f"the model does not apply here: {reason}"
    elif ratio > 1.1:
        why = ("above the roof: the roof was measured at a busier moment, or part of the arrays "
               "was still in the cache")
    elif ratio < 0.8:
        why = ("well under the roof: other programs were using the memory bus or the cores "
               "while it ran, or the bandwidth passed in was measured with more threads")
    else:
        why = "within 20%: axpy is memory-bound, and the roofline predicts it"
    print(f"why: {why}")
    return ratio
