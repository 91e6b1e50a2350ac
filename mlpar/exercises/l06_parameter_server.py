"""Checks for lesson 06: predicting the synchronous/asynchronous time ratio from H_m (then
comparing with the simulation), predicting the largest step the synchronous server survives
(2/(mL), then trying it), and replaying an asynchronous run."""

from __future__ import annotations

import math

import numpy as np

from mlpar.algorithms.distributed import house_prices, parameter_server
from mlpar.cluster.cost_model import CostModel
from mlpar.core import seeding, splits
from mlpar.exercises import (
    call,
    call_refusing,
    case_seed,
    expect,
    expect_close,
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
        got = call_refusing(RATIO, predict, {sync_async_ratio_model: "the library's model",
                                             harmonic: "the library's harmonic number"}, m,
                            why="Write (sync time) ÷ (async time) from the model yourself.")
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


# --- Exercise 2: the largest step the synchronous server survives --------------------------

STEP = "Exercise 2 (the synchronous server's largest step)"


def curvature(X) -> float:
    """L = λ_max(XᵀX / n): the largest curvature of the least-squares loss (1/2n)‖Xw − y‖²."""
    return float(np.linalg.eigvalsh(X.T @ X / len(X)).max())


def sync_step_limit_model(X, m: int) -> float:
    """2 / (m L): a synchronous round applies m gradients of step η taken at the same w, one
    step of mη along their mean, and gradient descent on a quadratic is stable for steps
    below 2/L."""
    return 2.0 / (m * curvature(X))


def _step_cases():
    rng = np.random.default_rng(case_seed(21))  # new matrices in every graded run
    cases = []
    for n, d, m, scale in ((200, 3, 8, 1.0), (500, 5, 1, 3.0), (300, 4, 16, 0.5), (50, 2, 3, 10.0)):
        X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d) * scale
        X[:, 0] += rng.uniform(-1, 1) * scale  # a column with a mean: XᵀX is not n·I
        cases.append((X, m))
    return cases


def check_sync_step_limit(step_limit) -> None:
    """``step_limit(X, m)``: the largest per-gradient step η at which the synchronous server with
    m workers still converges on least squares with data X, in the lesson's model: 2/(mL),
    L = λ_max(XᵀX/n). Graded against the model on random data; each misreading is named; the
    library's own ``sync_step_limit_model`` and ``curvature`` are refused."""
    for X, m in _step_cases():
        n = len(X)
        gram = X.T @ X
        eig = np.linalg.eigvalsh(gram / n)
        L = eig.max()
        misreadings = [
            (2 / L, "That is plain gradient descent's limit, 2/L. The synchronous round applies "
                    "m gradients taken at the same w: one step of mη along their mean."),
            (1 / (m * L), "Gradient descent on a quadratic is stable up to 2/L, not 1/L: the "
                          "step may overshoot the minimum along the steepest direction, as long "
                          "as it comes back closer."),
            (2 * m / L, "m gradients at the same w make the round's step *larger*, mη: divide "
                        "by m."),
            (2 / (m * np.linalg.eigvalsh(gram).max()), "L is the curvature of the *mean* "
                                                       "squared error: the eigenvalue of XᵀX/n, "
                                                       "not of XᵀX."),
            (2 / (m * eig.min()), "The *largest* eigenvalue limits the step: along the "
                                  "steepest direction the step overshoots first."),
            (2 / (m * np.trace(gram / n)), "The trace sums all eigenvalues; only the largest "
                                           "one limits the step."),
            (2 / (m * np.abs(X).max() ** 2), "The largest entry of X is not the curvature: use "
                                             "the largest eigenvalue of XᵀX/n."),
        ]
        got = call_refusing(STEP, step_limit, {sync_step_limit_model: "the library's model",
                                               curvature: "the library's curvature"}, X.copy(), m,
                            why="Compute L from X and combine it with what a round does.")
        refuse_unless_close(STEP, f"for X of shape {X.shape} and m = {m}:", got,
                            sync_step_limit_model(X, m), misreadings,
                            "A round is one step of mη along the mean gradient; gradient descent "
                            "is stable for steps below 2/L, L = λ_max(XᵀX/n).",
                            rel_tol=1e-6)
    passed(STEP, "the model's limit on four data sets and worker counts")


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
