import pytest

from mlpar.claims import l02_linear_algebra as l02
from mlpar.core import environment
from mlpar.cpu import stream


def test_past_cache_size_spans_four_typical_caches(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "llc=32MiB,memory=16GiB")
    m = l02.past_cache_size()
    assert m & (m - 1) == 0
    assert 8 * m * m >= stream.CACHE_MULTIPLE * stream.last_level_cache()
    assert 8 * (m // 2) ** 2 < stream.CACHE_MULTIPLE * stream.last_level_cache()


def test_conflict_claim_reads_the_three_rates():
    held = l02.conflict_misses_slow_ijk(rates={511: 2.0, 512: 0.5, 513: 2.0})
    broken = l02.conflict_misses_slow_ijk(rates={511: 2.0, 512: 1.9, 513: 2.0})
    assert held.held is True and broken.held is False and held.value == 0.25


def test_loop_order_claim_measures_a_ratio():
    c = l02.loop_order_matters(quick=True)
    assert c.lesson == "02" and c.value > 0 and c.comparison == ">=" and c.threshold == 3


def test_lesson_02_registers_six_claims():
    assert len(l02.CLAIMS) == 6 and all(callable(f) for f in l02.CLAIMS)


def test_chain_claim_reads_the_four_rates():
    keys = l02.CHAIN_KEYS
    held = l02.ijk_is_bound_by_its_chain(rates=dict(zip(keys, (4.4, 4.2, 25.0, 22.0))))
    broken = l02.ijk_is_bound_by_its_chain(rates=dict(zip(keys, (4.4, 20.0, 22.0, 22.0))))
    assert held.held is True and held.value == pytest.approx(25.0 / 4.2)
    assert broken.held is False and broken.why_not
    with pytest.raises(TypeError, match="rates"):
        l02.ijk_is_bound_by_its_chain(rates={600: 1.0})


def test_claims_needing_two_cores_read_n_a_on_one(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    claim = l02.blas_threads_speed_up_matmul()
    assert claim.held is None and "2 usable cores" in repr(claim)


def _blas_table(one, every):
    from mlpar.core import timing

    return timing.compare([timing.Timing("BLAS, 1 thread(s)", tuple(one), 0.0),
                           timing.Timing("BLAS, 2 thread(s)", tuple(every), 0.0)])


def test_blas_claim_reads_interleaved_rounds_and_can_fail(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(l02.mm, "blas_threads", lambda: 2)
    held = l02.blas_threads_speed_up_matmul(table=_blas_table((2.0, 2.1, 2.4), (1.0, 1.2, 1.05)))
    assert held.held is True and held.value == pytest.approx(2.0)
    assert "3 interleaved rounds" in held.statement and "1.75-2.29" in held.statement
    broken = l02.blas_threads_speed_up_matmul(table=_blas_table((2.0, 2.0), (1.6, 1.5)))
    assert broken.held is False and broken.why_not


def test_blas_threads_are_timed_in_interleaved_rounds():
    table = l02.mm.measure_blas_threads(32, (1, 2), repeat=3)
    assert [len(t.times) for t in table.timings] == [3, 3]


def test_loop_order_claim_reuses_the_chain_measurement():
    keys = l02.CHAIN_KEYS  # ijk, ijk on Bᵀ, fastmath, ikj
    held = l02.loop_order_matters(rates=dict(zip(keys, (4.0, 4.2, 25.0, 22.0), strict=True)))
    assert held.held is True and held.value == pytest.approx(5.5)
    assert f"n = {l02.LOOP_ORDER_N}" in held.statement
    close = l02.loop_order_matters(rates=dict(zip(keys, (10.0, 10.0, 25.0, 22.0), strict=True)))
    assert close.held is False  # 2.2× is short of 3×
    with pytest.raises(TypeError, match="rates"):
        l02.loop_order_matters(rates={600: 1.0})
