"""Checks for lesson 06: the SSP gate (run inside a real schedule), time to reach a loss,
replaying an asynchronous run."""

from __future__ import annotations

import numpy as np

from mlpar.algorithms.distributed import house_prices, least_squares, parameter_server
from mlpar.algorithms.distributed.mapreduce import place_shards
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.engines import SimulatedEngine
from mlpar.core import seeding, splits
from mlpar.exercises import as_array, call, expect, expect_close, fmt, passed

_GATE_CASES = [
    ([3, 3, 3], 0, 0, True),
    ([4, 3, 3], 0, 0, False),
    ([4, 3, 3], 0, 1, True),
    ([6, 2, 5], 0, 3, False),
    ([6, 2, 5], 2, 3, True),
    ([6, 2, 5], 1, 0, True),  # the slowest worker may always go on
    ([9, 9, 2, 9], 3, 6, False),
    ([9, 9, 2, 9], 3, 7, True),
    ([5, 7, 5], 1, 2, True),  # exactly s ahead: allowed
]


def _answer(name: str, got, case: str) -> bool:
    if isinstance(got, (bool, np.bool_)):
        return bool(got)
    raise AssertionError(f"{name}: {case}: expected True or False, got {fmt(got)}"
                         + ("; did the function forget to `return`?" if got is None else ""))


def _schedule_with(may_pull, name: str, bound: int):
    """An SSP run on a simulated cluster whose server asks ``may_pull`` who may pull."""

    class Gate(parameter_server.Server):
        def may_pull(self, worker):
            case = f"inside an SSP run with s = {bound}, clocks {self.clock.tolist()}, worker {worker}"
            return _answer(name, call(name, may_pull, self.clock.copy(), worker, bound), case)

    X, y = house_prices.load()
    m, batch = 4, 8
    cost = CostModel(alpha=1e-5, per_sample=1e-5, straggler=0, slowdown=3.0, jitter=0.5, seed=4)
    eng = SimulatedEngine(m, cost)
    shards, parts = place_shards(eng, X, y), splits.shards(len(y), m)
    streams = seeding.worker_rngs(m, seed=1)
    server = Gate(X.shape[1], m, lr=0.05, bound=bound)

    def send(i):
        rows = streams[i].integers(0, parts[i].stop - parts[i].start, size=batch)
        eng.submit(i, least_squares.minibatch_gradient, shards[i].X, shards[i].y, server.pull(i),
                   rows, samples=batch)

    parameter_server.serve(eng, server, send, 120, rounds=False, after_push=lambda: None)
    return server


def check_may_pull(may_pull) -> None:
    """``may_pull(clocks, worker, s)``: may ``worker`` start its next gradient under SSP(s)?

    Then the gate runs the schedule of a parameter server with a straggler: the run must be
    the reference SSP run (same updates in the same order), staleness never above s.
    """
    name = "Exercise 1 (the SSP gate)"
    for clocks, worker, s, expected in _GATE_CASES:
        case = f"clocks {clocks}, worker {worker}, s = {s}"
        got = _answer(name, call(name, may_pull, np.array(clocks), worker, s), case)
        if got != expected:
            raise AssertionError(
                f"{name}: {case}: got {got}, expected {expected}. The worker may start if its "
                "clock is at most s ahead of the slowest worker's.")
    for bound in (0, 2):
        server = _schedule_with(may_pull, name, bound)
        reference = _schedule_with(lambda c, w, s: bool(c[w] - c.min() <= s), name, bound)
        expect(name, max(server.staleness) <= bound,
               f"in an SSP run with s = {bound}, a gradient had staleness {max(server.staleness)}")
        expect(name, server.workers == reference.workers,
               f"in an SSP run with s = {bound}, the updates came from workers "
               f"{server.workers[:12]}..., expected {reference.workers[:12]}...")
    passed(name, f"{len(_GATE_CASES)} cases, and it ran a parameter server with s = 0 and s = 2")


def check_time_to_loss(time_to_loss) -> None:
    """``time_to_loss(times, losses, target)``: first time the loss is ≤ target, else inf."""
    name = "Exercise 2 (time to reach a loss)"
    times = np.array([0.0, 1.0, 2.5, 3.0, 4.5])
    losses = np.array([10.0, 6.0, 7.0, 3.0, 2.0])
    for target, expected in ((6.0, 1.0), (5.0, 3.0), (10.0, 0.0), (2.0, 4.5), (1.0, np.inf)):
        case = f"losses {losses.tolist()} at times {times.tolist()}, target {target}"
        got = call(name, time_to_loss, times.copy(), losses.copy(), target)
        expect(name, got is not None, f"{case}: got None; return np.inf when the target is never reached")
        value = as_array(name, got, what=f"the time ({case})", shape=(), finite=False)
        if not (value == expected or (np.isinf(expected) and np.isposinf(value))):
            raise AssertionError(
                f"{name}: {case}: got {fmt(float(value))}, expected {fmt(expected)}. Return the "
                "time of the *first* loss at or below the target, and np.inf if the run never "
                "gets there.")
    passed(name, "first crossing found, and inf when the target is never reached")


def check_replay(replay) -> None:
    """``replay(X_shards, y_shards, workers, pulled, rows, lr)`` must rebuild an async run."""
    name = "Exercise 3 (replaying an asynchronous run)"
    X, y = house_prices.load()
    m, lr, b, seed = 4, 0.05, 8, 11
    cost = CostModel(alpha=1e-5, per_sample=1e-5, straggler=1, slowdown=3.0, jitter=0.5, seed=2)
    run = parameter_server.train(X, y, mode="async", n_workers=m, n_updates=60, cost=cost, lr=lr,
                                 batch_size=b, seed=seed)
    parts = splits.shards(len(y), m)
    streams = seeding.worker_rngs(m, seed=seed)
    rows = [streams[i].integers(0, parts[i].stop - parts[i].start, size=b) for i in run.workers]
    got = call(name, replay, [X[s] for s in parts], [y[s] for s in parts], run.workers.copy(),
               run.pulled.copy(), rows, lr)
    expect(name, got is not None, "the final weights are None; did the function forget to `return`?")
    expect_close(name, got, run.weights, n=b,
                 what=f"the final weights after {len(run.workers)} updates from {m} workers "
                      f"(delays up to {run.delay.max()})", rtol=1e-12)
    passed(name, f"rebuilt {len(run.workers)} updates with delays up to {run.delay.max()}")
