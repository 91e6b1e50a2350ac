"""Lesson 02's checks: right answers written differently pass; wrong ones fail by name.

Wrong solutions that passed the old checks (``a @ b`` for the blocked product, Python loops
for the gradient and the distances) are in the catalogues below and must now fail.
"""

import numpy as np
import pytest
from numba import njit, prange

from mlpar.exercises import l02_linear_algebra as ex

pytestmark = pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")

EX1, EX2, EX3, EX4 = "Exercise 1", "Exercise 2", "Exercise 3", "Exercise 4"


# --- Exercise 1: parallel matmul over rows ---------------------------------------------------

@njit(parallel=True)
def rows_ikj(a, b, c):
    for i in prange(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = 0.0
        for k in range(a.shape[1]):
            aik = a[i, k]
            for j in range(b.shape[1]):
                c[i, j] += aik * b[k, j]


@njit(parallel=True)
def rows_dot_products(a, b, c):  # ijk inside each row: slower, still right and parallel
    n, m = a.shape
    for i in prange(n):
        for j in range(b.shape[1]):
            total = 0.0
            for k in range(m):
                total += a[i, k] * b[k, j]
            c[i, j] = total


@njit(parallel=True)
def rows_by_blas(a, b, c):
    c[:, :] = a @ b


@njit(parallel=True)
def rows_by_np_dot(a, b, c):
    for i in prange(a.shape[0]):
        c[i, :] = np.dot(a[i], b)


@njit(parallel=True)
def rows_with_range(a, b, c):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total = 0.0
            for k in range(a.shape[1]):
                total += a[i, k] * b[k, j]
            c[i, j] = total


@njit
def rows_serial(a, b, c):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total = 0.0
            for k in range(a.shape[1]):
                total += a[i, k] * b[k, j]
            c[i, j] = total


@njit(parallel=True)
def rows_not_zeroed(a, b, c):  # accumulates into the NaN the check put in c
    for i in prange(a.shape[0]):
        for k in range(a.shape[1]):
            for j in range(b.shape[1]):
                c[i, j] += a[i, k] * b[k, j]


@njit(parallel=True)
def rows_transposed_b(a, b, c):
    for i in prange(a.shape[0]):
        for j in range(b.shape[1]):
            total = 0.0
            for k in range(a.shape[1]):
                total += a[i, k] * b[j % b.shape[0], k % b.shape[1]]
            c[i, j] = total


def rows_plain_python(a, b, c):
    c[:, :] = a @ b


@njit(parallel=True)
def rows_prange_only_zeroes(a, b, c):  # issue 35: the prange zeroes C, a serial loop works
    n, m = a.shape
    p = b.shape[1]
    for i in prange(n):
        for j in range(p):
            c[i, j] = 0.0
    for i in range(n):
        for k in range(m):
            for j in range(p):
                c[i, j] += a[i, k] * b[k, j]


@njit(parallel=True)
def rows_racing_over_k(a, b, c):  # the prange runs over k: every iteration updates all of C
    n, m = a.shape
    p = b.shape[1]
    for i in prange(n):
        c[i, :] = 0.0
    for k in prange(m):
        for i in range(n):
            for j in range(p):
                c[i, j] += a[i, k] * b[k, j]


@njit(parallel=True)
def rows_by_row_slices(a, b, c):  # whole-row updates with slices, rows on threads
    for i in prange(a.shape[0]):
        row = np.zeros(b.shape[1])
        for k in range(a.shape[1]):
            row += a[i, k] * b[k, :]
        c[i, :] = row


@pytest.mark.parametrize("solution", [rows_ikj, rows_dot_products, rows_by_row_slices])
def test_correct_parallel_matmul_passes(solution, capsys):
    ex.check_parallel_matmul(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 1")


@pytest.mark.parametrize("wrong, message", [
    (rows_by_blas, "calls @, which hands the product to BLAS"),
    (rows_by_np_dot, "calls dot, which hands the product to BLAS"),
    (rows_with_range, "no prange loop .*got 0 parallel loops"),
    (rows_serial, "without parallel=True"),
    (rows_plain_python, "plain Python function"),
    (rows_not_zeroed, r"C for \(8, 8\) @ \(8, 8\) differs .*got nan"),
    (rows_transposed_b, r"differs from the reference .*got .*expected"),
    (rows_prange_only_zeroes, "element.s. of a are read outside the prange loop"),
    (rows_racing_over_k, "differs from|written by more than one iteration .*a race"),
    (None, "expected a function, got NoneType"),
])
def test_wrong_parallel_matmul_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX1} .*{message}"):
        ex.check_parallel_matmul(wrong)


# --- Exercise 2: blocked matmul with numpy tiles ---------------------------------------------

def blocked(a, b, block):
    n, m = a.shape
    p = b.shape[1]
    c = np.zeros((n, p))
    for i in range(0, n, block):
        for k in range(0, m, block):
            for j in range(0, p, block):
                c[i:i + block, j:j + block] += a[i:i + block, k:k + block] @ b[k:k + block,
                                                                                j:j + block]
    return c


def blocked_with_dot_and_min(a, b, block):  # explicit edges, np.dot, another loop order
    n, m = a.shape
    p = b.shape[1]
    c = np.zeros((n, p))
    for j in range(0, p, block):
        j1 = min(j + block, p)
        for i in range(0, n, block):
            i1 = min(i + block, n)
            for k in range(0, m, block):
                k1 = min(k + block, m)
                c[i:i1, j:j1] = c[i:i1, j:j1] + np.dot(a[i:i1, k:k1], b[k:k1, j:j1])
    return c


def whole_product(a, b, block):
    return a @ b


def whole_product_np_dot(a, b, block):
    return np.dot(a, b)


def whole_product_einsum(a, b, block):
    return np.einsum("ik,kj->ij", a, b)


def row_strips(a, b, block):  # tiles only along the rows of A: a strip times all of B
    c = np.zeros((a.shape[0], b.shape[1]))
    for i in range(0, a.shape[0], block):
        c[i:i + block] = a[i:i + block] @ b
    return c


def hidden_with_asarray(a, b, block):
    return np.asarray(a) @ np.asarray(b)


def full_tiles_only(a, b, block):
    n, m = a.shape
    p = b.shape[1]
    c = np.zeros((n, p))
    for i in range(0, n - block + 1, block):
        for k in range(0, m - block + 1, block):
            for j in range(0, p - block + 1, block):
                c[i:i + block, j:j + block] += (a[i:i + block, k:k + block]
                                                @ b[k:k + block, j:j + block])
    return c


def in_place(a, b, block):
    a[0, 0] += 1.0
    return blocked(a, b, block)


def missing_k_accumulation(a, b, block):  # = instead of +=: only the last k-tile survives
    n, m = a.shape
    p = b.shape[1]
    c = np.zeros((n, p))
    for i in range(0, n, block):
        for k in range(0, m, block):
            for j in range(0, p, block):
                c[i:i + block, j:j + block] = a[i:i + block, k:k + block] @ b[k:k + block,
                                                                               j:j + block]
    return c


@pytest.mark.parametrize("solution", [blocked, blocked_with_dot_and_min])
def test_correct_blocked_matmul_passes(solution, capsys):
    ex.check_blocked_matmul(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 2")


@pytest.mark.parametrize("wrong, message", [
    (whole_product, r"operand with a side of 8 .*expected every tile at most 4"),
    (whole_product_np_dot, r"operand with a side of 8"),
    (whole_product_einsum, r"operand with a side of 8"),
    (row_strips, r"operand with a side of 8"),
    (hidden_with_asarray, "saw no product of tiles"),
    (full_tiles_only, r"differs from the reference.*edge tiles"),
    (in_place, "changed its inputs"),
    (missing_k_accumulation, r"differs from the reference .*got .*expected"),
    (lambda a, b, block: np.zeros((3, 3)), r"has shape \(3, 3\), expected \(8, 8\)"),
    (lambda a, b, block: None, "is None"),
    (lambda a, b, block: [[0.0]], r"has shape \(1, 1\)"),
    (lambda a, b, block: np.full((8, 8), np.nan), "got nan"),
    (lambda a, b, block: 1 / 0, "raised ZeroDivisionError"),
])
def test_wrong_blocked_matmul_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX2} .*{message}"):
        ex.check_blocked_matmul(wrong)


# --- Exercise 3: the logistic gradient as matrix operations ----------------------------------

def gradient(X, y, w):
    return X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y)


