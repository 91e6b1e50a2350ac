"""Checks for lesson 09's exercises: the RBF kernel without Python loops, one SMO pair update,
WSS2's choice of the partner j, one Pegasos step, the kernel matrix by row blocks on a pool of
workers, and a predicted grid-search speedup.

Each check names the exercise, the case and got-vs-expected, diagnoses the common mistakes by
name (a squared gamma, a unit kernel diagonal, margins read after shrinking, transposed blocks,
the first-order partner), and never crashes on a half-written answer (``mlpar.exercises.call``
and ``as_array``). Every check is graded on its own: where an exercise could build on an
earlier one, the check hands it the reference for that part. Test inputs come from
``case_seed``, so an answer that hard-codes them fails under the grader. No check reads a clock.
"""

from __future__ import annotations

import math
import numbers
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.algorithms.svm import smo
from mlpar.exercises import (
    as_array,
    call,
    call_refusing,
    case_seed,
    expect,
    expect_close,
    fmt,
    passed,
    structure,
)

POOL_WORKERS = 2
TAU = smo.TAU


# ---- Exercise 1: the RBF kernel, vectorised -------------------------------------------------

def _rbf_mistakes(X, Y, gamma):
    # Plausible wrong kernels, by name: if the answer matches one, say which.
    sq = np.maximum((X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2 * X @ Y.T, 0.0)
    return {
        "the kernel uses the distance ||x - z||; it needs its square": np.exp(-gamma * np.sqrt(sq)),
        "gamma is squared; the kernel is exp(-gamma ||x - z||^2)": np.exp(-gamma**2 * sq),
        "there is an extra 1/2 (the Gaussian's exp(-||x - z||^2 / 2 sigma^2) form); here "
        "gamma multiplies the squared distance directly": np.exp(-gamma * sq / 2),
        "the minus sign is missing in the exponent": np.exp(gamma * sq),
        "the exponential is missing": -gamma * sq,
    }


def _expect_rbf(name, got, X, Y, gamma, what):
    # Shared by the kernel exercises: shape (with a transposition hint), named mistakes, values.
    expected = kernels.kernel_matrix_numpy(X, Y, kernel="rbf", gamma=gamma)
    arr = as_array(name, got, what=what, shape=expected.shape, finite=False)
    if np.allclose(arr, expected, rtol=1e-9, atol=1e-12):
        return
    for mistake, wrong in _rbf_mistakes(X, Y, gamma).items():
        if np.allclose(arr, wrong, rtol=1e-9, atol=1e-12):
            raise AssertionError(f"{name}: {what} is wrong: {mistake}")
    if arr.shape[0] == arr.shape[1] and np.allclose(arr.T, expected, rtol=1e-9, atol=1e-12):
        raise AssertionError(f"{name}: {what} is transposed; rows follow X, columns Y")
    expect_close(name, arr, expected, what=what, rtol=1e-9, atol=1e-12)


def _traced_rbf(name, func, n, d, gamma, seed):
    # One run of the student's kernel on Recorder-wrapped inputs, under the step counter.
    rng = np.random.default_rng(seed)
    X = structure.Recorder(rng.normal(size=(n, d)))
    Y = structure.Recorder(rng.normal(size=(n, d)), X.log)
    counter = structure.StepCounter()
    call(name, counter.run, func, X, Y, gamma)
    return counter, X.log


def check_rbf_kernel(func) -> None:
    """``func(X, Y, gamma)`` must return ``exp(-gamma ||X[i] - Y[j]||^2)``, shape (n, m), with
    numpy operations on whole arrays: its Python work must not grow with the data."""
    name = "rbf_kernel"
    rng = np.random.default_rng(case_seed(9))
    for n, m, d, gamma in ((5, 5, 2, 1.5), (7, 3, 4, 0.25), (1, 6, 3, 3.0)):
        X = rng.normal(size=(n, d))
        Y = rng.normal(size=(m, d))
        got = call(name, func, X, Y, gamma)
        _expect_rbf(name, got, X, Y, gamma, f"K for X {X.shape}, Y {Y.shape}, gamma {gamma}")
    seed = case_seed(10)
    structure.expect_vectorised(
        name, lambda: _traced_rbf(name, func, 4, 3, 0.5, seed),
        lambda: _traced_rbf(name, func, 24, 3, 0.5, seed),
        small="4×4 entries", large="24×24 entries", extra_items=24 - 4)
    passed(name, "matches the RBF kernel on three shapes, with no Python loop over the data")


# ---- Exercise 2: one SMO pair update --------------------------------------------------------

PAIR_ARGS = ("a_i", "a_j", "y_i", "y_j", "G_i", "G_j", "K_ii", "K_jj", "K_ij", "C")


def _pair_case(rng):
    # Kernel values from a real kernel on two points, so the curvature K_ii + K_jj - 2 K_ij is
    # positive, and on unnormalised points (linear, polynomial), so K_ii and K_jj are not 1.
    kind = rng.choice(["linear", "poly", "poly", "rbf"])
    P = rng.normal(scale=float(rng.uniform(0.5, 3.0)), size=(2, 3))
    K = kernels.kernel_matrix_numpy(P, kernel=str(kind), gamma=0.5, degree=2, coef0=1.0)
    C = float(rng.uniform(0.5, 3.0))
    a_i, a_j = (float(v) for v in rng.uniform(0, C, size=2))
    y_i, y_j = (float(v) for v in rng.choice([-1.0, 1.0], size=2))
    G_i, G_j = (float(v) for v in rng.normal(scale=2.0, size=2))
    return (a_i, a_j, y_i, y_j, G_i, G_j, float(K[0, 0]), float(K[1, 1]), float(K[0, 1]), C)


def _pair_mistakes(args):
    a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C = args
    # Each misread denominator, as a student would write it (t clipped above only, since the
    # exercise promises t > 0), and as the package's step would take it (a non-positive
    # curvature replaced by TAU, t clipped to the box).
    curvatures = {
        "the denominator assumes K_ii = K_jj = 1 (2 - 2 K_ij); it is K_ii + K_jj - 2 K_ij, "
        "and a polynomial or linear kernel on unscaled data has K_ii != 1": 2.0 - 2.0 * K_ij,
        "the curvature is K_ii + K_jj - 2 K_ij; the sign of the K_ij term is flipped":
            K_ii + K_jj + 2.0 * K_ij,
        "the curvature is K_ii + K_jj - 2 K_ij; the factor 2 on K_ij is missing":
            K_ii + K_jj - K_ij,
    }
    room_i = C - a_i if y_i > 0 else a_i
    room_j = a_j if y_j > 0 else C - a_j
    found = {}
    for mistake, curvature in curvatures.items():
        answers = []
        if curvature != 0.0:
            t = min((-y_i * G_i + y_j * G_j) / curvature, room_i, room_j)
            answers.append((a_i + y_i * t, a_j - y_j * t))
        t = min((-y_i * G_i + y_j * G_j) / (curvature if curvature > 0 else TAU), room_i, room_j)
        answers.append((a_i + y_i * t, a_j - y_j * t))
        found[mistake] = answers
    return found


# The lesson's own pair step does the whole exercise in one call: refused, however it is reached.
_PAIR_REFERENCES = {smo.pair_step: "the lesson's SMO pair step"}


def check_pair_update(func) -> None:
    """``func(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C)`` -> new ``(a_i, a_j)``."""
    name = "pair_update"
    rng = np.random.default_rng(case_seed(11))
    clipped = free = unit = 0
    for _ in range(400):
        args = _pair_case(rng)
        a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C = args
        if -y_i * G_i + y_j * G_j <= 0:  # SMO only updates a violating pair
            continue
        case = ", ".join(f"{k}={fmt(v)}" for k, v in zip(PAIR_ARGS, args))
        got = call_refusing(name, func, _PAIR_REFERENCES, *args)
        pair = as_array(name, got, what=f"the result for ({case})", shape=(2,), finite=False)
        new_i, new_j = (float(v) for v in pair)
        _, ref_i, ref_j = smo.pair_step(*args)
        expect(name, np.isfinite(new_i) and np.isfinite(new_j),
               f"got ({fmt(new_i)}, {fmt(new_j)}) for ({case}); expected finite numbers")
        if not np.allclose([new_i, new_j], [ref_i, ref_j], rtol=1e-9, atol=1e-12):
            for mistake, answers in _pair_mistakes(args).items():
                if any(np.allclose([new_i, new_j], w, rtol=1e-9, atol=1e-12) for w in answers):
                    raise AssertionError(f"{name}: (a_i, a_j) for ({case}) is wrong: {mistake}")
        if abs(y_i * new_i + y_j * new_j - (y_i * a_i + y_j * a_j)) > 1e-9:
            raise AssertionError(
                f"{name}: y_i a_i + y_j a_j changed for ({case}); the step must move a_i by "
                "+y_i t and a_j by -y_j t with the same t"
            )
        if not (-1e-12 <= new_i <= C + 1e-12 and -1e-12 <= new_j <= C + 1e-12):
            raise AssertionError(
                f"{name}: got ({fmt(new_i)}, {fmt(new_j)}) outside [0, C={fmt(C)}] for "
                f"({case}); clip t so both multipliers stay in the box"
            )
        expect_close(name, [new_i, new_j], [ref_i, ref_j], what=f"(a_i, a_j) for ({case})",
                     rtol=1e-9, atol=1e-12)
        unit += abs(K_ii - 1.0) < 1e-12 and abs(K_jj - 1.0) < 1e-12
        if ref_i in (0.0, C) or ref_j in (0.0, C):
            clipped += 1
        else:
            free += 1
    passed(name, f"{free} free and {clipped} clipped steps agree with the reference, "
                 f"{free + clipped - unit} of them with K_ii, K_jj != 1")


# ---- Exercise 3: WSS2, the second-order choice of j given i ---------------------------------

WSS2_NAME = "choose_j"

def in_up(y, alpha, C):
    """``I_up``: the multipliers whose ``y_t a_t`` may still grow."""
    return ((y > 0) & (alpha < C)) | ((y < 0) & (alpha > 0))


def in_low(y, alpha, C):
    """``I_low``: the multipliers whose ``y_t a_t`` may still shrink."""
    return ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < C))


