import networkx as nx
import numpy as np
import pytest

from mlpar.algorithms.distributed import gossip, topologies
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


def ring_allreduce_queue(net, vectors):  # written differently: each node a dict of chunks
    n = len(vectors)
    held = [dict(enumerate(np.array_split(np.asarray(v, dtype=float), n))) for v in vectors]
    for step in range(2 * (n - 1)):
        reduce = step < n - 1
        k = step if reduce else step - (n - 1)
        outgoing = [((i - k) % n if reduce else (i + 1 - k) % n) for i in range(n)]
        arrived = [net.send(i, (i + 1) % n, held[i][outgoing[i]]) for i in range(n)]
        for i in range(n):
            c, dst = outgoing[i], (i + 1) % n
            held[dst][c] = held[dst][c] + arrived[i] if reduce else arrived[i]
    return [np.concatenate([h[c] for c in range(n)]) / n for h in held]


def direct_reduce_scatter(net, vectors):  # review 07-08 finding 4 (a): chunk j straight to node j
    n = len(vectors)
    chunks = [np.array_split(np.asarray(v, dtype=float), n) for v in vectors]
    owned = [chunks[j][j].copy() for j in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j:
                owned[j] = owned[j] + net.send(i, j, chunks[i][j])
    out = [[None] * n for _ in range(n)]
    for j in range(n):
        for i in range(n):
            out[i][j] = owned[j] if i == j else net.send(j, i, owned[j])
    return [np.concatenate(o) / n for o in out]


def mean_with_dummy_sends(net, vectors):  # review 07-08 finding 4 (b)
    n, M = len(vectors), len(vectors[0])
    for _ in range(2 * (n - 1)):
        for i in range(n):
            net.send(i, (i + 1) % n, np.zeros(M // n))
    return [np.mean(vectors, axis=0)] * n


def ring_of_whole_vectors(net, vectors):  # a ring, but whole vectors, n − 1 steps
    n = len(vectors)
    total = [np.asarray(v, dtype=float).copy() for v in vectors]
    passing = [t.copy() for t in total]
    for _ in range(n - 1):
        passing = [net.send((i - 1) % n, i, passing[(i - 1) % n]) for i in range(n)]
        total = [t + p for t, p in zip(total, passing)]
    return [t / n for t in total]


def test_correct_solutions_pass(capsys):
    for f in (mh_weights, mh_weights_networkx):
        ex.check_mh_weights(f)
    for f in (rounds_to_eps, rounds_by_power):
        ex.check_rounds_to_eps(f)
    for f in (ring_allreduce_own, ring_allreduce_queue):
        ex.check_ring_allreduce(f)
    assert capsys.readouterr().out.count("passed") == 6


@pytest.mark.parametrize("check, library, message", [
    (ex.check_mh_weights, lambda n, e: topologies.metropolis_weights(_graph(n, e)),
     "topologies.metropolis_weights"),
    (ex.check_mh_weights, lambda n, e: topologies.mixing_matrix(_graph(n, e)),
     "topologies.mixing_matrix"),
    (ex.check_rounds_to_eps, lambda W, eps: topologies.rounds_to(topologies.rho(W), eps),
     "topologies.rho"),
    (ex.check_rounds_to_eps, lambda W, eps: int(np.ceil(np.log(eps) / np.log(
        np.abs(topologies.spectrum(W))[1]))), "topologies.spectrum"),
    (ex.check_ring_allreduce, ring_allreduce, "gossip.ring_allreduce"),
    (ex.check_gossip_steps, lambda n, e: ex.gossip_steps(n, e), "exercises.l07_gossip.gossip_steps"),
    (ex.check_gossip_steps, lambda n, e: topologies.rounds_to(1 - 1 / (n - 1), e),
     "topologies.rounds_to"),
])
def test_the_librarys_version_is_refused_by_name(check, library, message):
    # Issue 35 §2/§4: each of the four passed with one call to the library the lesson imports.
    with pytest.raises(AssertionError, match=message):
        check(library)


def _graph(n, edges):
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    return g


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


def mean_carrying_the_nan(net, vectors):
    """A forgery: the central mean, plus 0 × what arrived, so a NaN inbox shows up as NaN."""
    n, mean = len(vectors), np.mean(vectors, axis=0)
    heard = [np.zeros(len(mean)) for _ in range(n)]
    for _ in range(2 * (n - 1)):
        for i in range(n):
            got = net.send(i, (i + 1) % n, np.zeros(len(mean) // n))
            heard[(i + 1) % n] += np.resize(got, len(mean))
    return [mean + 0 * h for h in heard]


@pytest.mark.parametrize("wrong, message", [
    (gossip.gather_broadcast, "expected 2\\(n − 1\\) = 2 each"),  # n = 2: a ring of two
    (all_to_all, "messages, expected 2\\(n − 1\\)"),  # n = 2 is a ring: caught by its count
    (direct_reduce_scatter, "all-to-all exchange, not a ring"),
    (mean_with_dummy_sends, "not built from what it received"),
    (mean_carrying_the_nan, "did not change: they were not built from what it received"),
    (ring_of_whole_vectors, "messages, expected 2\\(n − 1\\)"),
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
    if n == 2:  # the rate is 0: one step averages the only pair
        return 1
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
    (lambda n, e: 0 if n == 2 else steps_closed_form(n, e), "one step averages the only pair"),
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
             ex.check_ring_allreduce: ring_allreduce_own, ex.check_gossip_steps: steps_closed_form}
    wrong = {ex.check_mh_weights: equal_neighbour_rows, ex.check_rounds_to_eps: rounds_lambda2,
             ex.check_ring_allreduce: gossip.gather_broadcast,
             ex.check_gossip_steps: lambda n, e: int(np.ceil(np.log(e) / np.log(1 - 1 / n)))}
    cases = {check: (check, right[check], wrong[check]) for check in right}
    for broken in right:
        assert list(graded_alone(cases, broken)) == [broken]
