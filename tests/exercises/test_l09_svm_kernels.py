"""Lesson 09's checks: correct solutions written differently pass; a wrong solution for each
way a definition can be misread is rejected with a message naming the exercise, the case and
what was wrong; nothing a half-written answer returns makes a check crash; each exercise is
graded on its own; the grader's seed moves the cases."""

import math
import threading

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.algorithms.svm import smo
from mlpar.exercises import GRADING_SEED_VARIABLE
from mlpar.exercises import l09_svm_kernels as ex


def _raise(exc):
    raise exc


# ---- Exercise 1: the RBF kernel, vectorised -------------------------------------------------

def rbf_by_expansion(X, Y, gamma):
    sq = (X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2 * X @ Y.T
    return np.exp(-gamma * np.maximum(sq, 0))


def rbf_by_broadcast(X, Y, gamma):
    return np.exp(-gamma * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))


def rbf_by_scipy(X, Y, gamma):
    return np.exp(-gamma * cdist(X, Y, "sqeuclidean"))


def rbf_by_einsum(X, Y, gamma):
    diff = X[:, None, :] - Y[None, :, :]
    return np.exp(-gamma * np.einsum("ijk,ijk->ij", diff, diff))


def _nested_loops(X, Y, gamma):
    K = np.empty((len(X), len(Y)))
    for i in range(len(X)):
        for j in range(len(Y)):
            K[i, j] = math.exp(-gamma * float(((X[i] - Y[j]) ** 2).sum()))
    return K


def _row_loop(X, Y, gamma):
    # Vectorised inside, but one Python iteration per row of X.
    return np.vstack([np.exp(-gamma * ((Y - x) ** 2).sum(1)) for x in X])


def _row_of(x, Y, gamma):
    return np.exp(-gamma * ((Y - x) ** 2).sum(1))


def _loop_in_helper(X, Y, gamma):
    return _stack_rows(X, Y, gamma)


def _stack_rows(X, Y, gamma):
    out = np.empty((len(X), len(Y)))
    i = 0
    while i < len(X):
        out[i] = _row_of(X[i], Y, gamma)
        i += 1
    return out


def _by_map(X, Y, gamma):
    return np.array(list(map(lambda x: _row_of(x, Y, gamma), X)))


def _by_vectorize(X, Y, gamma):
    entry = np.vectorize(lambda i, j: math.exp(-gamma * float(((X[i] - Y[j]) ** 2).sum())))
    return entry(*np.meshgrid(np.arange(len(X)), np.arange(len(Y)), indexing="ij"))


def _vectorized_exp(X, Y, gamma):
    # The distances are vectorised, the exponential is a builtin applied element by element.
    return np.vectorize(math.exp)(-gamma * cdist(np.asarray(X), np.asarray(Y), "sqeuclidean"))


def _via_tolist(X, Y, gamma):
    return np.array([[math.exp(-gamma * sum((a - b) ** 2 for a, b in zip(r, c)))
                      for c in Y.tolist()] for r in X.tolist()])


RBF_WRONG = {
    "distance not squared": (lambda X, Y, g: np.exp(-g * cdist(X, Y)), "square"),
    "gamma squared": (lambda X, Y, g: np.exp(-g**2 * cdist(X, Y, "sqeuclidean")),
                      "gamma is squared"),
    "Gaussian 1/2": (lambda X, Y, g: np.exp(-g * cdist(X, Y, "sqeuclidean") / 2), "extra 1/2"),
    "sign": (lambda X, Y, g: np.exp(g * cdist(X, Y, "sqeuclidean")), "minus sign"),
    "no exp": (lambda X, Y, g: -g * cdist(X, Y, "sqeuclidean"), "exponential is missing"),
    "transposed": (lambda X, Y, g: rbf_by_scipy(Y, X, g), "transposed"),
    "linear kernel": (lambda X, Y, g: X @ Y.T, "differs from the reference"),
    "nested loops": (_nested_loops, "Python work once per row or entry"),
    "loop over rows": (_row_loop, "Python work once per row or entry"),
    "loop in a helper": (_loop_in_helper, "Python work once per row or entry"),
    "map": (_by_map, "calls map"),
    "np.vectorize of a lambda": (_by_vectorize, "calls vectorize"),
    "np.vectorize of a builtin": (_vectorized_exp, "calls vectorize"),
    "tolist": (_via_tolist, "Python work once per row or entry"),
    "None": (lambda X, Y, g: None, "is None"),
    "list": (lambda X, Y, g: rbf_by_scipy(X, Y, g).tolist()[:-1], "has shape"),
    "wrong shape": (lambda X, Y, g: rbf_by_scipy(X, Y, g)[:, :1], "has shape"),
    "NaN": (lambda X, Y, g: np.full((len(X), len(Y)), np.nan), "differs from the reference"),
    "exception": (lambda X, Y, g: _raise(ZeroDivisionError("oops")), "raised ZeroDivisionError"),
    "not done": (lambda X, Y, g: _raise(NotImplementedError), "not done yet"),
    "strings": (lambda X, Y, g: "K", "should be numbers"),
}


