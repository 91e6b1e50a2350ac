"""Lesson 09's checks: correct solutions written differently pass; a catalogue of plausible
wrong ones is rejected with a message naming the exercise, the case and what was wrong; nothing
a half-written answer returns makes a check crash."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.algorithms.svm import smo
from mlpar.exercises import l09_svm_kernels as ex


def _raise(exc):
    raise exc


# ---- Exercise 1: the RBF kernel -------------------------------------------------------------

def rbf_by_expansion(X, Y, gamma):
    sq = (X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2 * X @ Y.T
    return np.exp(-gamma * np.maximum(sq, 0))


def rbf_by_broadcast(X, Y, gamma):
    return np.exp(-gamma * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))


def rbf_by_scipy(X, Y, gamma):
    return np.exp(-gamma * cdist(X, Y, "sqeuclidean"))


RBF_WRONG = {
    "distance not squared": (lambda X, Y, g: np.exp(-g * cdist(X, Y)), "square"),
    "gamma squared": (lambda X, Y, g: np.exp(-g**2 * cdist(X, Y, "sqeuclidean")),
                      "gamma is squared"),
    "Gaussian 1/2": (lambda X, Y, g: np.exp(-g * cdist(X, Y, "sqeuclidean") / 2), "extra 1/2"),
    "sign": (lambda X, Y, g: np.exp(g * cdist(X, Y, "sqeuclidean")), "minus sign"),
    "no exp": (lambda X, Y, g: -g * cdist(X, Y, "sqeuclidean"), "exponential is missing"),
    "transposed": (lambda X, Y, g: rbf_by_scipy(Y, X, g), "transposed"),
    "linear kernel": (lambda X, Y, g: X @ Y.T, "differs from the reference"),
    "None": (lambda X, Y, g: None, "is None"),
    "list": (lambda X, Y, g: rbf_by_scipy(X, Y, g).tolist()[:-1], "has shape"),
    "wrong shape": (lambda X, Y, g: rbf_by_scipy(X, Y, g)[:, :1], "has shape"),
    "NaN": (lambda X, Y, g: np.full((len(X), len(Y)), np.nan), "differs from the reference"),
    "exception": (lambda X, Y, g: _raise(ZeroDivisionError("oops")), "raised ZeroDivisionError"),
    "not done": (lambda X, Y, g: _raise(NotImplementedError), "not done yet"),
    "strings": (lambda X, Y, g: "K", "should be numbers"),
}


@pytest.mark.parametrize("solution", [rbf_by_expansion, rbf_by_broadcast, rbf_by_scipy])
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


# ---- Exercise 2: one SMO pair update --------------------------------------------------------

def pair_by_reference(*args):
    return smo.pair_step(*args)[1:]


def pair_by_bounds(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    # Written differently: clip a_i to the interval its partner allows, then solve for a_j.
    t = (-y_i * G_i + y_j * G_j) / (K_ii + K_jj - 2 * K_ij)
    total = y_i * a_i + y_j * a_j
    lo_t = max(-a_i if y_i > 0 else a_i - C, -(C - a_j) if y_j > 0 else -a_j)
    hi_t = min(C - a_i if y_i > 0 else a_i, a_j if y_j > 0 else C - a_j)
    t = min(max(t, lo_t), hi_t)
    new_i = a_i + y_i * t
    return [new_i, (total - y_i * new_i) * y_j]


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


def _curvature_plus(a_i, a_j, y_i, y_j, G_i, G_j, K_ii, K_jj, K_ij, C):
    t = (-y_i * G_i + y_j * G_j) / (K_ii + K_jj + 2 * K_ij)
    t = min(t, C - a_i if y_i > 0 else a_i, a_j if y_j > 0 else C - a_j)
    return a_i + y_i * t, a_j - y_j * t


PAIR_WRONG = {
    "unclipped": (_unclipped, "outside"),
    "clipped separately": (_clip_each, "changed"),
    "same sign": (_same_sign, "changed"),
    "curvature sign": (_curvature_plus, "differs from the reference"),
    "only a_i": (lambda a_i, a_j, y_i, *r: (a_i + 0.01 * y_i, a_j), "changed"),
    "None": (lambda *a: None, "is None"),
    "scalar": (lambda *a: 0.5, "has shape"),
    "three values": (lambda *a: (0.1, 0.2, 0.3), "has shape"),
    "NaN": (lambda *a: (np.nan, np.nan), "NaN"),
    "exception": (lambda *a: _raise(KeyError("x")), "raised KeyError"),
}


@pytest.mark.parametrize("solution", [pair_by_reference, pair_by_bounds])
def test_pair_update_correct_solutions_pass(solution, capsys):
    ex.check_pair_update(solution)
    assert "✓ pair_update passed" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(PAIR_WRONG))
def test_pair_update_wrong_solutions_are_rejected(case):
    func, message = PAIR_WRONG[case]
    with pytest.raises(AssertionError, match=message) as info:
        ex.check_pair_update(func)
    assert str(info.value).startswith("pair_update: ")
    assert "a_i=" in str(info.value) or case in ("exception",)


# ---- Exercise 3: one Pegasos step -----------------------------------------------------------

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


def _peg(w, X, y, lam, t, *, k=None, all_samples=False, shrink=True, eta=None):
    eta = 1 / (lam * t) if eta is None else eta
    active = np.ones(len(y), bool) if all_samples else y * (X @ w) < 1
    step = (y[active, None] * X[active]).sum(0)
    return ((1 - eta * lam) * w if shrink else w) + eta / (k or len(y)) * step


PEGASOS_WRONG = {
    "missing 1/k": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, k=1), "missing 1/k"),
    "all samples": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, all_samples=True),
                    "every sample contributes"),
    "no shrink": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, shrink=False),
                  "not shrunk"),
    "eta 1/t": (lambda w, X, y, lam, t: _peg(w, X, y, lam, t, eta=1 / t), "1/t"),
    "unchanged": (lambda w, X, y, lam, t: w, "differs from the reference"),
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

def blocks_array_split(X, Y, gamma, n_blocks, pool_map):
    parts = pool_map(lambda B: rbf_by_scipy(B, Y, gamma), np.array_split(X, n_blocks))
    return np.vstack(parts)


def blocks_by_bounds(X, Y, gamma, n_blocks, pool_map):
    # Written differently: tasks are (start, stop) ranges, results written into one array.
    bounds = np.linspace(0, len(X), n_blocks + 1).round().astype(int)
    out = np.empty((len(X), len(Y)))
    ranges = list(zip(bounds[:-1], bounds[1:]))
    for (a, b), block in zip(ranges, pool_map(lambda r: rbf_by_expansion(X[r[0]:r[1]], Y, gamma),
                                              ranges)):
        out[a:b] = block
    return out


def _serial(X, Y, gamma, n_blocks, pool_map):
    return rbf_by_scipy(X, Y, gamma)


def _one_task(X, Y, gamma, n_blocks, pool_map):
    return pool_map(lambda B: rbf_by_scipy(B, Y, gamma), [X])[0]


def _column_blocks(X, Y, gamma, n_blocks, pool_map):
    parts = pool_map(lambda B: rbf_by_scipy(X, B, gamma), np.array_split(Y, n_blocks))
    return np.hstack(parts)


def _transposed_blocks(X, Y, gamma, n_blocks, pool_map):
    parts = pool_map(lambda B: rbf_by_scipy(Y, B, gamma), np.array_split(X, n_blocks))
    return np.hstack(parts)


def _off_by_one(X, Y, gamma, n_blocks, pool_map):
    size = len(X) // n_blocks  # the remainder rows are never computed
    starts = [b * size for b in range(n_blocks)]
    return np.vstack(pool_map(lambda s: rbf_by_scipy(X[s:s + size], Y, gamma), starts))


def _overlapping(X, Y, gamma, n_blocks, pool_map):
    size = -(-len(X) // n_blocks) + 1  # one row too many: neighbours overlap
    parts = pool_map(lambda s: rbf_by_scipy(X[s:s + size], Y, gamma),
                     [b * (size - 1) for b in range(n_blocks)])
    return np.vstack(parts)[:len(X)]


def _uneven(X, Y, gamma, n_blocks, pool_map):
    cuts = [1] * (n_blocks - 1)  # one row per task, the rest in the last
    blocks = [X[i:i + 1] for i in range(n_blocks - 1)] + [X[len(cuts):]]
    return np.vstack(pool_map(lambda B: rbf_by_scipy(B, Y, gamma), blocks))


def _gamma_squared_blocks(X, Y, gamma, n_blocks, pool_map):
    return blocks_array_split(X, Y, gamma**2, n_blocks, pool_map)


BLOCKS_WRONG = {
    "serial": (_serial, "received no task"),
    "one task": (_one_task, "received 1 task"),
    "column blocks": (_column_blocks, "blocks of columns"),
    "transposed blocks": (_transposed_blocks, "expected 5 columns each"),
    "off by one": (_off_by_one, "rows missed or computed twice"),
    "overlapping": (_overlapping, "rows missed or computed twice"),
    "uneven": (_uneven, "split the rows evenly"),
    "gamma squared": (_gamma_squared_blocks, "gamma is squared"),
    "None": (lambda X, Y, g, b, pool_map: (pool_map(lambda B: B @ Y.T[:, :0] if False
                                                    else rbf_by_scipy(B, Y, g),
                                                    np.array_split(X, b)), None)[1],
             "is None"),
    "None blocks": (lambda X, Y, g, b, pool_map: pool_map(lambda B: None, np.array_split(X, b)),
                    "block 0 returned by a task"),
    "NaN": (lambda X, Y, g, b, pool_map: np.vstack(pool_map(
        lambda B: np.full((len(B), len(Y)), np.nan), np.array_split(X, b))),
        "differs from the reference"),
    "exception": (lambda *a: _raise(RuntimeError("pool")), "raised RuntimeError"),
    "exception in a task": (lambda X, Y, g, b, pool_map: pool_map(
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