def gradient_einsum(X, y, w):  # scipy's expit for σ, einsum for the products
    from scipy.special import expit

    residual = expit(np.einsum("ij,j->i", X, w)) - y
    return np.einsum("ij,i->j", X, residual)


def gradient_tanh(X, y, w):  # σ(t) = (1 + tanh(t/2)) / 2, the residual weighted by rows
    p = 0.5 * (1.0 + np.tanh(0.5 * (X @ w)))
    return ((p - y)[:, None] * X).sum(axis=0)


def gradient_loop_over_samples(X, y, w):
    g = np.zeros(X.shape[1])
    for i in range(X.shape[0]):
        g += (1.0 / (1.0 + np.exp(-(X[i] @ w))) - y[i]) * X[i]
    return g


def gradient_comprehension(X, y, w):
    return sum([(1.0 / (1.0 + np.exp(-(x_i @ w))) - y_i) * x_i for x_i, y_i in zip(X, y)])


def gradient_by_helper(X, y, w):  # no loop in its own source: the loop is in the helper
    return gradient_loop_over_samples(X, y, w)


def gradient_apply_along_axis(X, y, w):
    r = 1.0 / (1.0 + np.exp(-(X @ w))) - y
    return np.apply_along_axis(lambda col: col @ r, 0, X)


