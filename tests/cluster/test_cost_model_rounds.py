"""Calibration timed the way a round runs: each repeat's slowest worker, and echoes sent after
the server's idle wait (lesson 05's model missed by 1.24–1.71× on 2 cores without both)."""

import itertools

import numpy as np
import pytest

from mlpar.cluster import cost_model, tasks


class ScriptedEngine:
    """Answers ``timed_once`` tasks from a script of seconds per (repeat, worker); echoes at once."""

    def __init__(self, n_workers, seconds):
        self.n_workers = n_workers
        self.seconds = iter(seconds)  # one list of per-worker seconds per repeat

    def put(self, worker, value):
        return value

    def submit(self, worker, func, *args, **_):
        return func, worker, args

    def gather(self, jobs):
        if jobs and jobs[0][0] is tasks.timed_once:
            return list(next(self.seconds))
        return [args[0] for func, _, args in jobs]


def test_compute_is_the_median_of_each_repeats_slowest_worker():
    X, y = np.ones((10, 2)), np.ones(10)
    # The workers take turns being slow: each one's median is 2 s, every round waits 3 s.
    turns = itertools.cycle([[1.0, 3.0], [3.0, 1.0]])
    per_sample = cost_model.measure_compute(ScriptedEngine(2, turns), X, y, repeat=6)
    assert per_sample == pytest.approx(3.0 / 5)


def test_calibration_echoes_wait_as_long_as_a_workers_compute(monkeypatch):
    waits = []
    monkeypatch.setattr(cost_model.time, "sleep", waits.append)
    X, y = np.ones((1000, 2)), np.ones(1000)
    engine = ScriptedEngine(2, itertools.repeat([0.002, 0.004]))  # 500 rows each
    cost_model.calibrate(engine, X, y, repeat=3)
    assert waits and all(w == pytest.approx(0.004) for w in waits)
    # A compute longer than MAX_PAUSE is not waited out in full.
    waits.clear()
    cost_model.calibrate(ScriptedEngine(2, itertools.repeat([5.0, 5.0])), X, y, repeat=3)
    assert waits and all(w == cost_model.MAX_PAUSE for w in waits)
    # A compute shorter than MIN_PAUSE (a minibatch) keeps the server awake: no wait.
    waits.clear()
    cost_model.calibrate(ScriptedEngine(2, itertools.repeat([1e-5, 1e-5])), X, y, repeat=3)
    assert waits == []
    # Back-to-back echoes unless asked: measure_links on its own does not wait.
    waits.clear()
    cost_model.measure_links(ScriptedEngine(2, []), repeat=3)
    assert waits == []
    with pytest.raises(ValueError, match="pause"):
        cost_model.measure_links(ScriptedEngine(2, []), repeat=3, pause=-1)