@pytest.mark.parametrize("solution", [rbf_by_expansion, rbf_by_broadcast, rbf_by_scipy,
                                      rbf_by_einsum])
def test_rbf_correct_solutions_pass(solution, capsys):
    ex.check_rbf_kernel(solution)
    assert "✓ rbf_kernel passed" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(RBF_WRONG))
def test_rbf_wrong_solutions_are_rejected(case):
    func, message = RBF_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_rbf_kernel(func)
    assert str(info.value).startswith("rbf_kernel: ")
    assert "np.float64" not in str(info.value)


def test_the_step_counter_restores_the_tracer_and_skips_library_code():
    import sys

    marker = []

    def tracer(frame, event, arg):
        marker.append(event)
        return None

    sys.settrace(tracer)
    try:
        ex.check_rbf_kernel(rbf_by_scipy)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)


# ---- Exercise 2: one SMO pair update --------------------------------------------------------

def pair_by_reference(*args):
    # The lesson's own pair step: one call does the whole exercise, so the check refuses it.
    return smo.pair_step(*args)[1:]


def pair_by_box(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    # Written differently: Platt's form, a_j moved by y_j (E_i - E_j) / eta and clipped to
    # the segment [L, H] the equality constraint leaves it, then a_i from the constraint.
    eta = K_ii + K_jj - 2 * K_ij
    E_i, E_j = y_i * G_i, y_j * G_j
    if y_i != y_j:
        low, high = max(0.0, a_j - a_i), min(C, C + a_j - a_i)
    else:
        low, high = max(0.0, a_i + a_j - C), min(C, a_i + a_j)
    new_j = min(max(a_j + y_j * (E_i - E_j) / eta, low), high)
    return a_i + y_i * y_j * (a_j - new_j), new_j


def pair_by_bounds(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    # Written differently: clip a_i to the interval its partner allows, then solve for a_j.
    t = (-y_i * G_i + y_j * G_j) / (K_ii + K_jj - 2 * K_ij)
    total = y_i * a_i + y_j * a_j
    lo_t = max(-a_i if y_i > 0 else a_i - C, -(C - a_j) if y_j > 0 else -a_j)
    hi_t = min(C - a_i if y_i > 0 else a_i, a_j if y_j > 0 else C - a_j)
    t = min(max(t, lo_t), hi_t)
    new_i = a_i + y_i * t
    return [new_i, (total - y_i * new_i) * y_j]


def _with_curvature(curvature):
    def solution(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
        t = (-y_i * G_i + y_j * G_j) / curvature(K_ii, K_jj, K_ij)
        t = min(t, C - a_i if y_i > 0 else a_i, a_j if y_j > 0 else C - a_j)
        return a_i + y_i * t, a_j - y_j * t
    return solution


def _unclipped(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    t = (-y_i * G_i + y_j * G_j) / (K_ii + K_jj - 2 * K_ij)
    return a_i + y_i * t, a_j - y_j * t


def _clip_each(a_i, a_j, *rest):
    # Clips each multiplier on its own: the equality constraint breaks.
    new_i, new_j = _unclipped(a_i, a_j, *rest)
    C = rest[-1]
    return min(max(new_i, 0), C), min(max(new_j, 0), C)


def _same_sign(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    t = (-y_i * G_i + y_j * G_j) / (K_ii + K_jj - 2 * K_ij)
    t = min(t, C - a_i if y_i > 0 else a_i, a_j if y_j > 0 else C - a_j)
    return a_i + y_i * t, a_j + y_j * t


PAIR_WRONG = {
    "unclipped": (_unclipped, "outside"),
    "clipped separately": (_clip_each, "changed"),
    "same sign": (_same_sign, "changed"),
    "unit diagonal": (_with_curvature(lambda ii, jj, ij: 2 - 2 * ij), "K_ii = K_jj = 1"),
    "curvature sign": (_with_curvature(lambda ii, jj, ij: ii + jj + 2 * ij), "sign of the K_ij"),
    "missing 2": (_with_curvature(lambda ii, jj, ij: ii + jj - ij), "factor 2"),
    "no K_ij": (_with_curvature(lambda ii, jj, ij: ii + jj), "differs from the reference"),
    "only a_i": (lambda a_i, a_j, y_i, *r: (a_i + 0.01 * y_i, a_j), "changed"),
    "lesson's pair_step": (pair_by_reference, "calls the lesson's SMO pair step"),
    "None": (lambda *a: None, "is None"),
    "scalar": (lambda *a: 0.5, "has shape"),
    "three values": (lambda *a: (0.1, 0.2, 0.3), "has shape"),
    "NaN": (lambda *a: (np.nan, np.nan), "expected finite numbers"),
    "exception": (lambda *a: _raise(KeyError("x")), "raised KeyError"),
}


@pytest.mark.parametrize("solution", [pair_by_box, pair_by_bounds])
def test_pair_update_correct_solutions_pass(solution, capsys):
    ex.check_pair_update(solution)
    out = capsys.readouterr().out
    assert "✓ pair_update passed" in out and "K_ii, K_jj != 1" in out


@pytest.mark.parametrize("case", sorted(PAIR_WRONG))
def test_pair_update_wrong_solutions_are_rejected(case):
    func, message = PAIR_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_pair_update(func)
    assert str(info.value).startswith("pair_update: ")
    assert "a_i=" in str(info.value) or case in ("exception", "lesson's pair_step")


def test_pair_update_cases_have_kernels_whose_diagonal_is_not_one():
    rng = np.random.default_rng(0)
    cases = [ex._pair_case(rng) for _ in range(100)]
    assert sum(abs(c[6] - 1) > 1e-6 or abs(c[7] - 1) > 1e-6 for c in cases) > 50
    assert all(c[6] + c[7] - 2 * c[8] > 0 for c in cases)  # a real kernel: positive curvature


# ---- Exercise 3: WSS2's choice of j given i -------------------------------------------------

def choose_j_vectorised(i, y, alpha, G, K_diag, K_row, C):
    v = -y * G
    b = v[i] - v
    low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < C))
    a = K_diag[i] + K_diag - 2 * K_row
    a = np.where(a > 0, a, 1e-12)
    return int(np.argmin(np.where(low & (b > 0), -b * b / a, np.inf)))


def choose_j_loop(i, y, alpha, G, K_diag, K_row, C):
    # Written differently: a loop keeping the largest decrease, ties to the later index.
    best, j = -1.0, None
    for t in range(len(y)):
        may_shrink = alpha[t] > 0 if y[t] > 0 else alpha[t] < C
        b = -y[i] * G[i] + y[t] * G[t]
        if may_shrink and b > 0:
            a = max(K_diag[i] + K_diag[t] - 2 * K_row[t], 1e-12)
            if b * b / a >= best:
                best, j = b * b / a, t
    return j


def _scores(i, y, alpha, G, K_diag, K_row, C, *, unit_diagonal=False, power=2, factor=2.0):
    # The student's own -b^2/a (the check refuses an answer that calls its reference), with the
    # misreadings as keywords.
    v = -y * G
    b = v[i] - v
    diag_i, diag = (1.0, np.ones_like(K_diag)) if unit_diagonal else (K_diag[i], K_diag)
    a = diag_i + diag - factor * K_row
    a = np.where(a > 0, a, 1e-12)
    return np.where(ex.in_low(y, alpha, C) & (b > 0), -np.abs(b) ** power / a, np.inf)


def _misread(**how):
    def solution(i, y, alpha, G, K_diag, K_row, C):
        return int(np.argmin(_scores(i, y, alpha, G, K_diag, K_row, C, **how)))
    return solution


def _first_order(i, y, alpha, G, K_diag, K_row, C):
    v = -y * G
    low = ex.in_low(y, alpha, C)
    return int(np.argmin(np.where(low & (v < v[i]), v, np.inf)))


def _any_index(i, y, alpha, G, K_diag, K_row, C):
    # Forgets I_low: every t with b > 0 is a candidate.
    v = -y * G
    b = v[i] - v
    a = np.maximum(K_diag[i] + K_diag - 2 * K_row, 1e-12)
    return int(np.argmin(np.where(b > 0, -b * b / a, np.inf)))


def _any_sign(i, y, alpha, G, K_diag, K_row, C):
    # Forgets b > 0: b^2 is large for very negative b too.
    v = -y * G
    b = v[i] - v
    a = np.maximum(K_diag[i] + K_diag - 2 * K_row, 1e-12)
    low = ex.in_low(y, alpha, C)
    scores = np.where(low, -b * b / a, np.inf)
    scores[i] = np.inf
    return int(np.argmin(scores))


def _position_among_candidates(i, y, alpha, G, K_diag, K_row, C):
    scores = _scores(i, y, alpha, G, K_diag, K_row, C)
    candidates = np.isfinite(scores)
    return int(np.argmin(scores[candidates]))


def _minimised(i, y, alpha, G, K_diag, K_row, C):
    scores = _scores(i, y, alpha, G, K_diag, K_row, C)
    return int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))


def _clipped_decrease(i, y, alpha, G, K_diag, K_row, C):
    # Ranks by the decrease of the step clipped to the box: a rule WSS2 is not.
    v = -y * G
    b = v[i] - v
    a = np.maximum(K_diag[i] + K_diag - 2 * K_row, 1e-12)
    room_i = C - alpha[i] if y[i] > 0 else alpha[i]
    t = np.minimum(np.minimum(b / a, room_i), np.where(y > 0, alpha, C - alpha))
    low = ex.in_low(y, alpha, C)
    return int(np.argmax(np.where(low & (b > 0), b * t - a * t * t / 2, -np.inf)))


WSS2_WRONG = {
    "first order": (_first_order, "first-order rule"),
    "clipped decrease": (_clipped_decrease, "clipped to the box"),
    "unit diagonal": (_misread(unit_diagonal=True), "2 - 2 K_ij"),
    "b over a": (_misread(power=1), "b/a"),
    "missing 2": (_misread(factor=1.0), "factor 2"),
    "minimised": (_minimised, "minimised b\\^2/a"),
    "not I_low": (_any_index, "not in I_low"),
    "b not positive": (_any_sign, "b = .* <= 0"),
    "position": (_position_among_candidates, "position among the candidates"),
    "i itself": (lambda i, *a: i, "<= 0"),
    "None": (lambda *a: None, "integer index"),
    "float": (lambda *a: 1.5, "integer index"),
    "list": (lambda *a: [0], "integer index"),
    "NaN": (lambda *a: np.nan, "integer index"),
    "out of range": (lambda i, y, *a: len(y), "outside"),
    "exception": (lambda *a: _raise(IndexError("t")), "raised IndexError"),
}


@pytest.mark.parametrize("solution", [choose_j_vectorised, choose_j_loop])
def test_choose_j_correct_solutions_pass(solution, capsys):
    ex.check_choose_j(solution)
    out = capsys.readouterr().out
    assert "✓ choose_j passed" in out and "as fit_smo(selection='second_order')" in out


@pytest.mark.parametrize("case", sorted(WSS2_WRONG))
def test_choose_j_wrong_solutions_are_rejected(case):
    func, message = WSS2_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_choose_j(func)
    assert str(info.value).startswith("choose_j: ")
    if case != "exception":
        assert "n = " in str(info.value)  # the case is named


def test_the_wss2_reference_is_what_fit_smo_does():
    # The check's solve, driven by the reference choice, takes fit_smo's steps exactly.
    X = np.random.default_rng(3).normal(scale=1.5, size=(40, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    steps, alpha = ex._solve_with(choose_j_vectorised, X, y, 1.0, 1e-3, 10_000)
    ref = smo.fit_smo(X, y, C=1.0, kernel="poly", gamma=0.7, degree=2, coef0=1.0, tol=1e-3)
    assert steps == ref.n_iter
    np.testing.assert_allclose(np.sort(np.flatnonzero(alpha > 0)), np.sort(ref.support))


# ---- One Pegasos step -----------------------------------------------------------------------

def pegasos_vectorised(w, X, y, lam, t):
    eta = 1 / (lam * t)
    active = y * (X @ w) < 1
    return (1 - eta * lam) * w + eta / len(y) * (y[active, None] * X[active]).sum(0)


def pegasos_loop(w, X, y, lam, t):
    eta = 1 / (lam * t)
    grad = np.zeros_like(w)
    for x_i, y_i in zip(X, y):
        if y_i * float(x_i @ w) < 1:
            grad += y_i * x_i
    return w - eta * lam * w + eta * grad / len(y)


def _peg(w, X, y, lam, t, *, k=None, all_samples=False, shrink=True, eta=None, late=False):
    eta = 1 / (lam * t) if eta is None else eta
    margin_w = (1 - eta * lam) * w if late else w
    active = np.ones(len(y), bool) if all_samples else y * (X @ margin_w) < 1
    step = (y[active, None] * X[active]).sum(0)
    return ((1 - eta * lam) * w if shrink else w) + eta / (k or len(y)) * step


def _peg_in_place(w, X, y, lam, t):
    # Shrinks w first, then reads the margins with the shrunk w.
    eta = 1 / (lam * t)
    w *= 1 - eta * lam
    active = y * (X @ w) < 1
    return w + eta / len(y) * (y[active, None] * X[active]).sum(0)


PEGASOS_WRONG = {
    "margins after the shrink": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, late=True),
                                 "read after shrinking"),
    "shrunk in place first": (_peg_in_place, "read after shrinking"),
    "missing 1/k": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, k=1), "missing 1/k"),
    "all samples": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, all_samples=True),
                    "every sample contributes"),
    "no shrink": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, shrink=False),
                  "not shrunk"),
    "eta 1/t": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, eta=1 / t), "1/t"),
    # (w unchanged reads as "not shrunk" where no sample is inside the margin)
    "unchanged": (lambda w, X, y, lam, t: w, "differs from the reference|not shrunk"),
    "None": (lambda *a: None, "is None"),
    "transposed": (lambda w, X, y, lam, t: pegasos_vectorised(w, X, y, lam, t)[None, :],
                   "has shape"),
    "NaN": (lambda w, *a: np.full_like(w, np.nan), "differs from the reference"),
    "exception": (lambda *a: _raise(ValueError("bad")), "raised ValueError"),
}


