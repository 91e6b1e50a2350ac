"""Checks for lesson 06: the SSP gate, time to reach a loss, replaying an asynchronous run."""

from __future__ import annotations

import numpy as np

from .. import house_prices, parameter_server
from ..cost_model import CostModel
from ..mapreduce import shards
from . import call, expect_close, passed


def check_may_pull(may_pull) -> None:
    """``may_pull(clocks, worker, s)``: may ``worker`` start its next gradient under SSP(s)?"""
    name = "Exercise 1 (the SSP gate)"
    cases = [
        ([3, 3, 3], 0, 0, True),
        ([4, 3, 3], 0, 0, False),
        ([4, 3, 3], 0, 1, True),
        ([6, 2, 5], 0, 3, False),
        ([6, 2, 5], 2, 3, True),
        ([6, 2, 5], 1, 0, True),  # the slowest worker may always go on
        ([9, 9, 2, 9], 3, 6, False),
        ([9, 9, 2, 9], 3, 7, True),
    ]
    for clocks, worker, s, expected in cases:
        got = call(name, may_pull, np.array(clocks), worker, s)
        if bool(got) != expected:
            raise AssertionError(
                f"{name}: clocks {clocks}, worker {worker}, s = {s}: you said {bool(got)}, expected "
                f"{expected}. The worker may start if its clock is at most s ahead of the slowest."
            )
    passed(name, f"{len(cases)} cases, including s = 0 (synchronous)")


def check_time_to_loss(time_to_loss) -> None:
    """``time_to_loss(times, losses, target)``: first time the loss is ≤ target, else inf."""
    name = "Exercise 2 (time to reach a loss)"
    times = np.array([0.0, 1.0, 2.5, 3.0, 4.5])
    losses = np.array([10.0, 6.0, 7.0, 3.0, 2.0])
    for target, expected in ((6.0, 1.0), (5.0, 3.0), (10.0, 0.0), (2.0, 4.5), (1.0, np.inf)):
        got = call(name, time_to_loss, times, losses, target)
        if not (got == expected or (np.isinf(expected) and np.isinf(got))):
            raise AssertionError(
                f"{name}: target {target}: got {got!r}, expected {expected!r}. Return the time of the "
                "*first* loss at or below the target, and np.inf if the run never gets there."
            )
    passed(name, "first crossing found, and inf when the target is never reached")


def check_replay(replay) -> None:
    """``replay(X_shards, y_shards, workers, pulled, rows, lr)`` must rebuild an async run."""
    name = "Exercise 3 (replaying an asynchronous run)"
    X, y = house_prices.load()
    m, lr, b, seed = 4, 0.05, 8, 11
    cost = CostModel(alpha=1e-5, per_sample=1e-5, straggler=1, slowdown=3.0, jitter=0.5, seed=2)
    run = parameter_server.train(X, y, mode="async", n_workers=m, n_updates=60, cost=cost, lr=lr,
                                 batch_size=b, seed=seed)
    parts = shards(len(y), m)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(m)]
    rows = [streams[i].integers(0, parts[i].stop - parts[i].start, size=b) for i in run.workers]
    got = call(name, replay, [X[s] for s in parts], [y[s] for s in parts], run.workers.copy(),
               run.pulled.copy(), rows, lr)
    expect_close(name, got, run.weights, what="the final weights", rtol=1e-12)
    passed(name, f"rebuilt {len(run.workers)} updates with delays up to {run.delay.max()}")
