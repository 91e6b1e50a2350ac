import numpy as np
import pytest

from mlpar.core import environment
from mlpar.cpu import stream


def test_bytes_follow_the_write_allocate_rule():
    assert stream.bytes_moved(10, reads=2, writes=1) == 10 * 8 * 4  # product / triad: 32 B
    assert stream.bytes_moved(10, reads=1, writes=1) == 10 * 8 * 3  # copy: 24 B
    assert stream.bytes_moved(10, reads=2, writes=1, write_allocate=False) == 10 * 8 * 3
    with pytest.raises(ValueError, match="reads"):
        stream.bytes_moved(1, reads=-1, writes=1)


MiB, GiB = 1 << 20, 1 << 30


def fake(monkeypatch, text):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, text)


@pytest.mark.parametrize("llc", [1 * MiB, 32 * MiB])
def test_small_and_typical_caches_are_exceeded_four_times(monkeypatch, llc):
    fake(monkeypatch, f"cores=2,llc={llc},memory=8GiB")
    plan = stream.plan_beyond_cache(3)
    assert plan.n & (plan.n - 1) == 0 and plan.limited_by == "cache" and plan.beyond_cache
    assert plan.nbytes >= stream.CACHE_MULTIPLE * llc
    # the smallest such power of two (or the floor length): not more than asked for
    assert plan.n == 1 << stream.MIN_LOG2_LENGTH or plan.nbytes / 2 < stream.CACHE_MULTIPLE * llc
    assert plan.shortfall == "" and "set by the cache" in str(plan)
    assert stream.beyond_cache_length(3) == plan.n and stream.last_level_cache() == llc


@pytest.mark.parametrize("llc, memory", [(480 * MiB, 64 * GiB), (int(1.2 * GiB), 64 * GiB),
                                         (480 * MiB, 2 * GiB)])
def test_huge_caches_are_capped_by_a_budget_and_say_so(monkeypatch, llc, memory):
    fake(monkeypatch, f"cores=128,llc={llc},memory={memory}")
    plan = stream.plan_beyond_cache(3)
    assert plan.nbytes <= stream.MEMORY_SHARE * memory and plan.nbytes <= stream.TIME_CAP_BYTES
    assert not plan.beyond_cache and plan.limited_by == ("memory" if memory < 8 * GiB else "time")
    assert "capped by" in plan.shortfall and "not from memory" in str(plan)
    # the largest power of two within the budget that set it
    cap = plan.budget if plan.limited_by == "memory" else stream.TIME_CAP_BYTES
    assert 2 * plan.nbytes > cap


def test_an_unknown_cache_assumes_the_default_and_says_so(monkeypatch):
    fake(monkeypatch, "llc=unknown,memory=8GiB")
    plan = stream.plan_beyond_cache(3)
    assert plan.llc is None and plan.beyond_cache
    assert plan.nbytes >= stream.CACHE_MULTIPLE * stream.DEFAULT_LAST_LEVEL_CACHE
    assert "not reported" in str(plan) and stream.last_level_cache() == stream.DEFAULT_LAST_LEVEL_CACHE


def test_a_tiny_memory_budget_still_gives_a_usable_length(monkeypatch):
    fake(monkeypatch, "llc=32MiB,memory=1MiB")
    plan = stream.plan_beyond_cache(3)
    assert plan.n == 1 << stream.MIN_LOG2_LENGTH and plan.limited_by == "memory"
    with pytest.raises(ValueError, match="arrays"):
        stream.beyond_cache_length(0)


def test_the_time_cap_keeps_the_heaviest_cell_within_its_budget():
    seconds = stream.PASSES_PER_CELL * stream.TIME_CAP_BYTES / (stream.PLANNING_GBPS * 1e9)
    assert seconds <= stream.CELL_SECONDS


@pytest.mark.parametrize("kernel", sorted(stream.KERNELS))
def test_stream_kernels_give_a_rate(kernel):
    assert stream.stream_bandwidth(kernel, 1, n=1 << 16, repeat=1) > 0


def test_memory_roof_is_the_best_rate():
    roof = stream.memory_roof(n=1 << 16, repeat=1)
    assert roof.gbps == max(roof.rates.values()) and roof.best_at(1) <= roof.gbps
    assert "write-allocate counted" in repr(roof)
    with pytest.raises(ValueError, match="kernel: expected one of"):
        stream.stream_bandwidth("scale")


def test_the_roof_can_run_on_arrays_the_caller_already_holds():
    n = 1 << 12
    out, x, y = np.empty(n), np.ones(n), np.full(n, 2.0)
    roof = stream.memory_roof(repeat=1, arrays=(out, x, y))
    assert roof.n == n and roof.gbps > 0
    assert np.all(x == 1.0) and np.all(y == 2.0)  # only the first array is written
    with pytest.raises(TypeError, match="arrays: expected three"):
        stream.memory_roof(arrays=(out, x))
    with pytest.raises(ValueError, match="arrays: expected three arrays of one length"):
        stream.memory_roof(arrays=(out, x, y[:10]))
    with pytest.raises(ValueError, match="n, arrays"):
        stream.memory_roof(n=n, arrays=(out, x, y))
    x.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        stream.stream_bandwidth(arrays=(x, out, y))
