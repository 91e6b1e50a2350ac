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



# --- What each iteration of a prange does: the structural tool of Exercises 1 and 3 ----------

class _Watched(np.ndarray):
    """An array that notes, for every element read or written, which prange iteration was
    running (``None``: none, the serial part of the function)."""

    def __new__(cls, array, name, trace):
        obj = np.array(array, copy=True).view(cls)
        obj.name, obj.trace = name, trace
        obj.grid = np.arange(obj.size).reshape(obj.shape)
        return obj

    def __array_finalize__(self, obj):
        self.name = getattr(obj, "name", None)
        self.trace = getattr(obj, "trace", None)
        self.grid = getattr(obj, "grid", None)

    def _note(self, kind, key):
        if self.trace is not None and self.grid is not None:
            touched = np.ravel(np.asarray(self.grid)[key])
            self.trace.note(self.name, kind, touched)

    def __getitem__(self, key):
        self._note("read", key)
        return np.asarray(self)[key]

    def __setitem__(self, key, value):
        self._note("write", key)
        np.asarray(self)[key] = np.asarray(value) if isinstance(value, _Watched) else value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # a whole-array operation (x * a, out[:] = ...) reads every element of its operands
        for i in inputs:
            if isinstance(i, _Watched):
                i._note("read", ...)
        plain = [np.asarray(i) if isinstance(i, _Watched) else i for i in inputs]
        if "out" in kwargs:
            for o in kwargs["out"]:
                if isinstance(o, _Watched):
                    o._note("write", ...)
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, _Watched) else o
                                  for o in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)


class ParallelTrace:
    """Runs a numba function's Python source with ``prange`` replaced by a loop that tells
    which iteration is running, on arrays that note what each iteration reads and writes.

    ``touched[name][kind]`` maps each element (flat index) to the set of prange iterations
    that read or wrote it, ``None`` standing for the serial part; ``iterations`` counts the
    prange iterations. This is what the threads would do: numba hands whole iterations to
    threads, so an element touched outside every iteration is touched by one thread alone.
    """

    def __init__(self):
        self.current = None
        self.loops = 0
        self.iterations = 0
        self.touched: dict = {}

    def note(self, name, kind, flat):
        places = self.touched.setdefault(name, {}).setdefault(kind, {})
        for index in flat.tolist():
            places.setdefault(index, set()).add(self.current)

    def prange(self, *args):
        outer, self.loops = self.current, self.loops + 1
        loop = self.loops
        for i in range(*args):
            self.iterations += 1
            # a prange inside a prange iteration runs on that iteration's thread
            self.current = (loop, i) if outer is None else outer
            yield i
        self.current = outer

    def tasks(self, name, kind) -> dict:
        """{iteration: set of flat indices} for ``name``'s reads or writes (None: serial)."""
        found: dict = {}
        for index, where in self.touched.get(name, {}).get(kind, {}).items():
            for task in where:
                found.setdefault(task, set()).add(index)
        return found


def _with_traced_prange(func, trace: ParallelTrace, seen=None):
    """``func``'s Python function, rebuilt with ``prange`` (and numba helpers it calls) traced."""
    import types

    import numba

    seen = {} if seen is None else seen
    py = structure.python_function(func)
    if id(py) in seen:
        return seen[id(py)]
    names = dict(py.__globals__)
    glb = dict(names)
    rebuilt = types.FunctionType(py.__code__, glb, py.__name__, py.__defaults__, py.__closure__)
    seen[id(py)] = rebuilt

    class _Numba:  # ``numba.prange`` / ``nb.prange`` written through the module
        def __getattr__(self, attr):
            return trace.prange if attr == "prange" else getattr(numba, attr)

    for key, value in names.items():
        if value is numba.prange:
            glb[key] = trace.prange
        elif value is numba:
            glb[key] = _Numba()
        elif key in py.__code__.co_names and hasattr(value, "py_func") and value is not func:
            glb[key] = _with_traced_prange(value, trace, seen)  # a helper it calls
    return rebuilt


def trace_parallel(name: str, func, args: tuple, watch: dict) -> ParallelTrace:
    """Run ``func(*args)`` as Python with its prange traced; ``watch``: array name -> its
    position in ``args`` (a copy that notes every access is passed there)."""
    trace = ParallelTrace()
    args = list(args)
    for key, position in watch.items():
        args[position] = _Watched(args[position], key, trace)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _with_traced_prange(func, trace)(*args)
    except AssertionError:
        raise
    except Exception as err:  # noqa: BLE001 - a function numba runs but Python cannot
        raise AssertionError(
            f"{name}: the check runs your function's Python source to see what each prange "
            f"iteration does, and it raised {type(err).__name__}: {err}; keep to plain loops "
            "and array indexing inside it") from None
    return trace


def _serial_work(trace: ParallelTrace, name: str, kind: str) -> int:
    return len(trace.tasks(name, kind).get(None, ()))