@pytest.mark.parametrize("solution", [pegasos_vectorised, pegasos_loop])
def test_pegasos_correct_solutions_pass(solution, capsys):
    ex.check_pegasos_step(solution)
    assert "✓ pegasos_step passed" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(PEGASOS_WRONG))
def test_pegasos_wrong_solutions_are_rejected(case):
    func, message = PEGASOS_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_pegasos_step(func)
    assert str(info.value).startswith("pegasos_step: ")


# ---- Exercise 4: the kernel matrix by row blocks on a pool ----------------------------------

def blocks_array_split(X, Y, kernel, n_blocks, pool_map):
    return np.vstack(pool_map(lambda B: kernel(B, Y), np.array_split(X, n_blocks)))


def blocks_by_bounds(X, Y, kernel, n_blocks, pool_map):
    # Written differently: tasks are (start, stop) ranges, results written into one array.
    bounds = np.linspace(0, len(X), n_blocks + 1).round().astype(int)
    out = np.empty((len(X), len(Y)))
    ranges = list(zip(bounds[:-1], bounds[1:]))
    for (a, b), block in zip(ranges, pool_map(lambda r: kernel(X[r[0]:r[1]], Y), ranges)):
        out[a:b] = block
    return out


def _serial(X, Y, kernel, n_blocks, pool_map):
    return kernel(X, Y)