def wss2_scores(i, y, alpha, G, K_diag, K_row, C, *, unit_diagonal=False, power=2, factor=2.0):
    """``-b^2/a`` for every candidate partner of ``i`` (``inf`` where not a candidate), the
    quantity WSS2 minimises; the keywords give the misreadings the check names."""
    v = -y * G
    b = v[i] - v
    diag_i, diag = (1.0, np.ones_like(K_diag)) if unit_diagonal else (K_diag[i], K_diag)
    a = diag_i + diag - factor * K_row
    a = np.where(a > 0, a, TAU)
    scores = -np.abs(b) ** power / a
    return np.where(in_low(y, alpha, C) & (b > 0), scores, np.inf)


def _clipped_scores(i, y, alpha, G, K_diag, K_row, C):
    # A misreading: minus the decrease of the step *clipped* to the box, b t - a t^2 / 2 with
    # t = min(b / a, room_i, room_t), for every candidate (``inf`` elsewhere).
    v = -y * G
    b = v[i] - v
    a = np.where(K_diag[i] + K_diag - 2.0 * K_row > 0, K_diag[i] + K_diag - 2.0 * K_row, TAU)
    room_i = C - alpha[i] if y[i] > 0 else alpha[i]
    room = np.where(y > 0, alpha, C - alpha)
    t = np.minimum(np.minimum(b / a, room_i), room)
    scores = -(b * t - 0.5 * a * t * t)
    return np.where(in_low(y, alpha, C) & (b > 0), scores, np.inf)


