from mlpar.claims import l02_linear_algebra as l02
from mlpar.cpu import stream


def test_past_cache_size_spans_four_caches():
    m = l02.past_cache_size()
    assert m & (m - 1) == 0
    assert 8 * m * m >= stream.CACHE_MULTIPLE * stream.last_level_cache()
    assert 8 * (m // 2) ** 2 < stream.CACHE_MULTIPLE * stream.last_level_cache()


def test_loop_order_claim_measures_a_ratio():
    c = l02.loop_order_matters(quick=True)
    assert c.lesson == "02" and c.value > 0 and c.comparison == ">=" and c.threshold == 3


def test_lesson_02_registers_four_claims():
    assert len(l02.CLAIMS) == 4 and all(callable(f) for f in l02.CLAIMS)
