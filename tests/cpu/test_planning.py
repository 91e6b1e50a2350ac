"""Lessons 01 and 02 plan their sweeps from the hardware within a time and memory budget.

The hardware is faked through ``MLPAR_HARDWARE`` (issue 27): at 128 cores and 1.2 GiB of
last-level cache, every sweep's planned bytes stay within a quarter of the free memory and its
planned time within one lesson cell's budget, and the plan says when a cap, not the cache,
set the size; the memory-bound claims then read "n/a".
"""

import math

import pytest

from mlpar.claims import l01_loops_to_threads as l01
from mlpar.claims import l02_linear_algebra as l02
from mlpar.core import environment
from mlpar.cpu import elementwise as ew
from mlpar.cpu import matmul as mm
from mlpar.cpu import stream

MACHINES = [
    "cores=128,llc=1.2GiB,memory=64GiB",    # a large server (AMD EPYC 9684X class)
    "cores=128,llc=1.2GiB,memory=4GiB",     # the same cache in a small container
    "cores=16,llc=300MiB,memory=128GiB",    # issue 27's workstation
    "cores=2,llc=480MiB,memory=8GiB",       # issue 24's virtual machine
    "cores=2,llc=32MiB,memory=16GiB",       # a typical laptop
    "cores=1,llc=1MiB,memory=2GiB",         # a tiny cache
    "cores=4,llc=unknown,memory=8GiB",      # no cache information
]


def budget():
    return stream.MEMORY_SHARE * environment.available_memory_bytes()


@pytest.fixture(params=MACHINES)
def machine(request, monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, request.param)
    return environment.hardware_override()


def test_lesson_01_streaming_arrays_fit_the_budgets(machine):
    plan = stream.plan_beyond_cache(3)
    assert plan.nbytes <= max(budget(), 3 * 8 << stream.MIN_LOG2_LENGTH)
    # the heaviest cell (the ladder and the roof, or the thread sweep) at a slow one-core rate
    assert stream.PASSES_PER_CELL * plan.nbytes / (stream.PLANNING_GBPS * 1e9) <= stream.CELL_SECONDS
    # the thread sweep visits log2(cores) + 1 counts (8 at 128 cores); each round times the
    # product and the triad (3 calls each: warm-up, calibration, sample) at every count
    counts = ew.thread_sweep(machine["cores"])
    assert len(counts) <= machine["cores"].bit_length() + 1
    assert len(counts) * ew.SCALING_REPEAT * 2 * 3 <= stream.PASSES_PER_CELL


def test_lesson_01_says_when_its_arrays_cannot_exceed_the_cache(machine):
    plan = stream.plan_beyond_cache(3)
    reason = l01.memory_precondition()
    llc = machine.get("llc")
    # the smallest power-of-two length whose three arrays span 4 caches, and its bytes
    needed = 3 * 8 * 2 ** math.ceil(math.log2(stream.CACHE_MULTIPLE * (llc or 1) / 24))
    if llc is not None and needed > min(budget(), stream.TIME_CAP_BYTES):
        assert not plan.beyond_cache and reason and "cache" in str(plan)
        claim = l01.compiled_product_reaches_the_memory_roof()
        assert claim.held is None and repr(claim).startswith("n/a [01]")
        claim = l01.memory_bound_work_gains_less(scaling={})
        assert claim.held is None and repr(claim).startswith("n/a [01]")
    else:
        assert plan.beyond_cache and plan.limited_by == "cache" and reason == ""


def test_lesson_02_blocking_sweep_fits_the_budgets(machine):
    plan = mm.plan_blocking()
    assert plan.nbytes <= max(budget(), 8 * (1 << 20) + 16 * plan.rows * 1024)
    assert plan.planned_seconds <= stream.CELL_SECONDS
    assert list(plan.sizes) == sorted(plan.sizes) and l02.past_cache_size() == plan.sizes[-1]
    llc = machine.get("llc") or stream.DEFAULT_LAST_LEVEL_CACHE
    if plan.limited_by == "cache":
        assert plan.largest_bytes >= stream.CACHE_MULTIPLE * llc and plan.shortfall == ""
    else:
        assert plan.largest_bytes < stream.CACHE_MULTIPLE * llc
        assert "capped by" in str(plan)
        claim = l02.blocking_wins_past_the_cache()
        assert claim.held is None and repr(claim).startswith("n/a [02]")


def test_at_128_cores_and_1_2_gib_the_caps_set_every_size(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=128,llc=1.2GiB,memory=64GiB")
    assert stream.plan_beyond_cache(3).limited_by == "time"
    assert mm.plan_blocking().limited_by == "time"
    assert mm.plan_blocking().largest_bytes <= 1 << 30  # not the 8 GiB a 4-cache B would take