def _wss2_case(rng, n):
    # Points on an unscaled polynomial kernel (K_tt != 1), multipliers at 0, C and in between.
    C = float(rng.uniform(0.5, 2.0))
    X = rng.normal(scale=1.5, size=(n, 2))
    K = kernels.kernel_matrix_numpy(X, kernel="poly", gamma=0.7, degree=2, coef0=1.0)
    y = rng.choice([-1.0, 1.0], size=n)
    alpha = rng.choice([0.0, 0.0, C, 0.5 * C, 0.25 * C], size=n)
    G = rng.normal(scale=1.5, size=n)
    v = np.where(in_up(y, alpha, C), -y * G, -np.inf)
    i = int(np.argmax(v))
    # One multiplier that is only in I_low gets -y G above i's: b < 0 there, and a large b^2,
    # so an answer that forgets "b > 0" picks it.
    low_only = np.flatnonzero(in_low(y, alpha, C) & ~in_up(y, alpha, C))
    if low_only.size:
        t = int(low_only[0])
        G[t] = -y[t] * (v[i] + 4.0)
    return i, y, alpha, G, np.diag(K).copy(), K, C


def _duplicate_case(rng):
    # Two copies of x_i among the partners: their curvature a = K_ii + K_tt - 2 K_it is 0, so
    # WSS2 must use TAU there, and then the copy with the larger b wins. An answer that divides
    # by 0 (inf for both: the first wins), keeps a = 0 with `a >= 0`, or floors a at another
    # value picks the wrong copy or a point that is not a copy.
    n, C, i, first, second = 10, 1.0, 0, 4, 7
    X = rng.normal(scale=1.5, size=(n, 2))
    X[first] = X[second] = X[i]
    K = kernels.kernel_matrix_numpy(X, kernel="poly", gamma=0.7, degree=2, coef0=1.0)
    y = rng.choice([-1.0, 1.0], size=n)
    alpha = np.full(n, 0.5 * C)  # every multiplier free: in I_up and in I_low
    v = rng.normal(size=n)
    v[i] = v.max() + 5.0
    v[first], v[second] = v[i] - 1.0, v[i] - 2.0  # b = 1 and b = 2
    G = -y * v
    return i, y, alpha, G, np.diag(K).copy(), K, C