def _one_task(X, Y, kernel, n_blocks, pool_map):
    return pool_map(lambda B: kernel(B, Y), [X])[0]


def _column_blocks(X, Y, kernel, n_blocks, pool_map):
    return np.hstack(pool_map(lambda B: kernel(X, B), np.array_split(Y, n_blocks)))


def _transposed_blocks(X, Y, kernel, n_blocks, pool_map):
    return np.hstack(pool_map(lambda B: kernel(Y, B), np.array_split(X, n_blocks)))


def _off_by_one(X, Y, kernel, n_blocks, pool_map):
    size = len(X) // n_blocks  # the remainder rows are never computed
    starts = [b * size for b in range(n_blocks)]
    return np.vstack(pool_map(lambda s: kernel(X[s:s + size], Y), starts))


def _overlapping(X, Y, kernel, n_blocks, pool_map):
    size = -(-len(X) // n_blocks) + 1  # one row too many: neighbours overlap
    parts = pool_map(lambda s: kernel(X[s:s + size], Y), [b * (size - 1) for b in range(n_blocks)])
    return np.vstack(parts)[:len(X)]


def _uneven(X, Y, kernel, n_blocks, pool_map):
    blocks = [X[i:i + 1] for i in range(n_blocks - 1)] + [X[n_blocks - 1:]]
    return np.vstack(pool_map(lambda B: kernel(B, Y), blocks))


def _tasks_then_serial(X, Y, kernel, n_blocks, pool_map):
    # The tasks run, but K itself is computed again on the calling thread.
    pool_map(lambda B: kernel(B, Y), np.array_split(X, n_blocks))
    return kernel(X, Y)


def _reversed_blocks(X, Y, kernel, n_blocks, pool_map):
    return np.vstack(pool_map(lambda B: kernel(B, Y), np.array_split(X, n_blocks))[::-1])


def _shuffled_rows(X, Y, kernel, n_blocks, pool_map):
    # Blocks of every n_blocks-th row: right sizes, wrong (not contiguous) rows.
    parts = pool_map(lambda b: kernel(X[b::n_blocks], Y), range(n_blocks))
    return np.vstack(parts)


def _own_gamma_squared(X, Y, kernel, n_blocks, pool_map):
    # Ignores the kernel handed in and uses its own (wrong) one.
    gamma = kernel.gamma ** 2
    return np.vstack(pool_map(lambda B: rbf_by_scipy(B, Y, gamma), np.array_split(X, n_blocks)))


BLOCKS_WRONG = {
    "serial": (_serial, "received no task"),
    "one task": (_one_task, "received 1 task"),
    "column blocks": (_column_blocks, "blocks of columns"),
    "transposed blocks": (_transposed_blocks, "expected 5 columns each"),
    "off by one": (_off_by_one, "rows missed or computed twice"),
    "overlapping": (_overlapping, "rows missed or computed twice"),
    "uneven": (_uneven, "split the rows evenly"),
    "tasks then serial": (_tasks_then_serial, "outside the pool's tasks"),
    "reversed blocks": (_reversed_blocks, "differs from the reference"),
    "not contiguous": (_shuffled_rows, "block 0 .* differs from the reference"),
    "own kernel, gamma squared": (_own_gamma_squared, "block 0 .* differs"),
    "None": (lambda X, Y, k, b, pool_map: (pool_map(lambda B: k(B, Y), np.array_split(X, b)),
                                            None)[1], "is None"),
    "None blocks": (lambda X, Y, k, b, pool_map: pool_map(lambda B: None, np.array_split(X, b)),
                    "block 0 returned by a task"),
    "NaN": (lambda X, Y, k, b, pool_map: np.vstack(pool_map(
        lambda B: np.full((len(B), len(Y)), np.nan), np.array_split(X, b))),
        "differs from the reference"),
    "exception": (lambda *a: _raise(RuntimeError("pool")), "raised RuntimeError"),
    "exception in a task": (lambda X, Y, k, b, pool_map: pool_map(
        lambda B: _raise(IndexError("row")), np.array_split(X, b)), "raised IndexError"),
}


@pytest.mark.parametrize("solution", [blocks_array_split, blocks_by_bounds])
def test_kernel_by_blocks_correct_solutions_pass(solution, capsys):
    ex.check_kernel_by_blocks(solution)
    assert "✓ kernel_by_blocks passed" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(BLOCKS_WRONG))
