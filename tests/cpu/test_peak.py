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


AVX512_VM = ("model name\t: AMD EPYC Processor\nflags\t\t: fpu sse2 avx avx2 fma avx512f\n"
             "cpu MHz\t\t: 2596.000\nsiblings\t: 2\ncpu cores\t: 2\n")


def test_the_lanes_are_those_of_the_kernels_blas_runs():
    # OpenBLAS runs its Haswell (AVX2) kernels on this AVX-512 CPU: 4 lanes, not 8
    spec = peak.parse_cpu_spec(AVX512_VM, usable_cores=2, blas_kernel="Haswell")
    assert spec.lanes == 4 and spec.blas_kernel == "Haswell"
    assert "AVX2; the CPU has AVX-512" in str(spec) and "Haswell kernels" in str(spec)
    wide = peak.parse_cpu_spec(AVX512_VM, usable_cores=2, blas_kernel="SkylakeX")
    unknown = peak.parse_cpu_spec(AVX512_VM, usable_cores=2, blas_kernel="SomethingNew")
    assert wide.lanes == unknown.lanes == 8 and not wide.blas_kernel


def test_a_nominal_clock_is_not_an_upper_bound_and_says_so():
    spec = peak.parse_cpu_spec(AVX512_VM, usable_cores=2, blas_kernel="Haswell")
    assert not spec.upper_bound and str(spec).startswith("nominal spec peak")
    assert "not an upper bound" in str(spec)
    # a one-thread dgemm at 52.2 GFLOP/s on 16 flops per cycle needs at least 3.26 GHz
    assert spec.implied_ghz(52.2, cores=1) == pytest.approx(52.2 / 16)
    maximum = peak.parse_cpu_spec("flags : avx fma\n", "CPU max MHz: 3900.0\n", usable_cores=1)
    assert maximum.upper_bound and str(maximum).startswith("spec peak")
    with pytest.raises(ValueError, match="gflops"):
        spec.implied_ghz(-1.0)


def test_the_kernel_is_numpy_blas_own_where_scipy_loaded_another():
    scipy_pool = {"user_api": "blas", "architecture": "SkylakeX",
                  "filepath": "/site-packages/scipy.libs/libscipy_openblas.so"}
    numpy_pool = {"user_api": "blas", "architecture": "Haswell",
                  "filepath": "/site-packages/numpy.libs/libscipy_openblas64_.so"}
    omp = {"user_api": "openmp", "filepath": "/x/libgomp.so"}
    assert peak.kernel_of_numpy_blas([omp, scipy_pool, numpy_pool]) == "Haswell"
    assert peak.kernel_of_numpy_blas([scipy_pool]) == "SkylakeX"  # no numpy path: the first
    assert peak.kernel_of_numpy_blas([omp, {"user_api": "blas"}]) == ""  # none reports one
    with pytest.raises(TypeError, match="pools"):
        peak.kernel_of_numpy_blas(None)