def _as_index(name, got, n, what):
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (numbers.Integral, np.integer)):
        arr = np.asarray(got) if got is not None else None
        if arr is not None and arr.shape == () and arr.dtype.kind in "iu":
            got = int(arr)
        else:
            raise AssertionError(f"{name}: {what} should be an integer index into y, got "
                                 f"{type(got).__name__} {fmt(got) if got is not None else ''}"
                                 .rstrip())
    got = int(got)
    expect(name, 0 <= got < n, f"{what} is {got}, outside 0..{n - 1}")
    return got


def _partner_problems(j, i, y, alpha, G, K_diag, K_row, C, case) -> list[tuple[str, str]]:
    # What is wrong with the partner j, as (kind, message) pairs; empty when j is WSS2's.
    # Several misreadings can give the same j in one case; the check keeps the one that
    # explains every case the answer got wrong.
    scores = wss2_scores(i, y, alpha, G, K_diag, K_row, C)
    best = float(scores.min())
    if abs(scores[j] - best) <= 1e-12 * abs(best):
        return []
    v = -y * G
    candidates = np.flatnonzero(np.isfinite(scores))
    ref = int(np.flatnonzero(scores == best)[0])
    first = candidates[np.argmin(v[candidates])]
    misreadings = {
        "you chose the most violating partner (the first-order rule, smallest -y_t G_t); "
        "WSS2 picks the j with the largest b^2/a (the unclipped step's decrease is b^2/(2a))": bool(
            np.isfinite(scores[j]) and np.isclose(v[j], v[first], rtol=1e-12, atol=0)
            and not np.isclose(v[ref], v[first], rtol=1e-12, atol=0)),
        "the curvature a = K_ii + K_jj - 2 K_ij was taken as 2 - 2 K_ij, right only when every "
        "K_tt = 1 (RBF); this polynomial kernel's diagonal is not 1": _is_argmin(
            j, wss2_scores(i, y, alpha, G, K_diag, K_row, C, unit_diagonal=True)),
        "you maximised b/a; the decrease of the parabola is b^2/a": _is_argmin(
            j, wss2_scores(i, y, alpha, G, K_diag, K_row, C, power=1)),
        "the factor 2 on K_ij is missing from a = K_ii + K_jj - 2 K_ij": _is_argmin(
            j, wss2_scores(i, y, alpha, G, K_diag, K_row, C, factor=1.0)),
        "you ranked the partners by the decrease of the step clipped to the box [0, C]; WSS2 "
        "ranks by b^2/a, the unclipped step's decrease (up to the factor 1/2), and ignores the "
        "box when it chooses j (the box only clips the step that follows)": _is_argmin(
            j, _clipped_scores(i, y, alpha, G, K_diag, K_row, C)),
        "you minimised b^2/a; WSS2 maximises it (minimises -b^2/a)": _is_argmin(
            j, np.where(np.isfinite(scores), -scores, np.inf)),
        "j looks like a position among the candidates, not an index into y":
            j < len(candidates) and candidates[j] == ref,
    }
    a = K_diag[i] + K_diag - 2.0 * K_row
    if a[ref] <= 0:  # only the floor can explain a wrong copy here
        misreadings = {}
        misreadings["x_j is a copy of x_i here, so a = K_ii + K_jj - 2 K_ij = 0: where a <= 0 "
                    "use a = 1e-12 (libsvm's tau), which keeps the decrease finite, so the copy "
                    "with the larger b wins"] = True
    problems = [(m, f"{WSS2_NAME}: j = {j} for {case} is wrong: {m}")
                for m, matches in misreadings.items() if matches]
    if not in_low(y, alpha, C)[j]:
        move = "down" if y[j] > 0 else "up"  # a_j -= y_j t with t > 0
        problems.append(("not in I_low", (
            f"{WSS2_NAME}: j = {j} is not in I_low for {case}: y_j = {fmt(y[j])}, a_j = "
            f"{fmt(alpha[j])} (C = {fmt(C)}), so a_j cannot move {move} as the step needs; "
            "pick j among I_low only")))
    if v[i] - v[j] <= 0:
        problems.append(("b <= 0", (
            f"{WSS2_NAME}: j = {j} gives b = -y_i G_i + y_j G_j = {fmt(v[i] - v[j])} <= 0 for "
            f"{case}; a partner must make a violating pair with i (b > 0)")))
    problems.append(("other", (
        f"{WSS2_NAME}: j = {j} for {case}, expected {ref}: its b^2/a is "
        f"{fmt(-scores[j]) if np.isfinite(scores[j]) else '(not a candidate)'}, the largest "
        f"among I_low with b > 0 is {fmt(-best)}")))
    return problems