def test_kernel_by_blocks_wrong_solutions_are_rejected(case):
    func, message = BLOCKS_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_kernel_by_blocks(func)
    text = str(info.value)
    assert text.startswith("kernel_by_blocks: ")
    if case not in ("exception", "exception in a task"):
        assert "X (" in text  # the case is named


def test_recording_pool_runs_tasks_on_its_threads():
    pool = ex.RecordingPool()
    assert pool.map(lambda v: v * 2, [1, 2, 3]) == [2, 4, 6]
    assert pool.items == [1, 2, 3] and len(pool.threads) >= 1


def test_reference_kernel_agrees_with_the_package():
    X = np.random.default_rng(0).normal(size=(6, 3))
    np.testing.assert_allclose(rbf_by_scipy(X, X, 0.3), kernels.kernel_matrix(X, gamma=0.3),
                               rtol=1e-12)
    np.testing.assert_allclose(ex.RecordingKernel(0.3)(X, X), rbf_by_scipy(X, X, 0.3),
                               rtol=1e-12)


# ---- Exercise 5: predict the grid search's speedup ------------------------------------------

def speedup_direct(J, t, c, p):
    return J * t / (J * c + math.ceil(J / p) * t)


def speedup_by_rounds(J, t, c, p):
    # Written differently: count the rounds with integer division, compare the two times.
    rounds = (J + p - 1) // p
    parallel = J * c + rounds * t
    return (J * t) / parallel


