"""Lesson 01's thread claims judged on tables fed to them: they can hold, fail and not apply."""

import pytest

from mlpar.claims import l01_loops_to_threads as l01
from mlpar.core import environment
from mlpar.core.timing import Timing


def _table(product, horner, triad=None):
    """{(kernel, threads): Timing} with one time per round for 1 and 2 threads."""
    n = 1 << 16
    found = {}
    for kernel, times in (("product", product), ("horner", horner), ("triad", triad)):
        if times is None:
            continue
        for k, samples in zip((1, 2), times, strict=True):
            found[kernel, k] = Timing(f"{kernel}{k}", tuple(samples), 0.0, nbytes=32 * n)
    return found


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2,llc=1MiB,memory=16GiB")


def test_memory_claim_holds_where_one_thread_nearly_saturates_memory(two_cores):
    table = _table(product=((1.0, 1.02, 1.05), (0.9, 0.88, 0.95)),
                   horner=((2.0, 2.0, 2.1), (1.0, 1.01, 1.02)),
                   triad=((1.0, 1.0, 1.0), (0.9, 0.9, 0.92)))  # one thread: 90% of the roof
    claim = l01.memory_bound_work_gains_less(True, scaling=table)
    assert claim.held is True
    assert claim.value == pytest.approx((1.0 / 0.88) / (2.0 / 1.0))
    assert "3 interleaved rounds" in claim.statement  # the spread of single rounds is printed


def test_memory_claim_can_fail(two_cores):
    table = _table(product=((2.0,), (1.05,)), horner=((2.0,), (1.0,)),
                   triad=((1.0,), (0.9,)))  # memory saturated, yet the product doubled
    claim = l01.memory_bound_work_gains_less(True, scaling=table)
    assert claim.held is False and claim.why_not


def test_memory_claim_does_not_apply_where_one_thread_leaves_bandwidth_unused(two_cores):
    table = _table(product=((2.0,), (1.05,)), horner=((2.0,), (1.0,)),
                   triad=((2.0,), (1.1,)))  # one thread streams 55% of the two-thread roof
    claim = l01.memory_bound_work_gains_less(True, scaling=table)
    assert claim.held is None
    assert "one thread streams only 55%" in claim.not_applicable
    assert "follows its roof" in claim.not_applicable


def test_memory_claim_does_not_apply_when_horner_did_not_scale(two_cores):
    table = _table(product=((1.0,), (1.5,)), horner=((2.0,), (2.1,)),
                   triad=((1.0,), (0.95,)))  # a busy machine: nothing gained from threads
    claim = l01.memory_bound_work_gains_less(True, scaling=table)
    assert claim.held is None and "horner gained only 0.95×" in claim.not_applicable


def test_compute_claim_needs_horner_to_scale(two_cores):
    good = _table(product=((1.0,), (1.0,)), horner=((2.0,), (1.05,)))
    bad = _table(product=((1.0,), (1.0,)), horner=((2.0,), (1.6,)))
    assert l01.threads_speed_up_compute_bound_work(True, scaling=good).held is True
    assert l01.threads_speed_up_compute_bound_work(True, scaling=bad).held is False


def test_memory_claim_holds_for_a_product_that_follows_its_roof_at_the_edge(two_cores):
    # The weakest case where the claim applies: one thread streams exactly 80% of the roof and
    # the product rises exactly as the roof does (1.25×); horner just over HORNER_GAIN.
    follows = _table(product=((1.0,), (0.8,)), horner=((1.6,), (1.0,)), triad=((1.0,), (0.8,)))
    assert l01.memory_bound_work_gains_less(True, scaling=follows).held is True
    # horner at 1.52× would have judged that same product ✗ (1.25 / 1.52 > 0.8): n/a instead
    weak = _table(product=((1.0,), (0.8,)), horner=((1.52,), (1.0,)), triad=((1.0,), (0.8,)))
    claim = l01.memory_bound_work_gains_less(True, scaling=weak)
    assert claim.held is None and "needs >= 1.56×" in claim.not_applicable