def _explain(failures) -> str:
    # The mistakes present in every failing case; where several fit all the evidence, all of
    # them are named. Without one, the first case's own account.
    common = [kind for kind, _ in failures[0] if kind != "other" and all(
        any(k == kind for k, _ in f) for f in failures[1:])]
    messages = dict(failures[0])
    if not common:
        return failures[0][0][1]
    if len(common) == 1:
        return messages[common[0]]
    head = messages[common[0]].split(" is wrong: ")[0]
    return (f"{head} is wrong, and it is the answer of each of these misreadings: "
            + "; or ".join(kind for kind in common))


def _is_argmin(j, scores):
    # True when j attains the minimum of a misread score (the answer that misreading gives).
    finite = np.isfinite(scores)
    return bool(finite[j]) and bool(np.isclose(scores[j], scores[finite].min(), rtol=1e-12,
                                               atol=0.0))


def _solve_with(choose, X, y_signed, C, tol, max_iter):
    # SMO in plain Python with the student's partner choice and the package's pair step: the
    # same loop as smo.fit_smo, so the steps must come out the same.
    K = kernels.kernel_matrix(X, kernel="poly", gamma=0.7, degree=2, coef0=1.0, parallel=False)
    diag = np.diag(K).copy()
    n = len(y_signed)
    alpha, G = np.zeros(n), -np.ones(n)
    for it in range(max_iter):
        up, low = in_up(y_signed, alpha, C), in_low(y_signed, alpha, C)
        v = -y_signed * G
        i = int(np.flatnonzero(up & (v == v[up].max()))[-1])
        if v[i] - v[low].min() < tol:
            return it, alpha
        j = choose(i, y_signed.copy(), alpha.copy(), G.copy(), diag.copy(), K[i].copy(), C)
        step, alpha[i], alpha[j] = smo.pair_step(alpha[i], alpha[j], y_signed[i], y_signed[j],
                                                 G[i], G[j], diag[i], diag[j], K[i, j], C)
        G += y_signed * step * (K[i] - K[j])
    return max_iter, alpha


_WSS2_REFERENCES = {}  # filled below, once the reference functions exist


def check_choose_j(func) -> None:
    """``func(i, y, alpha, G, K_diag, K_row, C)`` -> the index ``j`` WSS2 pairs with ``i``:
    over ``I_low`` with ``b = -y_i G_i + y_j G_j > 0``, the ``j`` maximising ``b^2 / a``,
    ``a = K_ii + K_jj - 2 K_ij`` (``TAU`` where ``a <= 0``); ``K_row`` is row ``i`` of ``K``."""
    name = WSS2_NAME
    rng = np.random.default_rng(case_seed(19))
    failures = []
    cases = [("random", n) for n in (6, 9, 12, 15, 20, 30, 40, 60) * 4] + [("copies", 10)] * 2
    for kind, n in cases:
        i, y, alpha, G, K_diag, K, C = (_wss2_case(rng, n) if kind == "random"
                                        else _duplicate_case(rng))
        scores = wss2_scores(i, y, alpha, G, K_diag, K[i], C)
        if not np.isfinite(scores).any():
            continue  # no violating partner: SMO would stop here
        case = f"n = {n}, i = {i}, C = {fmt(C)}"
        got = call_refusing(name, func, _WSS2_REFERENCES, i, y.copy(), alpha.copy(), G.copy(),
                            K_diag.copy(), K[i].copy(), C)
        j = _as_index(name, got, n, f"j for {case}")
        problems = _partner_problems(j, i, y, alpha, G, K_diag, K[i], C, case)
        if problems:
            failures.append((kind, problems))
    if failures:
        # The random cases name a misreading best; the copies only test the floor on a.
        chosen = [p for kind, p in failures if kind == "random"] or [p for _, p in failures]
        raise AssertionError(_explain(chosen))
    # A whole solve driven by the student's j, against the package's second-order solver.
    rng = np.random.default_rng(case_seed(20))
    X = rng.normal(scale=1.5, size=(40, 2))
    y = np.where(X[:, 0] * X[:, 1] + rng.normal(scale=0.5, size=40) > 0, 1.0, -1.0)
    params = {"C": 1.0, "kernel": "poly", "gamma": 0.7, "degree": 2, "coef0": 1.0, "tol": 1e-3}
    ref = smo.fit_smo(X, y, selection="second_order", **params)
    first = smo.fit_smo(X, y, selection="first_order", **params)
    steps, _ = call(name, _solve_with, lambda *a: _as_index(
        name, call_refusing(name, func, _WSS2_REFERENCES, *a), 40, "j in the solve"),
        X, y, 1.0, 1e-3, 10 * ref.n_iter + 100)
    expect(name, steps == ref.n_iter,
           f"a 40-point solve with your choice of j took {steps} steps, "
           f"fit_smo(selection='second_order') takes {ref.n_iter}")
    passed(name, f"the WSS2 partner on {len(cases)} cases (two with copies of x_i); a 40-point "
                 f"solve with it takes {steps} steps, as fit_smo(selection='second_order') "
                 f"(first order: {first.n_iter})")