@pytest.mark.parametrize("solution", [gradient, gradient_einsum, gradient_tanh])
def test_correct_gradient_passes(solution, capsys):
    ex.check_gradient(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 3")


def _sigmoid(t):
    return 1.0 / (1.0 + np.exp(-t))


@pytest.mark.parametrize("wrong, message", [
    (gradient_loop_over_samples, r"has 1 Python loop\(s\)"),
    (gradient_comprehension, r"has 1 Python loop\(s\)"),
    (gradient_by_helper, r"walked over its inputs row by row .*expected 0"),
    (gradient_apply_along_axis, "calls apply_along_axis"),
    (lambda X, y, w: X.T @ (y - _sigmoid(X @ w)), "minus the gradient"),
    (lambda X, y, w: X.T @ (_sigmoid(X @ w) - y) / len(y), "divided by n"),
    (lambda X, y, w: X.T @ (X @ w - y), "the least-squares gradient of section 6"),
    (lambda X, y, w: X.T @ (_sigmoid(-(X @ w)) - y), r"σ\(−Xw\) instead of σ\(Xw\)"),
    (lambda X, y, w: (X.T @ (_sigmoid(X @ w) - y))[:, None], "keep them 1-D"),
    (lambda X, y, w: X.T @ _sigmoid(X @ w), r"differs from the reference"),
    (lambda X, y, w: None, "is None"),
    (lambda X, y, w: np.full(X.shape[1], np.nan), "got nan"),
    (lambda X, y, w: w.shape[5], "raised IndexError"),
    (lambda X, y, w: ex.logistic_gradient_loop(X, y, w), "calls logistic_gradient_loop, the "
                                                         "course's own reference loop"),
])
def test_wrong_gradient_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX3} .*{message}"):
        ex.check_gradient(wrong)


# --- Exercise 4: squared distances -----------------------------------------------------------

