"""Reference solutions pass; typical mistakes fail with a message that points at the mistake."""

import numpy as np
import pytest

from mlpar.exercises import linear_algebra as ex


def gflops(n, m, p, seconds):
    return 2 * n * m * p / seconds / 1e9


def blocked(a, b, block):
    n, m = a.shape
    p = b.shape[1]
    c = np.zeros((n, p))
    for i in range(0, n, block):
        for k in range(0, m, block):
            for j in range(0, p, block):
                tile = a[i:i + block, k:k + block] @ b[k:k + block, j:j + block]
                c[i:i + block, j:j + block] += tile
    return c


def gradient(X, y, w):
    return X.T @ (X @ w - y)


def squared_distances(X, Y):
    return ((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1)


def squared_distances_gemm(X, Y):
    sq = (X * X).sum(axis=1)[:, None] + (Y * Y).sum(axis=1)[None, :] - 2.0 * X @ Y.T
    return np.maximum(sq, 0.0)


@pytest.mark.parametrize(
    "check, solution",
    [
        (ex.check_gflops, gflops),
        (ex.check_blocked_matmul, blocked),
        (ex.check_gradient, gradient),
        (ex.check_squared_distances, squared_distances),
        (ex.check_squared_distances, squared_distances_gemm),
    ],
)
def test_reference_solutions_pass(check, solution, capsys):
    check(solution)
    assert capsys.readouterr().out.startswith("✓ ")


def test_unfinished_exercise_says_not_done(capsys):
    def placeholder(*args):
        raise NotImplementedError

    for check in (ex.check_gflops, ex.check_blocked_matmul, ex.check_gradient,
                  ex.check_squared_distances):
        with pytest.raises(AssertionError, match="not done yet"):
            check(placeholder)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda n, m, p, s: n * m * p / s / 1e9, "factor of 2"),
        (lambda n, m, p, s: 2 * n * m * p / s, "divide flops per second by 1e9"),
        (lambda n, m, p, s: 2 * n * m * p * s / 1e9, "operations divided by seconds"),
        (lambda n, m, p, s: 2 * n**3 / s / 1e9, r"for n=512, m=64, p=8"),
        (lambda n, m, p, s: [1.0, 2.0], "expected one number"),
    ],
)
def test_wrong_gflops_fail_helpfully(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.check_gflops(wrong)


def test_blocked_matmul_that_drops_edge_tiles_gets_the_hint():
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

    with pytest.raises(AssertionError, match=r"(?s)differs from the reference.*edge tiles"):
        ex.check_blocked_matmul(full_tiles_only)


def test_blocked_matmul_that_modifies_its_input_fails():
    def in_place(a, b, block):
        a[...] = a @ b if a.shape == (a.shape[0], b.shape[1]) else a
        a *= 1.0
        a[0, 0] += 1.0
        return blocked(a, b, block)

    with pytest.raises(AssertionError, match="changed its inputs"):
        ex.check_blocked_matmul(in_place)


def test_blocked_matmul_wrong_shape_fails():
    with pytest.raises(AssertionError, match=r"has shape \(3, 3\), expected \(8, 8\)"):
        ex.check_blocked_matmul(lambda a, b, block: np.zeros((3, 3)))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda X, y, w: X.T @ (y - X @ w), "minus the gradient"),
        (lambda X, y, w: X.T @ (X @ w - y) / len(y), "divided by n"),
        (lambda X, y, w: (X.T @ (X @ w - y))[:, None], "keep them 1-D"),
        (lambda X, y, w: X.T @ (X @ w), r"differs from the reference"),
    ],
)
def test_wrong_gradients_fail_helpfully(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.check_gradient(wrong)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda X, Y: np.sqrt(squared_distances(X, Y)), "not squared distances"),
        (lambda X, Y: squared_distances(Y, X), r"expected \(6, 4\)"),
        (lambda X, Y: squared_distances(X, Y) - 1e-9, "negative squared distance"),
        (lambda X, Y: (X[:, None, :] - Y[None, :, :]).sum(axis=-1) ** 2, "differs"),
    ],
)
def test_wrong_distances_fail_helpfully(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.check_squared_distances(wrong)
