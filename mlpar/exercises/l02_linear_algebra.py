"""Checks for the exercises of lesson 02 (parallel linear algebra).

Each ``check_*`` calls the student's function on fresh inputs and compares it with a reference
from ``mlpar``; where the exercise is about *how* the result is computed (rows on threads,
products of tiles, no loop over samples) it also inspects the function (numba's record of its
parallel loops, its syntax tree) or passes inputs that record what was done with them
(``mlpar.exercises.structure.Recorder``). Timing never decides.
"""

from __future__ import annotations

import warnings

import numpy as np

from mlpar.cpu import matmul as _matmul
from mlpar.cpu import vectorized as _vectorized
from mlpar.exercises import as_array, call, case_seed, expect, expect_close, passed, structure
from mlpar.exercises import l01_loops_to_threads as _l01

#: Calls that hand a whole product to BLAS or hide a loop (numpy's own Python-level loops).
BLAS_CALLS = {"dot", "matmul", "einsum", "tensordot", "inner", "vdot", "multi_dot", "gemm",
              "dgemm"}
HIDDEN_LOOPS = {"vectorize", "apply_along_axis", "fromiter", "frompyfunc", "map"}
#: (n, m, p) shapes for the matrix products: square, odd, thin, and a single row.
SHAPES = ((8, 8, 8), (12, 8, 16), (10, 7, 13), (5, 3, 2), (1, 9, 4), (33, 17, 29))


