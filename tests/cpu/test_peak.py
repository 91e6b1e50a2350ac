"""The spec peak is read from faked /proc/cpuinfo and lscpu texts, never from this host."""

import pytest

from mlpar.cpu import peak

XEON = """processor\t: 0
model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz
cpu MHz\t\t: 1000.000
siblings\t: 40
cpu cores\t: 20
flags\t\t: fpu sse sse2 avx fma avx2 avx512f
"""
LSCPU = "Thread(s) per core:  2\nCPU max MHz:         3900.0000\nFlags: sse2 avx avx2 fma\n"


def test_a_xeon_from_its_cpuinfo():
    spec = peak.parse_cpu_spec(XEON, usable_cores=40)
    assert (spec.cores, spec.lanes, spec.fma_units, spec.ghz) == (20, 8, 2, 2.1)
    assert spec.gflops == pytest.approx(20 * 8 * 2 * 2 * 2.1)
    assert "model name" in str(spec) and "assumed" in str(spec)


def test_lscpu_gives_the_maximum_clock_and_smt():
    spec = peak.parse_cpu_spec("", LSCPU, usable_cores=8)
    assert (spec.cores, spec.lanes, spec.ghz) == (4, 4, 3.9)
    assert spec.gflops == pytest.approx(4 * 4 * 2 * 2 * 3.9)


def test_the_current_clock_is_the_last_resort_and_says_so():
    spec = peak.parse_cpu_spec("cpu MHz : 2596.1\nflags : sse2\n", usable_cores=2)
    assert spec.lanes == 2 and spec.fma_units == 1 and "at this moment" in str(spec)


@pytest.mark.parametrize("cpuinfo, missing", [("", "SIMD width"), ("flags : avx fma\n", "clock")])
def test_unknown_when_a_fact_cannot_be_read(cpuinfo, missing):
    spec = peak.parse_cpu_spec(cpuinfo, usable_cores=4)
    assert spec.gflops is None and missing in spec.missing and "unknown" in str(spec)


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="cpuinfo"):
        peak.parse_cpu_spec(None)
    with pytest.raises(ValueError, match="usable_cores"):
        peak.parse_cpu_spec("", usable_cores=0)
    assert peak.read_text("/nonexistent/cpuinfo") == ""