def squared_distances(X, Y):
    return ((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1)


def squared_distances_gemm(X, Y):
    sq = (X * X).sum(axis=1)[:, None] + (Y * Y).sum(axis=1)[None, :] - 2.0 * X @ Y.T
    return np.maximum(sq, 0.0)


def distances_double_loop(X, Y):
    D = np.empty((X.shape[0], Y.shape[0]))
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            D[i, j] = ((X[i] - Y[j]) ** 2).sum()
    return D


def distances_by_helper(X, Y):
    return _rows(X, Y)


def _rows(X, Y):
    return np.array([((x - Y) ** 2).sum(axis=1) for x in X])


@pytest.mark.parametrize("solution", [squared_distances, squared_distances_gemm])
def test_correct_distances_pass(solution, capsys):
    ex.check_squared_distances(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 4")


@pytest.mark.parametrize("wrong, message", [
    (distances_double_loop, r"has 2 Python loop\(s\)"),
    (distances_by_helper, "walked over its inputs row by row"),
    (lambda X, Y: np.sqrt(squared_distances(X, Y)), "not squared distances"),
    (lambda X, Y: squared_distances(Y, X), r"expected \(6, 4\) \(transposed\?\)"),
    (lambda X, Y: squared_distances(X, Y) - 1e-9, "negative squared distance"),
    (lambda X, Y: (X[:, None, :] - Y[None, :, :]).sum(axis=-1) ** 2, "differs"),
    (lambda X, Y: None, "is None"),
    (lambda X, Y: "D", "should be numbers"),
    (lambda X, Y: np.full((X.shape[0], Y.shape[0]), np.nan), "got nan"),
])
def test_wrong_distances_are_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX4} .*{message}"):
        ex.check_squared_distances(wrong)


def test_unfinished_exercises_say_not_done(capsys):
    def placeholder(*args):
        raise NotImplementedError

    @njit(parallel=True)
    def parallel_placeholder(a, b, c):
        raise NotImplementedError

    for check in (ex.check_blocked_matmul, ex.check_gradient, ex.check_squared_distances):
        with pytest.raises(AssertionError, match="not done yet"):
            check(placeholder)
    with pytest.raises(AssertionError, match=f"^{EX1}.*not done yet"):
        ex.check_parallel_matmul(parallel_placeholder)
    assert capsys.readouterr().out == ""


# --- Exercise 5: predict the blocked loop from the roofline ----------------------------------

EX5 = "Exercise 5"


def predict_blocked(tile_rows, bandwidth_gbps, peak_gflops):
    return min(peak_gflops, bandwidth_gbps * 2 * tile_rows / 8)


def predict_blocked_by_cases(tile_rows, bandwidth_gbps, peak_gflops):  # the same, with an if
    intensity = tile_rows / 4
    slope = intensity * bandwidth_gbps
    if slope > peak_gflops:
        return peak_gflops
    return slope


def predict_blocked_numpy(tile_rows, bandwidth_gbps, peak_gflops):
    return np.minimum(peak_gflops, np.float64(bandwidth_gbps) * tile_rows * 0.25)


@pytest.mark.parametrize("solution", [predict_blocked, predict_blocked_by_cases,
                                      predict_blocked_numpy])
def test_correct_blocked_prediction_passes(solution, capsys):
    ex.check_blocked_prediction(solution)
    assert capsys.readouterr().out.startswith("✓ Exercise 5")


GIB = 2**30 / 1e9


@pytest.mark.parametrize("wrong, message", [
    (lambda r, b, p: b * 2 * r / 8, "above the ceiling"),              # no min with the ceiling
    (lambda r, b, p: max(p, b * 2 * r / 8), "the larger of the two"),  # max for min
    (lambda r, b, p: min(p, b * 2 / 8), "ikj's intensity"),            # reuse ignored
    (lambda r, b, p: min(p, b * 2 * r / 4), "float32"),                # 4-byte elements
    (lambda r, b, p: min(p, b * r / 8), "a multiply-add is 2"),        # flops miscounted
    (lambda r, b, p: min(p, b * 8 / (2 * r)), "bytes per flop"),       # intensity upside down
    (lambda r, b, p: min(p, b * 2 * r / 8 / GIB), "GB and GiB mixed"),
    (lambda r, b, p: min(p, b * 2 * r / 8 * GIB), "GB and GiB mixed"),
    (lambda r, b, p: p, r"got .*expected"),                            # always the peak
    (lambda r, b, p: 8.0, "does not change with the inputs"),
    (lambda r, b, p: None, "is None"),
    (lambda r, b, p: [p], r"has shape \(1,\)"),
    (lambda r, b, p: float("nan"), "NaN or infinity"),
    ([1, 2], "expected a function"),
])
def test_wrong_blocked_prediction_is_rejected(wrong, message):
    with pytest.raises(AssertionError, match=f"(?s)^{EX5} .*{message}"):
        ex.check_blocked_prediction(wrong)


def test_a_prediction_that_calls_the_courses_model_is_refused():
    with pytest.raises(AssertionError, match=f"^{EX5}.*calls blocked_model, the course's own"):
        ex.check_blocked_prediction(lambda r, b, c: ex.blocked_model(r, b, c))


def test_blocked_comparison_reports_and_never_grades(capsys, monkeypatch):
    from mlpar.core import environment
    from mlpar.cpu import matmul as mm

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "llc=32MiB")  # not this host's cache

    sweep = mm.BlockingSweep(32, 64, (64, 128), (2.0, 1.0), (4.0, 3.0))
    ratio = ex.compare_blocked_prediction(lambda r, b, p: 0.0, sweep=sweep, bandwidth_gbps=10.0,
                                          ceiling_gflops=40.0)
    text = capsys.readouterr().out
    assert ratio == pytest.approx(3.0 / 40.0) and "well under the prediction" in text
    assert "in-cache ceiling binds" in text and "yours differs" in text
    # by default the ceiling is the loop's own in-cache rate, measured afresh
    ratio = ex.compare_blocked_prediction(predict_blocked, sweep=sweep, bandwidth_gbps=100.0)
    text = capsys.readouterr().out
    assert ratio > 0 and "yours differs" not in text and "measured now with B 128 x 128" in text
    with pytest.raises(TypeError, match="sweep"):
        ex.compare_blocked_prediction(predict_blocked, sweep=None, bandwidth_gbps=1.0,
                                      ceiling_gflops=1.0)


# --- each exercise graded on its own ---------------------------------------------------------

RIGHT = {"rows": rows_ikj, "blocked": blocked, "gradient": gradient,
         "distances": squared_distances, "predict": predict_blocked}
WRONG = {"rows": rows_transposed_b, "blocked": whole_product,
         "gradient": gradient_loop_over_samples, "distances": distances_double_loop,
         "predict": lambda r, b, p: min(p, b * 2 / 8)}
CHECKS = {"rows": ("check_parallel_matmul", EX1), "blocked": ("check_blocked_matmul", EX2),
          "gradient": ("check_gradient", EX3), "distances": ("check_squared_distances", EX4),
          "predict": ("check_blocked_prediction", EX5)}


@pytest.mark.parametrize("wrong_one", sorted(CHECKS))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong_one, capsys, graded_alone):
    failed = graded_alone({key: (getattr(ex, check), RIGHT[key], WRONG[key])
                           for key, (check, _) in CHECKS.items()}, wrong_one)
    assert list(failed) == [wrong_one]
    assert failed[wrong_one].startswith(CHECKS[wrong_one][1])