def check_parallel_matmul(func) -> None:
    """``func(a, b, c)``: C = A @ B written by a numba loop whose rows run on several threads."""
    name = "Exercise 1 (parallel matmul over rows)"
    expect(name, callable(func), f"expected a function, got {type(func).__name__}")
    expect(name, hasattr(func, "targetoptions"),
           "matmul_rows is a plain Python function; decorate it with @njit(parallel=True)")
    expect(name, structure.is_parallel_numba(func),
           "matmul_rows is compiled without parallel=True, so numba runs it on one thread")
    with warnings.catch_warnings():  # a placeholder says "not done yet" before anything else
        warnings.simplefilter("ignore")
        call(name, func, np.ones((2, 2)), np.ones((2, 2)), np.empty((2, 2)))
    tree = structure.source_tree(name, func)
    blas = sorted(structure.calls(tree) & BLAS_CALLS)
    expect(name, not blas and not structure.uses_matmul_operator(tree),
           f"matmul_rows calls {', '.join(blas) or '@'}, which hands the product to BLAS; "
           "write the loops yourself")
    for n, m, p in SHAPES:
        a, b = _matmul.random_matrices(n, m, p, seed=case_seed(n * m + p))
        c = np.full((n, p), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(name, func, a, b, c)
        expect_close(name, c, a @ b, what=f"C for ({n}, {m}) @ ({m}, {p})", rtol=1e-10,
                     atol=1e-10)
    loops = structure.prange_loops(func)
    expect(name, loops > 0, "numba found no prange loop in matmul_rows (got 0 parallel loops "
                            "from prange, expected at least 1): make the loop over rows a prange")
    # What each prange iteration does, from the function's Python source run with a traced
    # prange: the iterations must do the product, and no two may write the same element.
    a, b = _matmul.random_matrices(12, 7, 9, seed=case_seed(3))
    trace = _l01.trace_parallel(name, func, (a, b, np.zeros((12, 9))), {"a": 0, "b": 1, "c": 2})
    _l01._expect_parallel_work(name, trace, ("a", "b"), ("c",), loop="rows of C")
    shared = [i for i, where in trace.touched["c"]["write"].items() if len(where) > 1]
    expect(name, not shared,
           f"{len(shared)} element(s) of C are written by more than one iteration of the prange "
           "loop (a race: two threads may update the same c[i, j] at once); make the prange run "
           "over rows, so each iteration owns whole rows of C")
    passed(name, f"{loops} parallel loop(s), no BLAS; equals a @ b for {len(SHAPES)} shapes")


def check_blocked_matmul(func) -> None:
    """``func(a, b, block)`` -> ``a @ b`` computed as products of tiles no larger than block."""
    name = "Exercise 2 (blocked matmul)"
    cases = [(8, 8, 8, 4), (12, 8, 16, 4), (10, 7, 13, 4), (5, 3, 2, 8), (9, 9, 9, 1),
             (20, 11, 6, 5)]
    for n, m, p, block in cases:
        a0, b0 = _matmul.random_matrices(n, m, p, seed=case_seed(n + m + p))
        a = structure.Recorder(a0.copy())
        b = structure.Recorder(b0.copy(), a.log)
        got = call(name, func, a, b, block)
        expect(name, np.array_equal(a, a0) and np.array_equal(b, b0),
               "your function changed its inputs a or b; accumulate into a new array C instead")
        multiple = n % block == 0 and m % block == 0 and p % block == 0
        try:
            expect_close(name, np.asarray(got) if isinstance(got, np.ndarray) else got, a0 @ b0,
                         what=f"C for shapes ({n}, {m}) @ ({m}, {p}), block={block}",
                         rtol=1e-10, atol=1e-10)
        except AssertionError as err:
            if not multiple:
                raise AssertionError(
                    f"{err}\nHint: the sizes here are not multiples of the block, so the edge "
                    "tiles (the last in each direction) are smaller: slice up to "
                    "min(i + block, n), or let numpy clip a slice that runs past the end"
                ) from None
            raise
        products = a.log["products"]
        expect(name, bool(products),
               f"for shapes ({n}, {m}) @ ({m}, {p}) the check saw no product of tiles (got 0, "
               "expected one per tile triple); multiply slices of a and b with @, and do not "
               "convert them with np.asarray/np.array first (that hides them from the check)")
        largest = max(max(shape) for operands in products for shape in operands if shape)
        expect(name, largest <= block,
               f"for block={block} a product took an operand with a side of {largest} (the "
               f"whole matrix is ({n}, {m}) @ ({m}, {p})), expected every tile at most "
               f"{block} × {block}: multiply a[i:i+block, k:k+block] @ b[k:k+block, j:j+block]")
    passed(name, "equals a @ b, tile by tile, including edge tiles")


def _no_python_loops(name: str, func, what: str) -> None:
    tree = structure.source_tree(name, func)
    found = structure.loops(tree)
    expect(name, not found,
           f"{what} has {len(found)} Python loop(s) (for, while or a comprehension), expected 0: "
           "write it with whole-array operations")
    hidden = sorted(structure.calls(tree) & HIDDEN_LOOPS)
    expect(name, not hidden, f"{what} calls {', '.join(hidden)}, which runs a Python-level loop "
                             "over the elements; use whole-array operations")


def _expect_no_walks(name: str, log: dict, what: str) -> None:
    expect(name, log["walks"] == 0,
           f"{what} walked over its inputs row by row in Python ({log['walks']} row or element "
           "accesses, expected 0); use whole-array operations")


def logistic_gradient_loop(X, y, w) -> np.ndarray:
    """Σ_i (σ(x_iᵀ w) − y_i) x_i, the gradient of the logistic loss summed over samples
    (labels y_i in {0, 1}, σ(t) = 1 / (1 + e^(−t))), one sample at a time: the reference."""
    X, y, w = (np.asarray(v, dtype=float) for v in (X, y, w))
    grad = np.zeros(X.shape[1])
    for x_i, y_i in zip(X.tolist(), y.tolist(), strict=True):
        t = sum(a * b for a, b in zip(x_i, w.tolist(), strict=True))
        grad += (1.0 / (1.0 + np.exp(-t)) - y_i) * np.asarray(x_i)
    return grad


def check_gradient(func) -> None:
    """``func(X, y, w)`` -> the gradient of the summed logistic loss, shape (d,), written with
    matrix operations. Section 6 derives the least-squares gradient; this one is not printed
    anywhere before the exercise, so it has to be derived the same way."""
    name = "Exercise 3 (logistic gradient as matrix operations)"
    _l01.refuse_the_model(name, func, "logistic_gradient_loop", what="reference loop")
    call(name, func, np.ones((2, 2)), np.ones(2), np.ones(2))  # a placeholder: "not done yet"
    _no_python_loops(name, func, "gradient")
    for n, d, seed in [(50, 3, 0), (7, 11, 1), (1, 1, 2), (200, 5, 3)]:
        rng = np.random.default_rng(case_seed(seed))
        X = rng.standard_normal((n, d))
        y = (rng.random(n) < 0.5).astype(float)
        w = rng.standard_normal(d)
        expected = logistic_gradient_loop(X, y, w)
        Xr = structure.Recorder(X)
        got = call(name, func, Xr, structure.Recorder(y, Xr.log), structure.Recorder(w, Xr.log))
        _expect_no_walks(name, Xr.log, "gradient")
        got = as_array(name, got, what=f"the gradient for X of shape {X.shape}", finite=False)
        if got.shape != (d,) and got.size == d:
            raise AssertionError(f"{name}: got shape {got.shape}, expected ({d},); w and y are "
                                 "1-D vectors, so keep them 1-D (no [:, None] or .reshape)")
        if got.shape == (d,) and not np.allclose(got, expected, rtol=1e-8, atol=1e-10):
            hint = ""
            if np.allclose(-got, expected, rtol=1e-8, atol=1e-10):
                hint = "minus the gradient; the residual is σ(Xw) − y"
            elif n > 1 and np.allclose(got * n, expected, rtol=1e-8, atol=1e-10):
                hint = (f"the gradient divided by n={n}; this exercise's loss is a sum over "
                        "samples, not a mean")
            elif np.allclose(got, X.T @ (X @ w - y), rtol=1e-8, atol=1e-10):
                hint = ("the least-squares gradient of section 6; the logistic loss passes each "
                        "x_iᵀw through σ(t) = 1 / (1 + e^(−t)) before subtracting y_i")
            elif np.allclose(got, X.T @ (1.0 / (1.0 + np.exp(X @ w)) - y), rtol=1e-8,
                             atol=1e-10):
                hint = "σ(−Xw) instead of σ(Xw): σ(t) = 1 / (1 + e^(−t))"
            if hint:
                raise AssertionError(f"{name}: for X of shape {X.shape} got {got[0]:.6g} at "
                                     f"index 0, expected {expected[0]:.6g}: that is {hint}")
        expect_close(name, got, expected, what=f"the gradient for X of shape {X.shape}",
                     rtol=1e-8, atol=1e-10)
    passed(name, "no Python loop; Xᵀ(σ(Xw) − y) equals the per-sample loop")


def check_squared_distances(func) -> None:
    """``func(X, Y)`` -> squared Euclidean distances, shape (n, m), without Python loops."""
    name = "Exercise 4 (squared distances)"
    call(name, func, np.ones((2, 2)), np.ones((3, 2)))  # a placeholder: "not done yet"
    _no_python_loops(name, func, "squared_distances")
    # The last case measures points against themselves: the diagonal is exactly 0, where the
    # cancellation in ‖x‖² + ‖y‖² − 2xᵀy can leave a tiny negative number.
    for n, m, d, seed in [(6, 4, 3, 0), (1, 9, 2, 1), (5, 5, 1, 2), (30, 30, 7, 3)]:
        X = _vectorized.random_points(n, d, seed=case_seed(seed)) * 10.0
        Y = X if seed == 3 else _vectorized.random_points(m, d, seed=case_seed(seed + 10))
        expected = _vectorized.distances_loop(X, Y) ** 2
        Xr = structure.Recorder(X)
        got = call(name, func, Xr, structure.Recorder(Y, Xr.log))
        _expect_no_walks(name, Xr.log, "squared_distances")
        got = as_array(name, got, what=f"D² for X {X.shape} and Y {Y.shape}", finite=False)
        if got.shape == (m, n) and n != m:
            raise AssertionError(f"{name}: got shape {got.shape}, expected ({n}, {m}) "
                                 "(transposed?): row i is point X[i], column j is point Y[j]")
        if got.shape == expected.shape:
            close = np.allclose(got, expected, rtol=1e-8, atol=1e-8)
            if not close and np.allclose(got ** 2, expected, rtol=1e-8, atol=1e-8):
                raise AssertionError(f"{name}: these are distances, not squared distances; "
                                     "drop the square root")
            if (got < 0).any():
                raise AssertionError(f"{name}: got a negative squared distance {got.min():.3g}, "
                                     "expected >= 0; rounding in ‖x‖² + ‖y‖² − 2xᵀy can go "
                                     "below 0: clip at 0 (np.maximum(..., 0.0))")
        expect_close(name, got, expected, what=f"D² for X {X.shape} and Y {Y.shape}",
                     rtol=1e-8, atol=1e-8)
    passed(name, "no Python loop; equals the loop over pairs")


# --- Exercise 5: predict, then measure ------------------------------------------------------

def blocked_model(tile_rows: int, bandwidth_gbps: float, ceiling_gflops: float) -> float:
    """The roofline's bound for the blocked loop with B past the cache (GFLOP/s): each 8-byte
    element of B comes from memory once per tile of ``tile_rows`` rows of A and serves 2 flops
    per row, an intensity of 2·tile_rows/8; the rate is the smaller of the memory slope and the
    loop's in-core *ceiling* (the rate it reaches when B is in the cache: the roofline paper's
    ceilings, lower than the machine's peak for a loop that does not use every unit)."""
    return min(ceiling_gflops, bandwidth_gbps * 2 * tile_rows / 8)


_GIB = 2**30 / 1e9
BLOCKED_MISREADINGS = (
    (lambda r, b, p: b * 2 * r / 8, "that is above the ceiling: the loop cannot beat its own "
                                    "in-cache rate; the bound is the smaller of bandwidth × "
                                    "intensity and the ceiling"),
    (lambda r, b, p: max(p, b * 2 * r / 8), "the larger of the two bounds; a kernel is held "
                                            "to the smaller one"),
    (lambda r, b, p: min(p, b * 2 / 8), "that is ikj's intensity (2 flops per 8 bytes): "
                                        "blocking reads each element of B once per tile of "
                                        "rows, and uses it for 2 flops in every row: 2·rows/8"),
    (lambda r, b, p: min(p, b * 2 * r / 4), "4 bytes per element is float32; these matrices "
                                            "are float64: 8 bytes"),
    (lambda r, b, p: min(p, b * r / 8), "one flop per element and row; a multiply-add is 2 "
                                        "flops"),
    (lambda r, b, p: min(p, b * 8 / (2 * r)), "bytes per flop, not flops per byte: the "
                                              "intensity is 2·rows / 8"),
    (lambda r, b, p: min(p, b * 2 * r / 8 / _GIB), "GB and GiB mixed: GB/s and GFLOP/s are "
                                                   "both powers of ten"),
    (lambda r, b, p: min(p, b * 2 * r / 8 * _GIB), "GB and GiB mixed: GB/s and GFLOP/s are "
                                                   "both powers of ten"),
)


def check_blocked_prediction(predict_blocked_gflops) -> None:
    """``predict_blocked_gflops(tile_rows, bandwidth_gbps, ceiling_gflops)``: the roofline's
    GFLOP/s for the blocked loop with B past the cache. Graded against the model exactly, in
    both regimes (under the memory slope and under the ceiling); each way to misread it is
    refused by name."""
    from mlpar.exercises import grade_prediction

    name = "Exercise 5 (predict the blocked loop from the roofline)"
    _l01.refuse_the_model(name, predict_blocked_gflops, "blocked_model")
    rng = np.random.default_rng(case_seed(25))
    cases = []
    for rows in (1, 4, 16, 32):
        bandwidth = float(np.round(rng.uniform(5.0, 200.0), 3))
        slope = bandwidth * 2 * rows / 8
        # one case under the memory slope, one under the ceiling, at each tile height
        for ceiling in (slope * rng.uniform(1.5, 4.0), slope * rng.uniform(0.2, 0.7)):
            cases.append((rows, bandwidth, float(np.round(ceiling, 3))))
    grade_prediction(name, predict_blocked_gflops, cases, blocked_model, BLOCKED_MISREADINGS,
                     what="the predicted GFLOP/s",
                     names=("tile_rows", "bandwidth_gbps", "ceiling_gflops"))
    passed(name, f"min(ceiling, bandwidth × 2·rows / 8) in {len(cases)} cases, under the "
                 "memory slope and under the ceiling; now compare it with the sweep")


def in_cache_ceiling(sweep) -> tuple[float, int]:
    """The blocked loop's rate with B in the cache, where memory is not its limit: the in-core
    ceiling of Exercise 5, measured now (one thread, the sweep's rows and block) at the largest
    of the sweep's sizes whose B fills at most half the last-level cache (the smallest size if
    none does or the cache is unknown). Measured afresh rather than read from the sweep, so the
    prediction is not a number the lesson printed before the exercise. Returns (GFLOP/s, m)."""
    from mlpar.cpu import stream

    llc = stream.last_level_cache()
    inside = [m for m, nbytes in zip(sweep.sizes, sweep.b_bytes, strict=True)
              if llc and nbytes <= llc / 2]
    m = max(inside) if inside else min(sweep.sizes)
    again = _matmul.measure_blocking((m,), rows=sweep.rows, block=sweep.block, repeat=3)
    return again.blocked[0], m


def compare_blocked_prediction(predict_blocked_gflops, *, sweep, bandwidth_gbps: float,
                               ceiling_gflops: float | None = None) -> float:
    """Print how far the sweep's blocked rate at its largest B fell from the prediction made
    with one-thread figures (the sweep runs on one thread): ``bandwidth_gbps`` one thread's
    memory roof, ``ceiling_gflops`` the loop's in-cache rate (default ``in_cache_ceiling``).
    Timing never grades. Returns measured / predicted."""
    from mlpar.core import validation

    if not isinstance(sweep, _matmul.BlockingSweep):
        raise TypeError(f"sweep: expected a BlockingSweep (mm.measure_blocking), got "
                        f"{type(sweep).__name__}")
    bandwidth_gbps = validation.positive("bandwidth_gbps", bandwidth_gbps)
    if ceiling_gflops is None:
        ceiling, m = in_cache_ceiling(sweep)
        print(f"ceiling   {ceiling:.3g} GFLOP/s: the blocked loop measured now with B "
              f"{m} x {m} ({8 * m * m / 2**20:g} MiB, in the cache), one thread")
    else:
        ceiling = validation.positive("ceiling_gflops", ceiling_gflops)
    rows = min(sweep.rows, sweep.block)
    predicted = blocked_model(rows, bandwidth_gbps, ceiling)
    try:
        got = float(predict_blocked_gflops(rows, bandwidth_gbps, ceiling))
    except Exception:  # noqa: BLE001 - a broken prediction is graded by the check, not here
        got = float("nan")
    note = "" if np.isclose(got, predicted, rtol=1e-9) else " (the model's value; yours differs)"
    measured = sweep.blocked[-1]
    ratio = measured / predicted
    bound = "memory slope" if bandwidth_gbps * 2 * rows / 8 < ceiling else "in-cache ceiling"
    print(f"predicted {predicted:.3g} GFLOP/s (the {bound} binds; tile of {rows} rows){note}")
    print(f"measured  {measured:.3g} GFLOP/s (blocked, B {sweep.b_bytes[-1] >> 20} MiB): "
          f"{ratio:.0%} of the prediction")
    if ratio > 1.15:
        why = ("above the prediction: the in-cache rate and the bandwidth were measured at other "
               "moments on a shared machine, or B still fits partly in the cache")
    elif ratio < 0.7:
        why = ("well under the prediction: memory traffic the model leaves out (A's and C's "
               "tiles, B's tile evicted before every row of the tile used it), or other "
               "programs were using the memory bus while the sweep ran")
    else:
        why = ("within the noise: once the loop's own in-cache rate is the ceiling, the "
               "roofline predicts it. The machine's dgemm peak would be a ceiling several times "
               "too high: this loop loads and stores c[i, j] for every multiply-add, which "
               "packing and register blocking (section 4) remove")
    print(f"why: {why}")
    return ratio
