import networkx as nx
import numpy as np
import pytest

from mlpar.algorithms.distributed import gossip
from mlpar.exercises import l07_gossip as ex


def mh_weights(n, edges):
    deg = np.zeros(n, dtype=int)
    for i, j in edges:
        deg[i] += 1
        deg[j] += 1
    W = np.zeros((n, n))
    for i, j in edges:
        W[i, j] = W[j, i] = 1 / (1 + max(deg[i], deg[j]))
    return W + np.diag(1 - W.sum(axis=1))


def mh_weights_networkx(n, edges):  # written differently: a graph and a dict of degrees
    g = nx.Graph(edges)
    g.add_nodes_from(range(n))
    W = np.eye(n)
    for i, j in g.edges:
        w = 1.0 / (1 + max(g.degree[i], g.degree[j]))
        W[i, j] = W[j, i] = w
        W[i, i] -= w
        W[j, j] -= w
    return W


def equal_neighbour_rows(n, edges):
    A = np.eye(n)
    for i, j in edges:
        A[i, j] = A[j, i] = 1
    return A / A.sum(axis=1, keepdims=True)


def max_degree(n, edges):
    A = np.zeros((n, n))
    for i, j in edges:
        A[i, j] = A[j, i] = 1
    W = A / (A.sum(axis=1).max() + 1)
    return W + np.diag(1 - W.sum(axis=1))


def rounds_to_eps(W, eps):
    values = np.linalg.eigvalsh(W)
    rho = np.sort(np.abs(values))[-2]
    return int(np.ceil(np.log(eps) / np.log(rho)))


def rounds_by_power(W, eps):  # written differently: power the disagreement operator
    D = W - 1 / len(W)
    rho = max(abs(np.linalg.eigvals(D)))
    t = 0
    while rho ** t > eps:
        t += 1
    return t


def rounds_lambda2(W, eps):
    lam2 = np.sort(np.linalg.eigvalsh(W))[-2]
    return int(np.ceil(np.log(eps) / np.log(abs(lam2))))


def ring_allreduce(net, vectors):
    return gossip.ring_allreduce(net, vectors)


def ring_allreduce_own(net, vectors):  # written differently: explicit chunks and indices
    n = len(vectors)
    parts = [np.array_split(np.array(v, dtype=float), n) for v in vectors]
    for s in range(n - 1):
        sent = [net.send(i, (i + 1) % n, parts[i][(i - s) % n]) for i in range(n)]
        for i in range(n):
            parts[(i + 1) % n][(i - s) % n] = parts[(i + 1) % n][(i - s) % n] + sent[i]
    for s in range(n - 1):
        sent = [net.send(i, (i + 1) % n, parts[i][(i + 1 - s) % n]) for i in range(n)]
        for i in range(n):
            parts[(i + 1) % n][(i + 1 - s) % n] = sent[i]
    return [np.concatenate(p) / n for p in parts]


def all_to_all(net, vectors):
    n = len(vectors)
    out = []
    for i in range(n):
        total = np.array(vectors[i], dtype=float)
        for j in range(n):
            if j != i:
                total = total + net.send(j, i, vectors[j])
        out.append(total / n)
    return out


def test_correct_solutions_pass(capsys):
    for f in (mh_weights, mh_weights_networkx):
        ex.check_mh_weights(f)
    for f in (rounds_to_eps, rounds_by_power):
        ex.check_rounds_to_eps(f)
    for f in (ring_allreduce, ring_allreduce_own):
        ex.check_ring_allreduce(f)
    assert capsys.readouterr().out.count("passed") == 6