def _speedup(rounds=None, dispatch=None, invert=False, sequential_dispatch=False):
    def solution(J, t, c, p):
        r = math.ceil(J / p) if rounds is None else rounds(J, p)
        d = J * c if dispatch is None else dispatch(J, c, p, r)
        seq = J * (t + c) if sequential_dispatch else J * t
        par = d + r * t
        return par / seq if invert else seq / par
    return solution


SPEEDUP_WRONG = {
    "no ceil": (_speedup(rounds=lambda J, p: J / p), "ceil\\(J/p\\) rounds"),
    "no dispatch": (_speedup(dispatch=lambda J, c, p, r: 0.0), "dispatch cost is missing"),
    "dispatch shared": (_speedup(dispatch=lambda J, c, p, r: J * c / p), "divided among"),
    "upside down": (_speedup(invert=True), "upside down"),
    "sequential dispatch": (_speedup(sequential_dispatch=True), "sequential run also pays"),
    "overlapped dispatch": (lambda J, t, c, p: J * t / max(J * c, math.ceil(J / p) * t),
                            "overlap the jobs .*max\\(J c, ceil\\(J/p\\) t\\)"),
    "dispatch per round": (_speedup(dispatch=lambda J, c, p, r: r * c),
                           "one hand-out per round.*assumes no job runs during a hand-out"),
    "ideal": (lambda J, t, c, p: float(p), "differs|is"),
    "None": (lambda *a: None, "is None"),
    "list": (lambda *a: [1.0, 2.0], "has shape"),
    "NaN": (lambda *a: float("nan"), "is nan"),
    "exception": (lambda *a: _raise(ZeroDivisionError("p")), "raised ZeroDivisionError"),
}


