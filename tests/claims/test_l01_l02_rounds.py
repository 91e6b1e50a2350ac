"""Lesson 01's memory-roof share and lesson 02's packed share are medians over rounds: one
round spoilt by another program moves neither verdict (the five-run table in docs/testing.md
showed each flip once when the best of a few runs counted)."""

from types import SimpleNamespace

import numpy as np
import pytest

from mlpar.claims import l01_loops_to_threads as l01
from mlpar.claims import l02_linear_algebra as l02


def _feed(values):
    """A stand-in that returns the next of ``values`` on each call."""
    values = iter(values)
    return lambda *args, **kwargs: next(values)


def test_memory_roof_share_is_the_median_of_rounds(monkeypatch):
    monkeypatch.setattr(l01, "memory_precondition", lambda: "")
    # product 10 GB/s in every round; the roof 10 GB/s, but once a lucky 14 GB/s
    products = [SimpleNamespace(gbps=10)] * 9
    roofs = [SimpleNamespace(gbps=g) for g in (10, 14, 10, 10, 10, 10, 10, 10, 10)]
    monkeypatch.setattr(l01.timing, "measure", _feed(products))
    monkeypatch.setattr(l01.stream, "memory_roof", _feed(roofs))
    arrays = (np.ones(8), np.ones(8), np.empty(8))
    claim = l01.compiled_product_reaches_the_memory_roof(arrays=arrays)
    assert claim.held is True and claim.value == pytest.approx(100)
    # at 95%, eight rounds cannot rule the 71% round's side out, nine can
    assert "median of 9 interleaved rounds, 96% interval 100–100%" in claim.statement
    # A product that is slow in most rounds is slow: the median says so, after 12 rounds.
    products = [SimpleNamespace(gbps=g) for g in (7, 7, 10, 7, 10) + (7,) * 7]
    monkeypatch.setattr(l01.timing, "measure", _feed(products))
    monkeypatch.setattr(l01.stream, "memory_roof", _feed([SimpleNamespace(gbps=10)] * 12))
    assert l01.compiled_product_reaches_the_memory_roof(arrays=arrays).held is False


def test_packed_share_is_the_median_of_rounds(monkeypatch):
    # packed 20 GFLOP/s but once 10 (BLAS's threads held a core); BLAS 50 at n, peak 50
    packed = [SimpleNamespace(gflops=g) for g in (20, 20, 10, 20, 20)]
    blas = [SimpleNamespace(gflops=50)] * 5
    measured = iter([p for pair in zip(packed, blas, strict=True) for p in pair])
    monkeypatch.setattr(l02.mm, "measure_variant", lambda *a, **k: next(measured))
    monkeypatch.setattr(l02.mm, "blas_peak", lambda *a, **k: 50.0)
    claim = l02.packed_reaches_a_share_of_the_peak()
    assert claim.held is True and claim.value == pytest.approx(40)
    assert "median of 5 rounds: 20–40%" in claim.statement
    # Figures the lesson measured are read as they are, and checked.
    assert l02.packed_reaches_a_share_of_the_peak(packed_gflops=10, peak_gflops=50,
                                                  n=400).value == pytest.approx(20)
    with pytest.raises(ValueError, match="peak_gflops"):
        l02.packed_reaches_a_share_of_the_peak(packed_gflops=10, peak_gflops=0, n=400)
