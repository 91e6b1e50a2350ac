"""Checks for lesson 06: predicting the synchronous/asynchronous time ratio from H_m (then
comparing with the simulation), the delay-scaled step η/(1 + delay) (run inside a parameter
server), and replaying an asynchronous run."""

from __future__ import annotations

import math

import numpy as np

from mlpar.algorithms.distributed import house_prices, least_squares, parameter_server
from mlpar.algorithms.distributed.mapreduce import place_shards
from mlpar.cluster.cost_model import CostModel
from mlpar.cluster.engines import SimulatedEngine
from mlpar.core import seeding, splits
from mlpar.exercises import (
    as_array,
    call,
    case_seed,
    expect,
    expect_close,
    fmt,
    number,
    passed,
    refuse_unless_close,
)


def harmonic(m: int) -> float:
    """H_m = 1 + 1/2 + ... + 1/m, the mean of the largest of m Exp(1) variables."""
    return float(sum(1.0 / k for k in range(1, m + 1)))


def sync_async_ratio_model(m: int) -> float:
    """The lesson's model of (sync time) / (async time) for the same number of updates.

    A task lasts T(1 + E), E ~ Exp(1), messages free. A synchronous round of m updates lasts
    as long as its slowest task, on average T(1 + H_m); asynchronous workers never wait, so m
    updates take one mean task, 2T. The ratio is (1 + H_m) / 2.
    """
    return (1.0 + harmonic(m)) / 2.0


def _refuse(name, case, got, expected, misreadings, hint):
    refuse_unless_close(name, f"{case}:", got, expected, misreadings, hint, rel_tol=1e-9)


RATIO = "Exercise 1 (predict sync ÷ async from H_m)"
_RATIO_CASES = (8, 3, 16, 100, 2, 1)  # m = 8 first: there every misreading differs


def check_ratio(predict, measured=None) -> None:
    """``predict(m)``: the model's sync/async time ratio for m workers, (1 + H_m)/2.

    Graded against the model exactly. ``measured``: optionally the sync and async runs
    ``(sync, async_)`` of the lesson (``PSResult``s with the same workers and updates); the
    check then says how far their time ratio fell from the prediction and why. The
    measurement never decides the grade.
    """
    extra = int(np.random.default_rng(case_seed(8)).integers(4, 65))  # new in every graded run
    for m in [*_RATIO_CASES, extra]:
        h = harmonic(m)
        misreadings = [
            (h, "H_m is the slowest task's *extra* time; a task also takes its fixed part "
                "(1 + H_m for the round), and async needs one mean task, 2 units, per m updates."),
            (1 + h, "That is the synchronous round alone; divide by what m asynchronous updates "
                    "take: one mean task, 1 + E[E] = 2 units."),
            (h / 2, "The round lasts the fixed part plus the largest hiccup: 1 + H_m, not H_m."),
            ((1 + math.log(m)) / 2, "ln m only approximates H_m (H_m ≈ ln m + 0.577); use "
                                    "H_m = 1 + 1/2 + ... + 1/m exactly."),
            ((1 + harmonic(m - 1)) / 2, "H_{m-1} leaves one worker out: the round waits for "
                                        "the largest of all m."),
            ((1 + m) / 2, "That adds the hiccups of all m workers; the round waits only for "
                          "the largest one, whose mean is H_m."),
            ((1 + h) / (2 * m), "Both schedules apply m updates; do not divide by m again."),
        ]
        got = call(RATIO, predict, m)
        _refuse(RATIO, f"m = {m}", got, sync_async_ratio_model(m), misreadings,
                "A synchronous round of m updates waits for the largest of m tasks T(1 + E); "
                "m asynchronous updates take one mean task.")
    passed(RATIO, f"(1 + H_m)/2 for m = {', '.join(str(m) for m in sorted(_RATIO_CASES))} "
                  f"and {extra}")
    if measured is not None:
        print(compare_ratio(predict, measured))


def compare_ratio(predict, measured) -> str:
    """How far a measured or simulated sync/async ratio fell from ``predict``, and why."""
    if isinstance(measured, tuple) and len(measured) == 2 and all(
            isinstance(r, parameter_server.PSResult) for r in measured):
        sync, async_ = measured
        if len(sync.workers) != len(async_.workers) or sync.n_workers != async_.n_workers:
            raise ValueError("measured: expected sync and async runs with the same workers and "
                             f"updates, got {sync.n_workers}/{async_.n_workers} workers and "
                             f"{len(sync.workers)}/{len(async_.workers)} updates")
        m, ratio = sync.n_workers, float(sync.times[-1] / async_.times[-1])
    else:
        raise TypeError("measured: expected (sync_run, async_run), two PSResults of "
                        f"parameter_server.train, got {type(measured).__name__}")
    predicted = number(call(RATIO, predict, m))
    if predicted is None:
        return f"m = {m}: your function did not return a number"
    text = (f"m = {m}: measured sync ÷ async = {ratio:.3g}, your prediction {predicted:.3g} "
            f"(measured/predicted = {ratio / predicted:.2f}). ")
    if abs(ratio / predicted - 1) <= 0.1:
        return text + "✓ within 10% of the model."
    if ratio < predicted:
        return text + ("Below the model: every update also sends w and a gradient (α per "
                       "message, one link at the server), a cost both schedules pay and the "
                       "model leaves out, so the ratio moves towards 1.")
    return text + ("Above the model: the synchronous server sends the round's m messages one "
                   "after the other, so its rounds last longer than their slowest task.")


