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


def test_lesson_02_registers_five_claims():
    assert len(l02.CLAIMS) == 5 and all(callable(f) for f in l02.CLAIMS)


def test_claims_needing_two_cores_read_n_a_on_one(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    claim = l02.blas_threads_speed_up_matmul()
    assert claim.held is None and "2 usable cores" in repr(claim)