@pytest.mark.parametrize("solution", [speedup_direct, speedup_by_rounds])
def test_predict_speedup_correct_solutions_pass(solution, capsys):
    ex.check_predict_speedup(solution)
    assert "✓ predict_speedup passed" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(SPEEDUP_WRONG))
def test_predict_speedup_wrong_solutions_are_rejected(case):
    func, message = SPEEDUP_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_predict_speedup(func)
    assert str(info.value).startswith("predict_speedup: ")


@pytest.mark.parametrize("measured, words", [
    (1.14, "below the prediction"), (1.70, "within 15%"), (2.5, "higher than the model")])
def test_predict_speedup_reports_the_measurement_without_grading_it(measured, words, capsys):
    figures = {"n_jobs": 27, "job_seconds": 2e-3, "dispatch_seconds": 1e-4, "workers": 2,
               "speedup": measured}
    ex.check_predict_speedup(speedup_direct, measured=figures)
    out = capsys.readouterr().out
    assert "✓ predict_speedup passed" in out and words in out
    assert f"{ex.speedup_model(27, 2e-3, 1e-4, 2):.2f}×" in out


@pytest.mark.parametrize("measured", [None, {"speedup": 1.2}, "fast", {
    "n_jobs": 27, "job_seconds": 2e-3, "dispatch_seconds": 1e-4, "workers": 2,
    "speedup": float("nan")}])
def test_predict_speedup_never_crashes_on_a_bad_measurement(measured, capsys):
    ex.check_predict_speedup(speedup_direct, measured=measured)
    out = capsys.readouterr().out
    assert "✓ predict_speedup passed" in out
    assert measured is None or "n/a" in out


# ---- Each exercise graded on its own; the grader's seed moves the cases ---------------------

RIGHT = {"rbf_kernel": (ex.check_rbf_kernel, rbf_by_scipy),
         "pair_update": (ex.check_pair_update, pair_by_bounds),
         "choose_j": (ex.check_choose_j, choose_j_loop),
         "kernel_by_blocks": (ex.check_kernel_by_blocks, blocks_by_bounds),
         "predict_speedup": (ex.check_predict_speedup, speedup_by_rounds)}
WRONG = {"rbf_kernel": _row_loop, "pair_update": PAIR_WRONG["unit diagonal"][0],
         "choose_j": _first_order, "kernel_by_blocks": _tasks_then_serial,
         "predict_speedup": SPEEDUP_WRONG["no ceil"][0]}


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong, graded_alone):
    failed = graded_alone({name: (check, right, WRONG[name]) for name, (check, right) in RIGHT.items()},
                          wrong)
    assert list(failed) == [wrong]


