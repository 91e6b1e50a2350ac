"""The lesson 06 checks accept correct solutions written several ways and reject each way the
definitions can be misread, each with a message naming the exercise, the case and what was
wrong."""

import math

import numpy as np
import pytest

from mlpar.algorithms.distributed import house_prices, parameter_server
from mlpar.cluster.cost_model import CostModel
from mlpar.exercises import GRADING_SEED_VARIABLE
from mlpar.exercises import l06_parameter_server as ex


def predict_ratio(m):
    return (1 + sum(1 / k for k in range(1, m + 1))) / 2


def other_predict_ratio(m):
    from fractions import Fraction

    h = sum(Fraction(1, k) for k in range(1, m + 1))
    return float((1 + h) / 2)


def delay_step(lr, delay):
    return lr / (1 + delay)


def other_delay_step(lr, delay):
    d = np.asarray(delay, dtype=float)
    out = lr * np.reciprocal(d + 1.0)
    return out if d.ndim else float(out)


def replay(X_shards, y_shards, workers, pulled, rows, lr):
    versions = [np.zeros(X_shards[0].shape[1])]
    for i, v, r in zip(workers, pulled, rows, strict=True):
        Xb, yb = X_shards[i][r], y_shards[i][r]
        versions.append(versions[-1] - lr * Xb.T @ (Xb @ versions[v] - yb) / len(r))
    return versions[-1]


def other_replay(X_shards, y_shards, workers, pulled, rows, lr):
    history = np.zeros((len(workers) + 1, X_shards[0].shape[1]))
    for k in range(len(workers)):
        Xb, yb = X_shards[workers[k]][rows[k]], y_shards[workers[k]][rows[k]]
        g = np.mean((Xb @ history[pulled[k]] - yb)[:, None] * Xb, axis=0)
        history[k + 1] = history[k] - lr * g
    return history[-1]


def test_solutions_pass(capsys):
    for predict in (predict_ratio, other_predict_ratio):
        ex.check_ratio(predict)
    for step in (delay_step, other_delay_step):
        ex.check_delay_step(step)
    for rebuild in (replay, other_replay):
        ex.check_replay(rebuild)
    assert capsys.readouterr().out.count("passed") == 6


def test_the_grading_seed_changes_the_cases_and_correct_answers_still_pass(monkeypatch, capsys):
    monkeypatch.setenv(GRADING_SEED_VARIABLE, "5")
    ex.check_delay_step(delay_step)
    ex.check_replay(replay)
    assert capsys.readouterr().out.count("passed") == 2


def _harmonic(m):
    return sum(1 / k for k in range(1, m + 1))


WRONG_RATIOS = {
    "H_m alone": (lambda m: _harmonic(m), "extra* time"),
    "the round alone, 1 + H_m": (lambda m: 1 + _harmonic(m), "round alone"),
    "H_m / 2": (lambda m: _harmonic(m) / 2, "not H_m"),
    "ln m for H_m": (lambda m: (1 + math.log(m)) / 2, "approximates"),
    "H_{m-1}": (lambda m: (1 + _harmonic(m - 1)) / 2, "leaves one worker out"),
    "sum of hiccups": (lambda m: (1 + m) / 2, "largest one"),
    "divided by m": (lambda m: (1 + _harmonic(m)) / (2 * m), "do not divide by m"),
    "a constant (H_8's 1.86)": (lambda m: 1.86, "waits for the largest"),
    "returns None": (lambda m: None, "forget to `return`"),
    "returns a list": (lambda m: [1.0], "Return one number"),
}


@pytest.mark.parametrize("case", WRONG_RATIOS)
def test_wrong_ratios_are_refused_with_the_reason(case):
    wrong, reason = WRONG_RATIOS[case]
    with pytest.raises(AssertionError, match="Exercise 1") as err:
        ex.check_ratio(wrong)
    assert reason in str(err.value)


@pytest.fixture(scope="module")
def runs():
    X, y = house_prices.load()
    cost = CostModel(alpha=20e-6, beta=1e-9, per_sample=5e-6, jitter=1.0, seed=0)
    common = dict(n_workers=8, n_updates=240, lr=0.05, batch_size=32, cost=cost)
    return (parameter_server.train(X, y, mode="sync", **common),
            parameter_server.train(X, y, mode="async", **common))


def test_the_simulated_ratio_is_reported_not_graded(runs, capsys):
    ex.check_ratio(predict_ratio, measured=runs)
    out = capsys.readouterr().out
    assert "✓ Exercise 1" in out and "m = 8: measured sync ÷ async" in out
    assert f"your prediction {predict_ratio(8):.3g}" in out
    ratio = runs[0].times[-1] / runs[1].times[-1]
    assert f"{ratio:.3g}" in out
    with pytest.raises(TypeError, match="measured"):
        ex.check_ratio(predict_ratio, measured=1.8)
    with pytest.raises(ValueError, match="same workers"):
        ex.check_ratio(predict_ratio, measured=(runs[0], runs[0].__class__(
            **{**runs[1].__dict__, "workers": runs[1].workers[:10]})))