# --- Exercise 2: the delay-scaled step ----------------------------------------------------

STEP = "Exercise 2 (a step scaled by the delay)"


def _scaled_run(step_rule, name: str, lr: float):
    """An asynchronous run on a simulated cluster whose server asks ``step_rule`` for each step."""

    class Scaled(parameter_server.Server):
        def step_size(self, delay):
            got = call(name, step_rule, self.lr, delay)
            value = number(got)
            if value is None:
                arr = as_array(name, got, what=f"the step for delay {delay}")
                expect(name, arr.size == 1, f"for one delay ({delay}) return one step, got "
                                            f"shape {arr.shape}")
                value = float(arr.reshape(-1)[0])
            return value

    X, y = house_prices.load()
    m, batch = 8, 32
    cost = CostModel(alpha=2e-5, beta=1e-9, per_sample=5e-6, jitter=1.0, seed=case_seed(6))
    eng = SimulatedEngine(m, cost)
    shards, parts = place_shards(eng, X, y), splits.shards(len(y), m)
    streams = seeding.worker_rngs(m, seed=case_seed(3))
    server = Scaled(X.shape[1], m, lr=lr)

    def send(i):
        rows = streams[i].integers(0, parts[i].stop - parts[i].start, size=batch)
        eng.submit(i, least_squares.minibatch_gradient, shards[i].X, shards[i].y, server.pull(i),
                   rows, samples=batch)

    parameter_server.serve(eng, server, send, 240, rounds=False, after_push=lambda: None)
    return server


def check_delay_step(delay_step) -> None:
    """``delay_step(lr, delay)``: the step η/(1 + delay) for a gradient ``delay`` updates old.

    ``delay`` is an int or a numpy array of ints (one step per delay). Checked on delays
    0..40 and on a shuffled array, then inside an asynchronous parameter server: the run must
    be the reference run (same weights).
    """
    rng = np.random.default_rng(case_seed(21))
    delays = rng.permutation(np.arange(41))
    lr = float(rng.choice([0.05, 0.1, 0.3]))
    expected = lr / (1 + delays)
    for d in (7, 0, 2):
        misreadings = [
            (lr, "The step is not scaled: a gradient d updates old should take a smaller step."),
            (lr * (1 + d), "That grows with the delay; the stalest gradients must take the "
                           "*smallest* steps: divide by 1 + delay."),
            (lr / (1 + d) ** 2, "Divide by 1 + delay once, not by its square."),
            (lr / max(d, 1), "Divide by 1 + delay: a fresh gradient (delay 0) keeps η and one "
                             "update old halves it."),
            (lr / (2 + d), "Off by one: a gradient with delay 0 is fresh and keeps the full η."),
        ]
        got = call(STEP, delay_step, lr, d)
        if isinstance(got, np.ndarray) and got.size == 1:
            got = float(got.reshape(-1)[0])
        _refuse(STEP, f"lr = {lr:g}, delay = {d}", got, lr / (1 + d), misreadings,
                "Return lr / (1 + delay).")
    got = call(STEP, delay_step, lr, delays.copy())
    if number(got) is not None:
        raise AssertionError(f"{STEP}: for an array of {delays.size} delays you returned one "
                             f"number ({fmt(got)}); return one step per delay (numpy "
                             "arithmetic on the array does it)")
    expect_close(STEP, got, expected, what=f"the steps for delays {fmt(delays)} (lr = {lr:g})",
                 rtol=1e-12)
    reference = _scaled_run(lambda lr_, d: lr_ / (1 + d), STEP, 0.3)
    server = _scaled_run(delay_step, STEP, 0.3)
    expect_close(STEP, server.w, reference.w, rtol=1e-9,
                 what="the weights of an asynchronous run with your steps "
                      f"(8 workers, {reference.version} updates, delays up to "
                      f"{max(np.arange(reference.version) - np.array(reference.pulled))})")
    passed(STEP, "η/(1 + delay) for single delays and arrays, and inside an asynchronous server")


def check_replay(replay) -> None:
    """``replay(X_shards, y_shards, workers, pulled, rows, lr)`` must rebuild an async run."""
    name = "Exercise 3 (replaying an asynchronous run)"
    X, y = house_prices.load()
    m, lr, b, seed = 4, 0.05, 8, case_seed(11)
    cost = CostModel(alpha=1e-5, per_sample=1e-5, straggler=1, slowdown=3.0, jitter=0.5,
                     seed=case_seed(2))
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
