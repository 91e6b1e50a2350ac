"""Checks for lesson 05: a MapReduce gradient on shards, the time of a round, a round with
stragglers, and a predict-then-measure exercise: the best number of workers.

Exercise 1 is about *how* the gradient is computed, so its check watches the data: ``X`` and
``y`` arrive as arrays that record every arithmetic operation on all n rows at once and every
shard taken from them. A gradient computed on the whole data set is rejected even when its
value is right.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from mlpar.cluster import tasks
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.engines import SimulatedEngine
from mlpar.exercises import as_array, call, call_refusing, case_seed, expect, expect_close, fmt, passed

# numpy functions that compute with their arguments (not merely reshape or split them)
_ARITHMETIC = {"dot", "matmul", "einsum", "tensordot", "inner", "vdot", "sum", "mean", "outer",
               "multiply", "subtract", "add", "linalg.multi_dot", "multi_dot", "average"}


class Watched(np.ndarray):
    """An array that notes arithmetic on all ``full`` rows, and shards taken from them."""

    def __array_finalize__(self, obj):
        self.notes = getattr(obj, "notes", None)
        self.full = getattr(obj, "full", None)

    def _whole(self) -> bool:
        return self.full is not None and self.full in self.shape

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if self._whole() and isinstance(out, np.ndarray) and out.ndim >= 1 and self.ndim == 2:
            rows = out.shape[0] if self.shape[0] == self.full else None
            if rows is not None and rows < self.full:
                self.notes["shards"] += 1
        return out

    def _check(self, operands, name):
        for a in operands:
            if isinstance(a, Watched) and a._whole():
                self.notes["whole"].add(name)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self._check(inputs, ufunc.__name__)
        plain = [_plain(a) for a in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in _ARITHMETIC:
            self._check(args, func.__name__)
        return super().__array_function__(func, types, args, kwargs)

    def dot(self, other, out=None):
        self._check((self, other), "dot")
        return _plain(self).dot(_plain(other), out)


def _plain(a):
    # a view as a plain ndarray, without np.asarray (the check replaces it during a call)
    return a.view(np.ndarray) if isinstance(a, Watched) else a


def watched(X: np.ndarray, y: np.ndarray):
    """Copies of ``X`` and ``y`` that share one record: {'whole': operations, 'shards': count}."""
    notes = {"whole": set(), "shards": 0}
    out = []
    for a in (X, y):
        v = np.array(a).view(Watched)
        v.notes, v.full = notes, len(y)
        out.append(v)
    return out[0], out[1], notes


# numpy's converters: np.asarray(X) of an ndarray subclass hands back a plain ndarray, which
# would hide the shards of a student who converts the input first (a style, not a shortcut).
_CONVERTERS = ("asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray")


@contextmanager
def conversions_keep_watch():
    """While the student's function runs, ``np.asarray(X)`` and the other converters return a
    watched array (sharing ``X``'s record) when ``X`` is watched; anything else converts as usual."""
    originals = {name: getattr(np, name) for name in _CONVERTERS}

    def keeping(convert):
        def converted(a, *args, **kwargs):
            out = convert(a, *args, **kwargs)
            if isinstance(a, Watched) and isinstance(out, np.ndarray) and not isinstance(out, Watched):
                out = out.view(Watched)
                out.notes, out.full = a.notes, a.full
            return out
        return converted

    for name, convert in originals.items():
        setattr(np, name, keeping(convert))
    try:
        yield
    finally:
        for name, convert in originals.items():
            setattr(np, name, convert)


def check_mapreduce_gradient(mapreduce_gradient) -> None:
    """``mapreduce_gradient(X, y, w, n_workers)``: Σ of per-shard gradients, divided by n.

    Value: (1/n) Xᵀ(Xw − y) for several splits, unequal shards included. How: with more than
    one worker, no arithmetic may touch all n rows at once, and at least ``n_workers`` shards
    must be taken from X.
    """
    name = "Exercise 1 (MapReduce gradient)"
    rng = np.random.default_rng(case_seed(5))
    for n, d, m in ((12, 3, 1), (12, 3, 4), (101, 5, 7), (50, 2, 50)):
        X, y, w = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=d)
        Xw, yw, notes = watched(X, y)
        with conversions_keep_watch():
            got = call(name, mapreduce_gradient, Xw, yw, w.copy(), m)
        case = f"n={n} rows, {_workers(m)}"
        expect(name, got is not None,
               f"{case}: your function returned None; did it forget to `return`?")
        expect(name, isinstance(got, np.ndarray),
               f"{case}: expected a numpy array of shape ({d},), got {type(got).__name__}")
        got = as_array(name, got, what=f"the gradient ({case})", shape=(d,))
        expected = X.T @ (X @ w - y) / n
        if m > 1:
            expect(name, not notes["whole"],
                   f"{case}: your function computed on all {n} rows at once "
                   f"({', '.join(sorted(notes['whole']))} on the whole X or y); each worker "
                   "has only its shard: compute one partial gradient per shard, then add them")
            expect(name, notes["shards"] >= m,
                   f"{case}: expected at least {m} shards taken from X (X[rows], one per "
                   f"worker), got {notes['shards']} (the check watches the X it hands you: a "
                   "copy made through a list, or with a numpy function imported by name, "
                   "hides the shards from it)")
        if np.allclose(got, expected * m, rtol=1e-10) and m > 1 and not np.allclose(got, expected):
            raise AssertionError(
                f"{name}: {case}: got {fmt(got)}, expected {fmt(expected)}; it is {m}× too "
                "large: did you divide by the shard size and add the shards' means?")
        expect_close(name, got, expected, what=f"the gradient for {case}", rtol=1e-10, n=n)
    passed(name, "per-shard gradients add up to the serial gradient for 1, 4, 7 and 50 workers")


