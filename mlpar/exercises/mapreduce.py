"""Checks for lesson 05: a MapReduce gradient, the time of a round, a round with stragglers."""

from __future__ import annotations

import numpy as np

from .. import tasks
from ..cost_model import CostModel
from ..engines import SimulatedEngine
from . import call, expect_close, passed


def check_mapreduce_gradient(mapreduce_gradient) -> None:
    """``mapreduce_gradient(X, y, w, n_workers)`` must equal (1/n) Xᵀ(Xw − y) for any split."""
    name = "Exercise 1 (MapReduce gradient)"
    rng = np.random.default_rng(5)
    for n, d, m in ((12, 3, 1), (12, 3, 4), (101, 5, 7), (50, 2, 50)):
        X, y, w = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=d)
        got = call(name, mapreduce_gradient, X, y, w, m)
        expected = X.T @ (X @ w - y) / n
        expect_close(name, got, expected, what=f"the gradient for n={n}, {m} workers", rtol=1e-10)
    passed(name, "equals the serial gradient for 1, 4, 7 and 50 workers")


def _simulated_round(compute_times, message_time) -> float:
    """The simulator's answer: one round, with worker i computing compute_times[i] seconds."""
    m = len(compute_times)
    eng = SimulatedEngine(m, CostModel(alpha=message_time, beta=0.0, per_sample=1e-3))
    samples = [int(round(c * 1000)) for c in compute_times]
    eng.gather([eng.submit(i, tasks.noop, samples=s, nbytes=0) for i, s in enumerate(samples)])
    return eng.elapsed()


def check_round_time(round_time) -> None:
    """``round_time(n_workers, message_time, compute_time)``: equal workers, closed form."""
    name = "Exercise 2 (time of a round)"
    for m, t, c in ((1, 1.0, 5.0), (3, 1.0, 2.0), (3, 1.0, 0.5), (10, 0.2, 1.0), (64, 0.01, 0.1)):
        got = call(name, round_time, m, t, c)
        expected = _simulated_round([c] * m, t)
        if not np.isclose(got, expected, rtol=1e-9):
            raise AssertionError(
                f"{name}: for {m} workers, messages of {t} s and compute of {c} s you returned "
                f"{got!r}, the simulator says {expected!r}. When does the last worker receive w? "
                "Can replies overtake the broadcast on the server's one link?"
            )
    passed(name, "agrees with the simulator, compute-bound and link-bound cases")


def check_simulate_round(simulate_round) -> None:
    """``simulate_round(compute_times, message_time)`` with unequal workers (stragglers)."""
    name = "Exercise 3 (a round with stragglers)"
    rng = np.random.default_rng(7)
    cases = [[2.0, 2.0, 10.0], [10.0, 2.0, 2.0], [1.0], [0.5, 0.5, 0.5, 0.5]]
    cases += [list(np.round(rng.exponential(2.0, size=9), 3)) for _ in range(3)]
    for compute in cases:
        got = call(name, simulate_round, list(compute), 1.0)
        expected = _simulated_round(compute, 1.0)
        if not np.isclose(got, expected, rtol=1e-9):
            raise AssertionError(
                f"{name}: for compute times {compute} and 1 s messages you returned {got!r}, "
                f"the simulator says {expected!r}. Replies use the server's link first come, "
                "first served: in the order the workers finish, not in worker order."
            )
    passed(name, "agrees with the simulator on 7 rounds, stragglers included")