def _memorise(check, solution):
    # An answer that replays what the reference returned for the cases it saw.
    seen = {}

    def record(*args):
        out = solution(*args)
        seen[repr(args)] = out
        return out

    def replay(*args):
        return seen.get(repr(args), 0.0)

    check(record)
    return replay


def test_hard_coded_answers_fail_under_the_graders_seed(monkeypatch, capsys):
    import os

    replay = _memorise(ex.check_pair_update, pair_by_box)
    ex.check_pair_update(replay)  # the same cases: the replay passes
    seed = os.environ.get(GRADING_SEED_VARIABLE, "").strip()
    monkeypatch.setenv(GRADING_SEED_VARIABLE, str(int(seed or 0) + 7))
    with pytest.raises(AssertionError, match="pair_update: "):
        ex.check_pair_update(replay)
    ex.check_pair_update(pair_by_bounds)
    ex.check_choose_j(choose_j_vectorised)
    ex.check_rbf_kernel(rbf_by_expansion)


# ---- One imported call is not an answer (issue 35): the check's references are refused by
# name, however the answer reaches them.

def _wss2_by_reference(i, y, alpha, G, K_diag, K_row, C):
    return int(np.argmin(ex.wss2_scores(i, y, alpha, G, K_diag, K_row, C)))


def _wss2_by_alias(i, y, alpha, G, K_diag, K_row, C):
    score = ex.wss2_scores  # renamed first: the refusal follows the call, not the spelling
    return int(np.argmin(score(i, y, alpha, G, K_diag, K_row, C)))


def _wss2_in_a_thread(i, y, alpha, G, K_diag, K_row, C):
    out = []
    worker = threading.Thread(target=lambda: out.append(_wss2_by_reference(
        i, y, alpha, G, K_diag, K_row, C)))
    worker.start()
    worker.join()
    return out[0]


@pytest.mark.parametrize("solution", [_wss2_by_reference, _wss2_by_alias, _wss2_in_a_thread])
def test_choose_j_refuses_the_checks_own_scores(solution):
    with pytest.raises(AssertionError, match="calls the check's WSS2 scores .*wss2_scores"):
        ex.check_choose_j(solution)


@pytest.mark.parametrize("solution", [
    lambda J, t, c, p: ex.speedup_model(J, t, c, p),
    lambda J, t, c, p: (lambda model: model(J, t, c, p))(ex.speedup_model),
])
def test_predict_speedup_refuses_the_lessons_model(solution):
    with pytest.raises(AssertionError, match="calls the lesson's model .*speedup_model"):
        ex.check_predict_speedup(solution)


def test_a_refused_call_leaves_no_profiler_behind():
    import sys

    with pytest.raises(AssertionError):
        ex.check_predict_speedup(lambda J, t, c, p: ex.speedup_model(J, t, c, p))
    assert sys.getprofile() is None and threading.getprofile() is None


# ---- The floor on the curvature (mutation run): copies of x_i have a = 0 -------------------

def _wss2_floor(floor=1e-12, keep_zero=False, no_floor=False):
    def solution(i, y, alpha, G, K_diag, K_row, C):
        v = -y * G
        b = v[i] - v
        low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < C))
        a = K_diag[i] + K_diag - 2.0 * K_row
        if not no_floor:
            a = np.where((a >= 0) if keep_zero else (a > 0), a, floor)
        with np.errstate(divide="ignore", invalid="ignore"):
            decrease = np.where(low & (b > 0), b * b / a, -np.inf)
        return int(np.argmax(decrease))
    return solution


@pytest.mark.parametrize("how", [{"no_floor": True}, {"keep_zero": True}, {"floor": -1.0},
                                 {"floor": 1.0}])
def test_choose_j_refuses_a_wrong_floor_on_the_curvature(how):
    with pytest.raises(AssertionError, match="copy of x_i .* use a = 1e-12"):
        ex.check_choose_j(_wss2_floor(**how))


def test_choose_j_accepts_another_tiny_floor(capsys):
    # Equivalent: any floor far below every real curvature ranks the copies by b alone.
    ex.check_choose_j(_wss2_floor(floor=2e-12))
    assert "✓ choose_j passed" in capsys.readouterr().out