def _workers(m: int) -> str:
    return "1 worker" if m == 1 else f"{m} workers"


def _simulated_round(compute_times, message_time) -> float:
    """The simulator's answer: one round, with worker i computing compute_times[i] seconds."""
    m = len(compute_times)
    eng = SimulatedEngine(m, CostModel(alpha=message_time, beta=0.0, per_sample=1e-3))
    samples = [int(round(c * 1000)) for c in compute_times]
    eng.gather([eng.submit(i, tasks.noop, samples=s, nbytes=0) for i, s in enumerate(samples)])
    return eng.elapsed()


def _without_simulator(name: str, func, args, what: str):
    """The student's call, refused when it runs the simulator (the library's version of the
    round the exercise asks to work out): ``SimulatedCluster`` behind every engine and helper."""
    from mlpar.cluster.simulated_cluster import SimulatedCluster

    return call_refusing(name, func, {SimulatedCluster.__init__: "the library's simulator"}, *args,
                         why=f"Work out {what} from the events yourself; the check compares it "
                             "with the simulator.")


def _number(name: str, got, case: str) -> float:
    expect(name, got is not None, f"{case}: your function returned None; did it forget to `return`?")
    value = as_array(name, got, what=f"the time ({case})", shape=(), finite=False)
    expect(name, np.isfinite(value), f"{case}: the time is {fmt(float(value))}, expected a finite number")
    return float(value)


def check_round_time(round_time) -> None:
    """``round_time(n_workers, message_time, compute_time)``: equal workers, closed form."""
    name = "Exercise 2 (time of a round)"
    # compute-bound with several workers (3, 8) as well as link-bound (3 at 0.5 s, 10, 64)
    for m, t, c in ((1, 1.0, 5.0), (3, 1.0, 2.0), (3, 1.0, 0.5), (3, 1.0, 5.0), (8, 0.25, 3.0),
                    (10, 0.2, 1.0), (64, 0.01, 0.1)):
        case = f"{_workers(m)}, messages of {t} s, compute of {c} s"
        got = _number(name, _without_simulator(name, round_time, (m, t, c), "the round's time"),
                      case)
        expected = _simulated_round([c] * m, t)
        if not np.isclose(got, expected, rtol=1e-9):
            raise AssertionError(
                f"{name}: {case}: got {fmt(got)}, the simulator says {fmt(expected)}. When does "
                "the last worker receive w? Can replies overtake the broadcast on the server's "
                "one link?")
    passed(name, "agrees with the simulator, compute-bound and link-bound cases")