@pytest.mark.parametrize("wrong, message", [
    (equal_neighbour_rows, "1/\\(d_i \\+ 1\\) rows"),
    (max_degree, "Exercise 1.*differs from the reference"),
    (lambda n, e: mh_weights(n, e) - np.diag(np.diag(mh_weights(n, e))), "rows sum to"),
    (lambda n, e: mh_weights(n, e)[:-1], "shape"),
    (lambda n, e: None, "None"),
    (lambda n, e: np.full((n, n), np.nan), "Exercise 1"),
    (lambda n, e: [[1]], "shape"),
])
def test_mh_wrong_answers_fail(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.check_mh_weights(wrong)


@pytest.mark.parametrize("wrong, message", [
    (rounds_lambda2, "larger modulus"),
    (lambda W, eps: rounds_to_eps(W, eps) - 1, "expected"),  # floor instead of ceil
    (lambda W, eps: int(np.ceil(np.log(eps) / np.log(1 - 1 / len(W)))), "expected"),
    (lambda W, eps: None, "None"),
    (lambda W, eps: float("nan"), "NaN"),
    (lambda W, eps: [1, 2], "0-D"),
])
def test_rounds_wrong_answers_fail(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.check_rounds_to_eps(wrong)


@pytest.mark.parametrize("wrong, message", [
    (gossip.gather_broadcast, "gather-and-broadcast"),
    (all_to_all, "expected .* each"),
    (lambda net, vs: [np.mean(vs, axis=0)] * len(vs), "nothing was sent"),
    (lambda net, vs: [np.sum(vs, axis=0)] * len(vs), "missing 1/n"),
    (lambda net, vs: None, "list"),
    (lambda net, vs: np.mean(vs, axis=0), "list"),
    (lambda net, vs: 1 / 0, "ZeroDivisionError"),
])
def test_allreduce_wrong_answers_fail(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.check_ring_allreduce(wrong)


def test_unfinished_placeholder_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_mh_weights, ex.check_rounds_to_eps, ex.check_ring_allreduce):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)


# --- Exercise 4: steps of randomized gossip (predict, then measure) --------------------------


def steps_closed_form(n, eps):
    return int(np.ceil(np.log(eps) / np.log(1 - 1 / (n - 1))))


def steps_by_counting(n, eps):  # written differently: multiply until the bound is reached
    t, bound = 0, 1.0
    while bound > eps:
        bound *= (n - 2) / (n - 1)
        t += 1
    return t


def test_gossip_steps_solutions_pass(capsys):
    for f in (steps_closed_form, steps_by_counting, lambda n, e: np.int64(steps_closed_form(n, e))):
        ex.check_gossip_steps(f)
    out = capsys.readouterr().out
    assert out.count("passed") == 3 and "seeded runs" in out


@pytest.mark.parametrize("wrong, message", [
    (lambda n, e: int(np.ceil(np.log(e) / np.log(1 - 1 / n))), "rate 1 − 1/n"),
    (lambda n, e: int(np.ceil(np.log(e) / (2 * np.log(1 - 1 / (n - 1))))), "norm"),
    (lambda n, e: int(np.ceil(2 * np.log(e) / np.log(1 - 1 / (n - 1)))), "ε²"),
    (lambda n, e: int(np.floor(np.log(e) / np.log(1 - 1 / (n - 1)))), "round up"),
    (lambda n, e: np.log(e) / np.log(1 - 1 / (n - 1)), "expected"),  # not rounded at all
    (lambda n, e: 59, "expected"),  # the lesson's case, hard-coded
    (lambda n, e: None, "None"),
    (lambda n, e: float("nan"), "Exercise 4"),
    (lambda n, e: [1, 2], "0-D"),
    (lambda n, e: n["x"], "raised"),
])
def test_gossip_steps_wrong_answers_fail(wrong, message):
    with pytest.raises(AssertionError, match="Exercise 4") as info:
        ex.check_gossip_steps(wrong)
    assert message in str(info.value)


def test_each_exercise_is_graded_on_its_own(graded_alone):
    # Issue 25 item 3: one exercise wrong and the rest right fails exactly that check.
    right = {ex.check_mh_weights: mh_weights, ex.check_rounds_to_eps: rounds_to_eps,
             ex.check_ring_allreduce: ring_allreduce, ex.check_gossip_steps: steps_closed_form}
    wrong = {ex.check_mh_weights: equal_neighbour_rows, ex.check_rounds_to_eps: rounds_lambda2,
             ex.check_ring_allreduce: gossip.gather_broadcast,
             ex.check_gossip_steps: lambda n, e: int(np.ceil(np.log(e) / np.log(1 - 1 / n)))}
    cases = {check: (check, right[check], wrong[check]) for check in right}
    for broken in right:
        assert list(graded_alone(cases, broken)) == [broken]