def _expect_parallel_work(name: str, trace: ParallelTrace, reads, writes, *, loop: str) -> None:
    """Every element of ``reads`` is read, and of ``writes`` written, inside prange iterations,
    by at least two of them: the threads do the work, not a serial loop beside the prange."""
    for array in reads:
        serial = _serial_work(trace, array, "read")
        expect(name, serial == 0,
               f"{serial} element(s) of {array} are read outside the prange loop, by one "
               f"thread: the work must happen inside the parallel loop ({loop}), not in a "
               "serial loop beside it (a prange that only fills the output does not count)")
    for array in writes:
        tasks = trace.tasks(array, "write")
        last = {index for index, where in trace.touched.get(array, {}).get("write", {}).items()
                if None in where}
        expect(name, not last,
               f"{len(last)} element(s) of {array} are written outside the prange loop, by "
               f"one thread: compute them inside the parallel loop ({loop})")
        busy = [t for t in tasks if t is not None]
        expect(name, len(busy) >= 2,
               f"one iteration of the prange loop writes all of {array}, so one thread does "
               f"all the work; split {loop} into many iterations")


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
    n = 4099  # more than a few blocks of any size a student might choose
    x, y = rng.random(n), rng.random(n)
    trace = trace_parallel(name, axpy, (2.5, x, y, np.zeros(n)), {"x": 1, "y": 2, "out": 3})
    _expect_parallel_work(name, trace, ("x", "y"), ("out",), loop="one element or block per "
                                                                  "iteration")
    passed(name, f"compiled with {structure.prange_loops(axpy)} parallel loop(s), which do "
                 "all the work; matches "
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


class _Link:
    """A number that remembers the longest chain of additions it came from (its *depth*).

    Summing ``x`` in one running sum gives the total at depth n: every addition waits for the
    one before. Two running sums give depth about n/2, however they are spelled; a counter
    beside one real sum (``count += 1``) leaves the sum's depth at n.
    """

    __slots__ = ("value", "depth")

    def __init__(self, value, depth=0):
        self.value, self.depth = float(value), depth

    def _join(self, other, op):
        if isinstance(other, _Link):
            return _Link(op(self.value, other.value), max(self.depth, other.depth) + 1)
        if isinstance(other, (int, float, np.number)):
            return _Link(op(self.value, float(other)), self.depth + 1)
        return NotImplemented

    def __add__(self, other):
        return self._join(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other):
        return self._join(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._join(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._join(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __float__(self):
        return self.value


def chain_depth(func, n: int) -> int | None:
    """The longest chain of dependent additions in ``func``'s sum of n numbers, run as Python
    on numbers that count it; None when the result does not carry the count (converted)."""
    x = np.empty(n, dtype=object)
    for i in range(n):
        x[i] = _Link(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = structure.python_function(func)(x)
        except Exception:  # noqa: BLE001 - not every right answer runs on objects; then skip
            return None
    got = got.item() if isinstance(got, np.ndarray) and got.shape == () else got
    return got.depth if isinstance(got, _Link) else None


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
    n = 1000
    depth = chain_depth(sum_two_accumulators, n)
    expect(name, depth is None or depth <= 0.6 * n + 2,
           f"the sum of {n} numbers comes out of one chain of {depth} dependent additions, "
           f"as with a single running sum (two chains would be about {n // 2}): both running "
           "sums must add elements of x, and both must reach the result")
    passed(name, "two running sums in one loop; correct for lengths 0, 1, 2, 3, 10 and 1001")


def check_chunked_sum(chunked_sum) -> None:
    """``chunked_sum(x, n_chunks)``: a prange over chunks, each summed into its own partial."""
    name = "Exercise 3 (chunked parallel sum)"
    _require_parallel(name, chunked_sum, "chunked_sum")
    rng = np.random.default_rng(case_seed(3))
    # (13, 4): n % n_chunks == 1, where a chunk size rounded down by one loses the last element
    for n, chunks in ((10, 2), (11, 3), (13, 4), (1000, 4), (7, 7), (5, 8), (100_003, 16), (0, 2)):
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
    for n, chunks in ((1000, 4), (11, 3)):
        trace = trace_parallel(name, chunked_sum, (rng.random(n), chunks), {"x": 0})
        serial = _serial_work(trace, "x", "read")
        expect(name, serial == 0,
               f"for n={n} and n_chunks={chunks}, {serial} element(s) of x are read outside "
               "the prange loop, by one thread: every chunk, the last one too, must be summed "
               "inside the parallel loop")
        parts = {t: sorted(i) for t, i in trace.tasks("x", "read").items() if t is not None}
        expect(name, len(parts) == chunks,
               f"for n={n} and n_chunks={chunks} your prange loop reads x in {len(parts)} "
               f"iterations, expected {chunks}, one per chunk: it loops over "
               f"{'elements' if len(parts) == n else 'something else'}, not over the "
               "n_chunks chunks (n_chunks is ignored)")
        scattered = [p for p in parts.values() if p[-1] - p[0] + 1 != len(p)]
        expect(name, not scattered,
               f"for n={n} and n_chunks={chunks} an iteration reads x at {scattered[0][:4]}...: "
               "not one contiguous chunk; chunk c is x[c·size : (c+1)·size], so each thread "
               "streams its own stretch of memory" if scattered else "")
    passed(name, "a parallel loop over n_chunks contiguous chunks; equals math.fsum for 8 "
                 "lengths and chunk counts")
    print("  The question: with 2 chunks or more, 2 threads can share the work. Each chunk is "
          "one chain of additions (section 5): one add per add latency, well under what one "
          "core can stream from memory, so far beyond the cache the sum is bound by that "
          "latency, not by memory, and 2 threads nearly double it. With four accumulators or "
          "fastmath in each chunk, one thread comes close to the memory roof, and a second "
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


def names_used(func) -> set[str]:
    """Every global and attribute name ``func``'s code (and code nested in it) refers to."""
    found, stack = set(), [getattr(structure.python_function(func), "__code__", None)]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        found.update(code.co_names)
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return found


def refuse_the_model(name: str, func, model: str, what: str = "model") -> None:
    """Refuse an answer that calls the course's own version of what the exercise asks the
    student to write (its model, or its reference), by its name."""
    expect(name, model not in names_used(func),
           f"your function calls {model}, the course's own {what}: the exercise asks you to "
           "write it yourself")


def check_axpy_prediction(predict_axpy_gflops) -> None:
    """``predict_axpy_gflops(bandwidth_gbps)``: the roofline's GFLOP/s for axpy past the cache.

    Graded against the model at several bandwidths, exactly; each way to misread the model
    (bytes without write-allocate, flops miscounted, GB vs GiB, ...) is refused by name.
    """
    name = "Exercise 4 (predict axpy from the roofline)"
    refuse_the_model(name, predict_axpy_gflops, "axpy_model")
    rng = np.random.default_rng(case_seed(14))
    cases = [(float(b),) for b in np.round(rng.uniform(5.0, 400.0, 4), 3)] + [(25.0,)]
    grade_prediction(name, predict_axpy_gflops, cases, axpy_model, AXPY_MISREADINGS,
                     what="the predicted GFLOP/s", names=("bandwidth_gbps",))
    passed(name, "bandwidth × 2 flops / 32 bytes at 5 bandwidths; now measure it")


@njit(parallel=True)
def _reference_axpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


def measure_axpy_prediction(predict_axpy_gflops, *, bandwidth_gbps: float, arrays,
                            axpy=None) -> float:
    """Time ``axpy`` (the student's of Exercise 1; a reference parallel axpy when it is None,
    or when it does not compute a·x + y) on ``arrays`` (x, y, out; ``out`` is overwritten) and
    print how far the measurement fell from the prediction at ``bandwidth_gbps``, and why.

    Timing never grades: this only reports. The prediction used is the student's when it
    matches the model, else the model's (and it says so). The printed lines give numbers, not
    the model's formula (that is what Exercise 4 asks for). Returns measured / predicted.
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
    timed, whose = _reference_axpy, "a reference parallel axpy"
    if axpy is not None:
        try:  # the student's axpy, where it runs and computes a·x + y on a small case
            small_x, small_y, small_out = x[:64].copy(), y[:64].copy(), np.zeros(64)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                axpy(2.5, small_x, small_y, small_out)
            if np.allclose(small_out, 2.5 * small_x + small_y):
                timed, whose = axpy, "your axpy"
        except Exception:  # noqa: BLE001, S110 - a broken axpy is graded by Exercise 1's check
            pass
    t = timing.measure(timed, 2.5, x, y, out, repeat=5,
                       nbytes=AXPY_BYTES * n, flops=AXPY_FLOPS * n)
    ratio = t.gflops / predicted
    print(f"predicted {predicted:.3g} GFLOP/s at {bandwidth_gbps:.3g} GB/s{note}")
    print(f"measured  {t.gflops:.3g} GFLOP/s ({whose}, {t.gbps:.3g} GB/s counted) on "
          f"n = {n:,}: {ratio:.0%} of the prediction")
    reason = l01_claims.memory_precondition()
    if reason:
        why = f"the model does not apply here: {reason}"
    elif ratio > 1.1:
        why = ("above the roof: the roof was measured at a busier moment, or part of the arrays "
               "was still in the cache")
    elif ratio < 0.8:
        why = ("well under the roof: other programs were using the memory bus or the cores "
               "while it ran, the bandwidth passed in was measured with more threads than the "
               "axpy used, or the axpy timed runs on one thread")
    else:
        why = "within 20%: axpy is memory-bound, and the roofline predicts it"
    print(f"why: {why}")
    return ratio