# ---- One Pegasos step (the check of earlier editions of the lesson; kept for their notebooks) -

def _pegasos_case(rng, k, d, lam, t):
    # w of unit scale, so margins spread around 1; the first sample is placed so that its
    # margin is above 1 before the shrink and below 1 after it: reading the margins after
    # shrinking w by (1 - eta lam) counts it, reading them before does not.
    w = rng.normal(size=d)
    X = rng.normal(size=(k, d))
    y = rng.choice([-1.0, 1.0], size=k)
    shrink = 1.0 - 1.0 / t  # 1 - eta lam with eta = 1/(lam t)
    target = 0.5 * (1.0 + 1.0 / shrink)
    # The second sample stays outside the margin either way (margin 1 + 2/shrink), so
    # "every sample contributes" gives yet another answer.
    for row, goal in ((0, target), (1, 1.0 + 2.0 / shrink)):
        margin = y[row] * (X[row] @ w)
        if abs(margin) > 1e-6:
            X[row] *= goal / margin
    return w, X, y


def check_pegasos_step(func) -> None:
    """``func(w, X_batch, y_batch, lam, t)`` -> the next ``w`` (no projection). The margins
    ``y_i w.x_i`` that decide which samples contribute are read with the ``w`` given, before
    it is shrunk by ``(1 - eta lam)``."""
    name = "pegasos_step"
    rng = np.random.default_rng(case_seed(13))
    for k, d, lam, t in ((4, 3, 0.1, 2), (8, 5, 0.01, 7), (16, 2, 1.0, 3), (6, 4, 0.5, 40)):
        w, X, y = _pegasos_case(rng, k, d, lam, t)
        got = call(name, func, w.copy(), X.copy(), y.copy(), lam, t)
        eta = 1.0 / (lam * t)
        active = y * (X @ w) < 1.0
        step = (y[active, None] * X[active]).sum(axis=0)
        expected = (1 - eta * lam) * w + eta / k * step
        what = f"w after step t={t} with a batch of {k} (lam={fmt(lam)})"
        arr = as_array(name, got, what=what, shape=(d,), finite=False)
        late = y * (X @ ((1 - eta * lam) * w)) < 1.0
        mistakes = {
            "the margins y w.x were read after shrinking w by (1 - eta lam); a sample is "
            "inside the margin by the w you were given, before the step":
                (1 - eta * lam) * w + eta / k * (y[late, None] * X[late]).sum(axis=0),
            "the sum over the batch is not divided by k (missing 1/k)":
                (1 - eta * lam) * w + eta * step,
            "every sample contributes; only those with y w.x < 1 (inside the margin) should":
                (1 - eta * lam) * w + eta / k * (y[:, None] * X).sum(axis=0),
            "w is not shrunk by (1 - eta lam) (the regulariser's gradient is missing)":
                w + eta / k * step,
            "the step size is 1/t; Pegasos uses eta = 1/(lam t)":
                (1 - lam / t) * w + step / (t * k),
        }
        if not np.allclose(arr, expected, rtol=1e-9, atol=1e-12):
            for mistake, wrong in mistakes.items():
                if np.allclose(arr, wrong, rtol=1e-9, atol=1e-12) and not np.allclose(
                        wrong, expected, rtol=1e-9, atol=1e-12):
                    raise AssertionError(f"{name}: {what} is wrong: {mistake}")
        expect_close(name, arr, expected, what=what, rtol=1e-9, atol=1e-12)
    passed(name, "four steps match the Pegasos update, margins read before the shrink")


# ---- Exercise 4: the kernel matrix by row blocks on a pool ----------------------------------

class RecordingPool:
    """A pool of ``POOL_WORKERS`` threads with ``map(func, items) -> list`` that records every
    task it receives and every block it returns: what the check inspects, never the time."""

    def __init__(self):
        self.items = []
        self.results = []
        self.threads = set()
        self._lock = threading.Lock()

    def map(self, func, items):
        items = list(items)

        def run(item):
            with self._lock:
                self.threads.add(threading.get_ident())
            return func(item)

        with ThreadPoolExecutor(POOL_WORKERS) as pool:
            results = list(pool.map(run, items))
        self.items += items
        self.results += results
        return results


