import numpy as np
import pytest

from mlpar.exercises import parameter_server as ex


def may_pull(clocks, worker, s):
    return clocks[worker] - clocks.min() <= s


def time_to_loss(times, losses, target):
    hit = np.flatnonzero(losses <= target)
    return times[hit[0]] if hit.size else np.inf


def replay(X_shards, y_shards, workers, pulled, rows, lr):
    versions = [np.zeros(X_shards[0].shape[1])]
    for i, v, r in zip(workers, pulled, rows, strict=True):
        Xb, yb = X_shards[i][r], y_shards[i][r]
        versions.append(versions[-1] - lr * Xb.T @ (Xb @ versions[v] - yb) / len(r))
    return versions[-1]


def test_solutions_pass(capsys):
    ex.check_may_pull(may_pull)
    ex.check_time_to_loss(time_to_loss)
    ex.check_replay(replay)
    assert capsys.readouterr().out.count("passed") == 3


def test_wrong_answers_fail_with_a_hint():
    with pytest.raises(AssertionError, match="slowest"):
        ex.check_may_pull(lambda c, w, s: c[w] - c.min() < s)  # off by one
    with pytest.raises(AssertionError, match="first"):
        ex.check_time_to_loss(lambda t, f, target: t[np.argmin(np.abs(f - target))])
    with pytest.raises(AssertionError, match="final weights"):
        # ignores staleness: every gradient on the newest weights
        ex.check_replay(lambda Xs, ys, ws, ps, rs, lr: replay(Xs, ys, ws, range(len(ws)), rs, lr))


def test_unfinished_placeholder_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_may_pull, ex.check_time_to_loss, ex.check_replay):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)