@pytest.mark.parametrize("ratio, says", [(1.0, "within 10%"), (0.8, "Below the model"),
                                         (1.3, "Above the model")])
def test_the_report_explains_the_direction(runs, ratio, says):
    # The report's wording depends only on measured/predicted: scale the prediction.
    actual = runs[0].times[-1] / runs[1].times[-1]
    text = ex.compare_ratio(lambda m: actual / ratio, runs)
    assert says in text


WRONG_STEPS = {
    "not scaled": (lambda lr, d: lr + 0 * np.asarray(d), "not scaled"),
    "grows with the delay": (lambda lr, d: lr * (1 + d), "*smallest*"),
    "squared": (lambda lr, d: lr / (1 + d) ** 2, "not by its square"),
    "max(delay, 1)": (lambda lr, d: lr / np.maximum(d, 1), "a fresh gradient"),
    "off by one": (lambda lr, d: lr / (2 + d), "Off by one"),
    "divided by the delay": (lambda lr, d: lr / d, "Divide by 1 + delay"),
    "exponential decay": (lambda lr, d: lr * np.exp(-np.asarray(d, dtype=float)), "lr / (1 + delay)"),
    "one number for an array": (lambda lr, d: lr / (1 + np.mean(d)), "one step per delay"),
    "returns None": (lambda lr, d: None, "forget to `return`"),
}


@pytest.mark.parametrize("case", WRONG_STEPS)
def test_wrong_steps_are_refused_with_the_reason(case):
    wrong, reason = WRONG_STEPS[case]
    with pytest.raises(AssertionError, match="Exercise 2") as err:
        ex.check_delay_step(wrong)
    assert reason in str(err.value)


def test_a_step_right_on_the_listed_delays_but_not_in_the_run_is_refused():
    def memorised(lr, d):
        if np.ndim(d) or d in (7, 0, 2):
            return lr / (1 + np.asarray(d)) if np.ndim(d) else lr / (1 + d)
        return lr

    with pytest.raises(AssertionError, match="weights of an asynchronous run"):
        ex.check_delay_step(memorised)


WRONG_REPLAYS = {
    "staleness ignored": lambda Xs, ys, ws, ps, rs, lr: replay(Xs, ys, ws, range(len(ws)), rs, lr),
    "version off by one": lambda Xs, ys, ws, ps, rs, lr: replay(Xs, ys, ws, np.maximum(ps - 1, 0), rs, lr),
    "sum, not mean (missing 1/b)": lambda Xs, ys, ws, ps, rs, lr: replay(Xs, ys, ws, ps, rs, lr * len(rs[0])),
    "wrong shard": lambda Xs, ys, ws, ps, rs, lr: replay(Xs, ys, (ws + 1) % len(Xs), ps, rs, lr),
    "returns None": lambda Xs, ys, ws, ps, rs, lr: None,
    "NaN": lambda Xs, ys, ws, ps, rs, lr: replay(Xs, ys, ws, ps, rs, lr) * np.nan,
    "raises": lambda Xs, ys, ws, ps, rs, lr: Xs[99],
}


@pytest.mark.parametrize("case", WRONG_REPLAYS)
def test_wrong_replays_are_rejected(case):
    with pytest.raises(AssertionError, match="Exercise 3") as info:
        ex.check_replay(WRONG_REPLAYS[case])
    assert "weights" in str(info.value) or "raised" in str(info.value)


CHECKS = [ex.check_ratio, ex.check_delay_step, ex.check_replay]


def _unfinished(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("answer, match", [
    (lambda *a: [1.0, 2.0], "Exercise"),
    (lambda *a: np.zeros((2, 3)), "Exercise"),
    (lambda *a: float("nan"), "Exercise"),
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    (_unfinished, "not done yet"),
    (None, "expected a function"),
])
def test_checks_never_crash(check, answer, match):
    with pytest.raises(AssertionError, match=match) as err:
        check(answer)
    assert str(err.value).startswith("Exercise ")


# --- Each exercise graded on its own (issue 25 item 3) -------------------------------------

RIGHT = {ex.check_ratio: predict_ratio, ex.check_delay_step: delay_step,
         ex.check_replay: replay}
WRONG = {ex.check_ratio: WRONG_RATIOS["H_m alone"][0],
         ex.check_delay_step: WRONG_STEPS["off by one"][0],
         ex.check_replay: WRONG_REPLAYS["staleness ignored"]}


@pytest.mark.parametrize("wrong_one", CHECKS, ids=lambda c: c.__name__)
def test_one_exercise_wrong_fails_exactly_that_check(wrong_one, capsys, graded_alone):
    failed = graded_alone({check: (check, RIGHT[check], WRONG[check]) for check in CHECKS}, wrong_one)
    assert list(failed) == [wrong_one]
    assert capsys.readouterr().out.count("passed") == len(CHECKS) - 1