class RecordingKernel:
    """The reference RBF kernel ``kernel(A, B)`` handed to the student's code; it notes the
    thread of every call and the rows it was given, so the check sees where the work ran."""

    def __init__(self, gamma):
        self.gamma = gamma
        self.calls = []  # (thread id, rows of A)
        self._lock = threading.Lock()

    def __call__(self, A, B):
        A = np.asarray(A, dtype=float)
        with self._lock:
            self.calls.append((threading.get_ident(), A.shape[0] if A.ndim == 2 else -1))
        return kernels.kernel_matrix_numpy(A, np.asarray(B, dtype=float), kernel="rbf",
                                           gamma=self.gamma)


def check_kernel_by_blocks(func) -> None:
    """``func(X, Y, kernel, n_blocks, pool_map)`` -> K, shape (n, m): ``n_blocks`` tasks on
    ``pool_map``, each one contiguous block of rows of X computed with ``kernel(block, Y)``.

    ``kernel`` is the check's reference RBF kernel, so this exercise is graded on its own
    whatever Exercise 1 returned."""
    name = "kernel_by_blocks"
    rng = np.random.default_rng(case_seed(17))
    for n, m, d, gamma, n_blocks in ((12, 5, 3, 0.5, 3), (10, 10, 2, 2.0, 4), (7, 9, 4, 0.1, 2)):
        X = rng.normal(size=(n, d))
        Y = rng.normal(size=(m, d))
        pool = RecordingPool()
        kernel = RecordingKernel(gamma)
        case = f"X {X.shape}, Y {Y.shape}, gamma {gamma}, {n_blocks} blocks"
        got = call(name, func, X, Y, kernel, n_blocks, pool.map)
        expect(name, len(pool.items) > 0,
               f"pool_map received no task for {case}; the blocks must run as tasks on it")
        expect(name, len(pool.items) == n_blocks,
               f"pool_map received {len(pool.items)} task(s) for {case}, expected {n_blocks} "
               "(one per block of rows)")
        outside = [rows for thread, rows in kernel.calls if thread not in pool.threads]
        expect(name, not outside,
               f"kernel was called {len(outside)} time(s) outside the pool's tasks for {case} "
               "(on the calling thread); every block must be computed inside a task")
        blocks = [as_array(name, r, what=f"block {b} returned by a task ({case})", ndim=2,
                           finite=False) for b, r in enumerate(pool.results)]
        widths = {b.shape[1] for b in blocks}
        heights = [b.shape[0] for b in blocks]
        if widths != {m}:
            hint = " (blocks of columns of K? split the rows of X)" if sum(
                b.shape[1] for b in blocks) == m else ""
            raise AssertionError(f"{name}: the tasks returned blocks of shapes "
                                 f"{[b.shape for b in blocks]} for {case}, expected "
                                 f"{m} columns each{hint}")
        expect(name, sum(heights) == n,
               f"the tasks' blocks have {sum(heights)} rows in all for {case}, expected {n}: "
               "rows missed or computed twice (an off-by-one in the block bounds?)")
        expect(name, max(heights) - min(heights) <= 1,
               f"blocks of {heights} rows for {case}; split the rows evenly "
               "(np.array_split does)")
        expected = kernels.kernel_matrix_numpy(X, Y, kernel="rbf", gamma=gamma)
        start = 0
        for b, block in enumerate(blocks):
            expect_close(name, block, expected[start:start + block.shape[0]],
                         what=f"block {b} (rows {start}..{start + block.shape[0] - 1}) for {case}",
                         rtol=1e-9, atol=1e-12)
            start += block.shape[0]
        _expect_rbf(name, got, X, Y, gamma, f"K for {case}")
    passed(name, f"three cases, each as its blocks of rows on {POOL_WORKERS} threads")


# ---- Exercise 5: predict a grid search's speedup, then measure it ---------------------------

def speedup_model(n_jobs, job_seconds, dispatch_seconds, workers):
    """The exercise's model: ``J t / (J c + ceil(J / p) t)``. One process hands the ``J`` jobs
    out one after another (``c`` each) and no job runs during a hand-out (an assumption: here
    the hand-out and the Python parts of every job take turns on the GIL); ``p`` workers run the
    equal jobs (``t`` each) in ``ceil(J / p)`` rounds; the sequential run pays neither the
    hand-offs nor the rounds."""
    rounds = math.ceil(n_jobs / workers)
    return n_jobs * job_seconds / (n_jobs * dispatch_seconds + rounds * job_seconds)


_WSS2_REFERENCES.update({wss2_scores: "the check's WSS2 scores",
                         _partner_problems: "the check's diagnosis"})