def check_simulate_round(simulate_round) -> None:
    """``simulate_round(compute_times, message_time)`` with unequal workers (stragglers)."""
    name = "Exercise 3 (a round with stragglers)"
    rng = np.random.default_rng(case_seed(7))
    cases = [([2.0, 2.0, 10.0], 1.0), ([10.0, 2.0, 2.0], 1.0), ([1.0], 1.0),
             ([0.5, 0.5, 0.5, 0.5], 1.0), ([3.0, 0.5, 6.0, 1.0], 0.25)]
    # messages other than 1 s, so that m·t, m/t and m differ
    cases += [(list(np.round(rng.exponential(2.0, size=9), 3)), float(t)) for t in (0.3, 1.0, 0.05)]
    for compute, t in cases:
        case = f"compute times {compute} and {t:g} s messages"
        got = _number(name, _without_simulator(name, simulate_round, (list(compute), t),
                                                "the round's end"), case)
        expected = _simulated_round(compute, t)
        if not np.isclose(got, expected, rtol=1e-9):
            raise AssertionError(
                f"{name}: {case}: got {fmt(got)}, the simulator says {fmt(expected)}. Replies "
                "use the server's link first come, first served: in the order the workers "
                "finish, not in worker order, and never before the broadcast is over.")
    passed(name, f"agrees with the simulator on {len(cases)} rounds, stragglers included")


# -- Exercise 4: predict the best number of workers, then measure it on the simulator ----------


def equal_round(n_workers: int, message_time: float, compute_one: float) -> float:
    """The simulator's round: ``n_workers`` equal workers share ``compute_one`` seconds of work."""
    m = int(n_workers)
    eng = SimulatedEngine(m, CostModel(alpha=message_time, beta=0.0, per_sample=compute_one / m))
    eng.gather([eng.submit(i, tasks.noop, samples=1, nbytes=0) for i in range(m)])
    return eng.elapsed()


def best_measured(compute_one: float, message_time: float, around: float) -> tuple[int, float]:
    """The whole number of workers with the shortest simulated round, searched near ``around``."""
    low, high = max(1, int(around / 2)), int(2 * around) + 2
    times = {m: equal_round(m, message_time, compute_one) for m in range(low, high + 1)}
    best = min(times, key=times.get)
    return best, times[best]


def check_best_workers(best_workers) -> None:
    """``best_workers(compute_one, message_time)``: the real m* minimising Exercise 2's round.

    The round of Exercise 2, max((m + 1)t + C/m, 2mt) with C = ``compute_one``, is smallest at
    m* = √(C/t): (m + 1)t + C/m is smallest there, and there it is still the larger of the two.
    The prediction is graded against that exactly. (The lesson's next cell compares it with the
    best whole number of workers on the simulator, using that run's calibrated model, so the
    check prints no example of its own with other figures.)
    """
    name = "Exercise 4 (the best number of workers)"
    rng = np.random.default_rng(case_seed(13))
    cases = [(1.0, 1e-3), (0.128, 2.45e-4)]
    cases += [(float(rng.uniform(0.05, 5.0)), float(rng.uniform(1e-4, 5e-3))) for _ in range(3)]
    for C, t in cases:
        case = f"compute {fmt(C)} s on one worker, messages of {fmt(t)} s"
        got = _number(name, call(name, best_workers, C, t), case)
        expected = float(np.sqrt(C / t))
        if np.isclose(got, expected, rtol=1e-9):
            continue
        misreadings = (
            (np.sqrt(C / (2 * t)), "that is √(C/2t), the optimum if broadcast, compute and "
             "replies ran one after the other (2mt + C/m); on the flat server the early workers "
             "compute while the broadcast goes on and reply while the last one computes, so "
             "the round is (m + 1)t + C/m: start from Exercise 2's round time"),
            (C / t, "that is C/t: the square root is missing (set the derivative of "
             "(m + 1)t + C/m to zero)"),
            (np.sqrt(C * t), "that is √(C·t), the square root of the wrong ratio"),
            (np.sqrt(2 * C / t), "that is √(2C/t): the round has one message time per worker "
             "on the way out, not two, while compute is the larger term"),
            (round(expected), "that is m* rounded to a whole number: the exercise asks for the "
             "real-valued optimum of the formula, which the check then compares with the best "
             "whole number"),
        )
        why = next((text for value, text in misreadings if np.isclose(got, value, rtol=1e-6)),
                   "compare with where the derivative of (m + 1)t + C/m is zero, and check "
                   "that 2mt is not the larger term there")
        raise AssertionError(f"{name}: {case}: got m* = {fmt(got)}, expected {fmt(expected)}; "
                             f"{why}")
    passed(name, f"the real-valued optimum of Exercise 2's round in {len(cases)} cases; the cell "
           "below compares it with the best whole number of workers on the simulator, with this "
           "run's calibrated model")
