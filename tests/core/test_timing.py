import time

import matplotlib
import numpy as np
import pytest
from numba import njit

from mlpar.core import timing

matplotlib.use("Agg")


def test_measure_reports_rates_and_samples():
    x = np.ones(1000)
    t = timing.measure(np.sum, x, name="sum", repeat=4, nbytes=x.nbytes, flops=x.size)
    assert t.name == "sum" and len(t.times) == 4
    assert 0 < t.best <= t.median
    assert t.gbps == pytest.approx(x.nbytes / t.best / 1e9)
    assert t.gflops == pytest.approx(x.size / t.best / 1e9)
    assert not t.compiled and t.compile_time is None
    assert "sum: best" in repr(t)


def test_measure_separates_jit_compilation():
    @njit
    def add_one(a):
        return a + 1.0

    t = timing.measure(add_one, 1.0)
    assert t.compiled
    # The first call compiled the function, so it took far longer than a warm call.
    assert t.first_call > 100 * t.best
    assert t.compile_time == pytest.approx(t.first_call - t.best)


def test_each_sample_lasts_at_least_min_sample_time():
    calls = []

    def tiny():
        calls.append(1)

    t = timing.measure(tiny, repeat=3, min_sample_time=1e-3)
    # many calls per sample, so the per-call time is far below the sample length
    assert len(calls) > 10 and t.best < 1e-3


def test_measure_sleep_is_roughly_right():
    t = timing.measure(time.sleep, 0.002, repeat=2)
    # sleep never returns early (the contract); how late it wakes depends on the host's load,
    # so the upper bound only checks that the figure is in seconds, not milliseconds
    assert 0.0019 < t.best < 1.0


def test_compare_speedup_and_repr():
    slow = timing.Timing("slow", (2.0, 2.2), 2.0)
    fast = timing.Timing("fast", (0.5, 0.6), 0.5, nbytes=10**9)
    table = timing.compare([slow, fast])
    assert table.baseline == "slow"
    assert table.speedup("fast") == 4.0
    assert table.fastest is fast
    text = repr(table)
    assert "fast" in text and "4×" in text and "2.00" in text  # 2.00 GB/s
    assert table.rows()[1]["speedup"] == 4.0
    ax = table.plot()
    assert len(ax.patches) == 2
    table.plot(metric="gbps")


def test_format_seconds():
    assert timing.format_seconds(1.5) == "1.5 s"
    assert timing.format_seconds(0.0123) == "12.3 ms"
    assert timing.format_seconds(4.56e-6) == "4.56 µs"
    assert timing.format_seconds(7e-9) == "7 ns"


def test_bad_input():
    with pytest.raises(TypeError, match="func: expected a function"):
        timing.measure(3)
    with pytest.raises(ValueError, match="repeat: expected a positive integer, got 0"):
        timing.measure(len, [], repeat=0)
    with pytest.raises(ValueError, match="nbytes: expected an integer >= 0"):
        timing.measure(len, [], nbytes=-1)
    with pytest.raises(ValueError, match="timings: expected at least one"):
        timing.compare([])
    with pytest.raises(TypeError, match=r"timings\[0\]: expected a Timing"):
        timing.compare([1.0])
    t = timing.Timing("a", (1.0,), 1.0)
    with pytest.raises(ValueError, match="baseline: expected one of 'a'"):
        timing.compare([t], baseline="b")
    with pytest.raises(ValueError, match="distinct names"):
        timing.compare([t, t])
    with pytest.raises(ValueError, match="metric"):
        timing.compare([t]).plot(metric="speed")


def test_best_of_keeps_the_fastest_call_and_syncs(monkeypatch):
    # a fake clock that only the timed calls advance, so a busy machine cannot change the result
    clock = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    durations = iter([0.004, 0.001, 0.003])
    synced = []

    def call():
        clock[0] += next(durations)

    best = timing.best_of(call, repeat=3, sync=lambda: synced.append(1))
    monkeypatch.undo()
    assert best == pytest.approx(0.001)
    assert len(synced) == 6  # before and after each call
    with pytest.raises(ValueError, match="repeat: expected a positive integer"):
        timing.best_of(lambda: None, repeat=0)