# The first case has hand-outs longer than the rounds (J c > ceil(J/p) t), so an answer that
# overlaps them with the jobs is told apart from one that leaves them out.
SPEEDUP_CASES = ((100, 1e-3, 5e-4, 8), (27, 2e-3, 1e-4, 2), (27, 2e-3, 1e-3, 2),
                 (10, 0.05, 2e-4, 4), (8, 0.01, 0.0, 3), (5, 0.2, 0.01, 16))


def _speedup_mistakes(J, t, c, p):
    return {
        "the rounds are J/p; a worker runs whole jobs, so it takes ceil(J/p) rounds":
            J * t / (J * c + J / p * t),
        "you let the hand-outs overlap the jobs (parallel time max(J c, ceil(J/p) t)): a fair "
        "model of a dispatcher that runs beside the workers, but this exercise assumes no job "
        "runs during a hand-out, so the J hand-outs and the rounds add up":
            J * t / max(J * c, math.ceil(J / p) * t) if J * c > math.ceil(J / p) * t else math.nan,
        "the dispatch cost is missing (J c: the hand-offs are made one after another)":
            J * t / (math.ceil(J / p) * t),
        "the dispatch cost is divided among the workers; one process makes all J hand-offs":
            J * t / (J * c / p + math.ceil(J / p) * t),
        "the ratio is upside down: speedup = sequential time / parallel time":
            (J * c + math.ceil(J / p) * t) / (J * t),
        "the sequential run also pays the dispatch; with one job at a time it calls the jobs "
        "directly": J * (t + c) / (J * c + math.ceil(J / p) * t),
        "you charged one hand-out per round (ceil(J/p)(c + t)), which lets the hand-outs of "
        "a round overlap the jobs: a fair model where the dispatcher runs beside the workers, "
        "but this exercise assumes no job runs during a hand-out, so all J hand-outs add up":
            J * t / (math.ceil(J / p) * (c + t)),
    }


def check_predict_speedup(func, *, measured: dict | None = None) -> None:
    """``func(n_jobs, job_seconds, dispatch_seconds, workers)`` -> the model's speedup, graded
    exactly against ``speedup_model``. With ``measured`` (``n_jobs``, ``job_seconds``,
    ``dispatch_seconds``, ``workers`` and the measured ``speedup``) it then reports how far the
    measurement fell from the student's prediction and why; the measurement never grades."""
    name = "predict_speedup"
    for J, t, c, p in SPEEDUP_CASES:
        case = f"J = {J} jobs of t = {fmt(t)} s, dispatch c = {fmt(c)} s, p = {p} workers"
        got = as_array(name, call_refusing(name, func, {speedup_model: "the lesson's model",
                                                        _speedup_mistakes: "the check's table"},
                                           J, t, c, p),
                       what=f"the speedup for {case}", shape=(), finite=False)
        expected = speedup_model(J, t, c, p)
        if not np.isclose(got, expected, rtol=1e-9, atol=0.0):
            for mistake, wrong in _speedup_mistakes(J, t, c, p).items():
                if np.isclose(got, wrong, rtol=1e-9) and not np.isclose(wrong, expected,
                                                                        rtol=1e-9):
                    raise AssertionError(f"{name}: the speedup for {case} is {fmt(float(got))}: "
                                         f"{mistake}")
        expect_close(name, got, expected, what=f"the speedup for {case}", rtol=1e-9)
    passed(name, f"the model's speedup on {len(SPEEDUP_CASES)} cases")
    if measured is None:
        return
    keys = ("n_jobs", "job_seconds", "dispatch_seconds", "workers", "speedup")
    if not isinstance(measured, dict) or any(k not in measured for k in keys):
        print(f"n/a: no comparison with a measurement (measured needs the keys {', '.join(keys)})")
        return
    J, t, c, p, got = (measured[k] for k in keys)
    predicted = float(func(J, t, c, p))
    if not (np.isfinite(got) and got > 0):
        print("n/a: the measured speedup is not a positive number")
        return
    off = got / predicted - 1.0
    print(f"predicted {predicted:.2f}× from J = {J}, t = {t * 1e3:.3g} ms, c = {c * 1e6:.3g} µs, "
          f"p = {p}; measured {got:.2f}× ({abs(off):.0%} {'below' if off < 0 else 'above'} "
          "the prediction)")
    if off < -0.15:
        print("  the model leaves out what makes the measurement lower: the parts of each job "
              "that hold the GIL (fit_smo's Python checks and copies, the score) run one at a "
              "time; jobs are not equal (the slowest ends the last round); other programs share "
              "the cores")
    elif off > 0.15:
        print("  higher than the model: the hand-offs overlap the jobs (the model adds them), "
              "or the sequential run was slowed by something the parallel one was not")
    else:
        print("  within 15% of the model: job time and dispatch cost explain the speedup here")
