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


def sync_step_limit(X, m):
    return 2 / (m * np.linalg.eigvalsh(X.T @ X / len(X)).max())


def other_sync_step_limit(X, m):
    # the largest singular value of X, squared, is n·L: a right answer written another way
    return 2 * len(X) / (m * np.linalg.norm(X, 2) ** 2)


def power_iteration_step_limit(X, m):
    A = X.T @ X / X.shape[0]
    v = np.ones(A.shape[0])
    for _ in range(500):
        v = A @ v
        v /= np.linalg.norm(v)
    return 2.0 / m / float(v @ A @ v)


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
    for limit in (sync_step_limit, other_sync_step_limit, power_iteration_step_limit):
        ex.check_sync_step_limit(limit)
    for rebuild in (replay, other_replay):
        ex.check_replay(rebuild)
    assert capsys.readouterr().out.count("passed") == 7


def test_the_grading_seed_changes_the_cases_and_correct_answers_still_pass(monkeypatch, capsys):
    monkeypatch.setenv(GRADING_SEED_VARIABLE, "5")
    ex.check_sync_step_limit(sync_step_limit)
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


def _L(X):
    return np.linalg.eigvalsh(X.T @ X / len(X)).max()


WRONG_STEPS = {
    "plain GD's 2/L": (lambda X, m: 2 / _L(X), "one step of mη"),
    "1/(mL)": (lambda X, m: 1 / (m * _L(X)), "not 1/L"),
    "times m": (lambda X, m: 2 * m / _L(X), "divide by m"),
    "XᵀX without 1/n": (lambda X, m: 2 / (m * np.linalg.eigvalsh(X.T @ X).max()), "not of XᵀX"),
    "smallest eigenvalue": (lambda X, m: 2 / (m * np.linalg.eigvalsh(X.T @ X / len(X)).min()),
                            "*largest* eigenvalue"),
    "trace": (lambda X, m: 2 / (m * np.trace(X.T @ X / len(X))), "trace"),
    "largest entry": (lambda X, m: 2 / (m * np.abs(X).max() ** 2), "largest entry"),
    "a constant (this lesson's m = 8)": (lambda X, m: 0.1354, "expected"),
    "returns None": (lambda X, m: None, "forget to `return`"),
    "the library's model": (lambda X, m: ex.sync_step_limit_model(X, m), "library's"),
    "the library's curvature": (lambda X, m: 2 / (m * ex.curvature(X)), "library's"),
    "the library's model, renamed": (lambda X, m: (lambda f: f(X, m))(
        getattr(ex, "sync_step" + "_limit_model")), "library's"),
    "the library's model, run on a thread": (lambda X, m: _on_a_thread(ex.sync_step_limit_model, X, m),
                                             "library's"),
}


def _on_a_thread(func, *args):
    """``func(*args)`` run by a thread started here: the check must still see the call."""
    import threading

    out = []
    worker = threading.Thread(target=lambda: out.append(func(*args)))
    worker.start()
    worker.join()
    return out[0]


@pytest.mark.parametrize("case", WRONG_STEPS)
def test_wrong_step_limits_are_refused_with_the_reason(case):
    wrong, reason = WRONG_STEPS[case]
    with pytest.raises(AssertionError, match="Exercise 2") as err:
        ex.check_sync_step_limit(wrong)
    assert reason in str(err.value)


def test_the_library_ratio_model_is_refused_by_name():
    alias = ex.sync_async_ratio_model
    for answer in (lambda m: alias(m), lambda m: (1 + ex.harmonic(m)) / 2):
        with pytest.raises(AssertionError, match="library's (model|harmonic number) \\(mlpar\\.exercises"):
            ex.check_ratio(answer)


def test_the_model_limit_is_what_the_synchronous_server_does():
    # The graded model is the lesson's claim about the server: just below it the synchronous
    # server converges, just above it diverges (8 workers, the lesson's data and minibatches).
    X, y = house_prices.load()
    limit = ex.sync_step_limit_model(X, 8)
    cost = CostModel(alpha=20e-6, beta=1e-9, per_sample=5e-6, jitter=1.0, seed=0)
    run = dict(mode="sync", n_workers=8, n_updates=800, batch_size=32, cost=cost, seed=0)
    parameter_server.train(X, y, lr=0.9 * limit, **run)
    with pytest.raises(ValueError, match="diverged"):
        parameter_server.train(X, y, lr=1.1 * limit, **run)


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


CHECKS = [ex.check_ratio, ex.check_sync_step_limit, ex.check_replay]


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

RIGHT = {ex.check_ratio: predict_ratio, ex.check_sync_step_limit: sync_step_limit,
         ex.check_replay: replay}
WRONG = {ex.check_ratio: WRONG_RATIOS["H_m alone"][0],
         ex.check_sync_step_limit: WRONG_STEPS["times m"][0],
         ex.check_replay: WRONG_REPLAYS["staleness ignored"]}


@pytest.mark.parametrize("wrong_one", CHECKS, ids=lambda c: c.__name__)
def test_one_exercise_wrong_fails_exactly_that_check(wrong_one, capsys, graded_alone):
    failed = graded_alone({check: (check, RIGHT[check], WRONG[check]) for check in CHECKS}, wrong_one)
    assert list(failed) == [wrong_one]
    assert capsys.readouterr().out.count("passed") == len(CHECKS) - 1
