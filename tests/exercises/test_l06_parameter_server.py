"""The lesson 06 checks accept correct solutions written several ways and reject a catalogue of
plausible wrong ones, each with a message naming the exercise, the case and what was wrong."""

import numpy as np
import pytest

from mlpar.exercises import l06_parameter_server as ex


def may_pull(clocks, worker, s):
    return clocks[worker] - clocks.min() <= s


def other_may_pull(clocks, worker, s):
    return bool(np.all(clocks[worker] - np.asarray(clocks) <= s))


def time_to_loss(times, losses, target):
    hit = np.flatnonzero(losses <= target)
    return times[hit[0]] if hit.size else np.inf


def other_time_to_loss(times, losses, target):
    for t, f in zip(times, losses, strict=True):
        if f <= target:
            return float(t)
    return float("inf")


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
    for gate in (may_pull, other_may_pull):
        ex.check_may_pull(gate)
    for first in (time_to_loss, other_time_to_loss):
        ex.check_time_to_loss(first)
    for rebuild in (replay, other_replay):
        ex.check_replay(rebuild)
    assert capsys.readouterr().out.count("passed") == 6


WRONG_GATES = {
    "strict inequality (off by one)": (lambda c, w, s: c[w] - c.min() < s, "slowest"),
    "everybody within s of everybody": (lambda c, w, s: c.max() - c.min() <= s, "slowest"),
    "own clock against s": (lambda c, w, s: c[w] <= s, "slowest"),
    "staleness ignored (always yes)": (lambda c, w, s: True, "slowest"),
    "against the fastest worker": (lambda c, w, s: c.max() - c[w] <= s, "slowest"),
    "returns a number": (lambda c, w, s: s - (c[w] - c.min()), "expected True or False"),
    "returns None": (lambda c, w, s: None, "forget to `return`"),
    "raises": (lambda c, w, s: c[w + 10], "raised IndexError"),
}


@pytest.mark.parametrize("case", WRONG_GATES)
def test_wrong_gates_are_rejected(case):
    wrong, message = WRONG_GATES[case]
    with pytest.raises(AssertionError, match="Exercise 1") as info:
        ex.check_may_pull(wrong)
    assert message in str(info.value)


def test_a_gate_that_is_right_on_the_cases_but_not_in_the_run_is_rejected():
    # Correct on every listed case, wrong when the worker asking is the only one at the minimum
    # and s = 0 after a round: it lets the run diverge from SSP.
    cases = {(tuple(c), w, s) for c, w, s, _ in ex._GATE_CASES}

    def memorised(clocks, worker, s):
        if (tuple(int(v) for v in clocks), worker, s) in cases:
            return clocks[worker] - clocks.min() <= s
        return True

    with pytest.raises(AssertionError, match="in an SSP run with s = 0"):
        ex.check_may_pull(memorised)


WRONG_TIMES = {
    "last crossing": lambda t, f, target: (t[np.flatnonzero(f <= target)[-1]]
                                           if np.any(f <= target) else np.inf),
    "index, not time": lambda t, f, target: np.argmax(f <= target) if np.any(f <= target) else np.inf,
    "strictly below": lambda t, f, target: time_to_loss(t, f, target - 1e-9),
    "closest loss": lambda t, f, target: t[np.argmin(np.abs(f - target))],
    "None when never reached": lambda t, f, target: (time_to_loss(t, f, target)
                                                     if np.any(f <= target) else None),
    "a list": lambda t, f, target: [0.0],
    "raises": lambda t, f, target: t[99],
}


@pytest.mark.parametrize("case", WRONG_TIMES)
def test_wrong_times_are_rejected(case):
    with pytest.raises(AssertionError, match="Exercise 2") as info:
        ex.check_time_to_loss(WRONG_TIMES[case])
    assert "target" in str(info.value) or "raised" in str(info.value)


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


def test_unfinished_placeholder_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_may_pull, ex.check_time_to_loss, ex.check_replay):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)
