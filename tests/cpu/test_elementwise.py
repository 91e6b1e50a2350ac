import platform

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.cpu import elementwise as ew

VARIANTS = [ew.product_broadcast, ew.product_scalar, ew.product_simd, ew.product_parallel]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=1, max_value=5000), seed=st.integers(0, 2**32 - 1))
def test_every_variant_equals_numpy(n, seed):
    x, y = ew.random_vectors(n, seed=seed)
    expected = np.multiply(x, y)
    assert np.array_equal(ew.product_loop(x, y), expected)
    for variant in VARIANTS:
        assert np.array_equal(variant(x, y), expected), variant.__name__
        out = np.empty(n)
        assert variant(x, y, out) is out and np.array_equal(out, expected)


def test_random_vectors_are_reproducible():
    a = ew.random_vectors(10, seed=3)
    b = ew.random_vectors(10, seed=3)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[0], ew.random_vectors(10, seed=4)[0])
    assert a[0].min() >= 0.5 and a[0].max() < 1.5


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 2000), degree=st.integers(0, 40))
def test_horner_equals_polyval(n, degree):
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, n)
    c = rng.uniform(-1, 1, degree + 1)
    np.testing.assert_allclose(ew.horner(x, c), np.polyval(c, x), rtol=1e-10, atol=1e-12)


def test_horner_flops():
    assert ew.horner_flops(10, 32) == 640
    with pytest.raises(ValueError, match="degree"):
        ew.horner_flops(10, 0)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 instruction names")
def test_scalar_build_has_no_packed_multiply_and_simd_build_has():
    assert all("mulsd" in i for i in ew.multiply_instructions("scalar"))
    assert any("mulpd" in i for i in ew.multiply_instructions("simd"))


@pytest.mark.parametrize("variant", [ew.product_loop, *VARIANTS])
def test_bad_input(variant):
    x = np.ones(4)
    with pytest.raises(ValueError, match=r"y: expected shape \(4,\) to match x, got \(5,\)"):
        variant(x, np.ones(5))
    with pytest.raises(TypeError, match="x: expected dtype float64, got float32"):
        variant(x.astype(np.float32), x)
    with pytest.raises(ValueError, match="y: expected a 1-D array"):
        variant(x, np.ones((2, 2)))
    with pytest.raises(TypeError, match="x: expected a numpy array, got list"):
        variant([1.0], x)


def test_bad_out_and_sizes():
    x = np.ones(4)
    with pytest.raises(ValueError, match="out: expected shape"):
        ew.product_simd(x, x, np.ones(3))
    with pytest.raises(ValueError, match="n: expected a positive integer, got 0"):
        ew.random_vectors(0)
    with pytest.raises(ValueError, match="coefficients: expected at least 1 elements"):
        ew.horner(x, np.ones(0))
    with pytest.raises(ValueError, match="kernel: expected one of"):
        ew.multiply_instructions("avx")


def test_thread_scaling_times_every_kernel_on_each_count():
    x, y = ew.random_vectors(1 << 12, seed=0)
    found = ew.measure_thread_scaling(x, y, thread_counts=[1], repeat=1)
    assert set(found) == {("product", 1), ("triad", 1), ("horner", 1)}
    assert found["product", 1].nbytes == ew.PRODUCT_BYTES * x.size == 32 * x.size
    assert found["triad", 1].nbytes == found["product", 1].nbytes  # the same traffic
    m = min(x.size, ew.HORNER_LENGTH)
    assert found["horner", 1].flops == ew.horner_flops(m, ew.HORNER_DEGREE)
    assert np.all(x == x) and found["product", 1].gbps > 0
    with pytest.raises(ValueError, match="thread_counts: expected at least one"):
        ew.measure_thread_scaling(x, y, thread_counts=[])
    with pytest.raises(TypeError, match="thread_counts: expected a sequence"):
        ew.measure_thread_scaling(x, y, thread_counts=2)


def test_thread_sweep_doubles_up_to_the_top():
    assert ew.thread_sweep(1) == [1]
    assert ew.thread_sweep(2) == [1, 2]
    assert ew.thread_sweep(6) == [1, 2, 4, 6]
    assert ew.thread_sweep(128) == [1, 2, 4, 8, 16, 32, 64, 128]
    with pytest.raises(ValueError, match="top"):
        ew.thread_sweep(0)


def test_horner_is_far_right_of_any_ridge_and_compiled_to_scalar_chains():
    intensity = 2 * ew.HORNER_DEGREE / ew.HORNER_BYTES
    assert intensity > 10  # ridges of current CPUs: 2-10 flop/byte
    # x86 names (empty elsewhere): scalar sd multiply-adds, never packed pd ones
    assert all("pd" not in op for op in ew.horner_instructions())


def test_the_raw_kernels_are_the_compiled_loops():
    x, y = np.ones(16), np.full(16, 3.0)
    for kind in ("scalar", "simd"):
        out = np.empty(16)
        ew.compiled_kernel(kind)(x, y, out)
        assert np.all(out == 3.0)
    with pytest.raises(ValueError, match="kernel: expected one of"):
        ew.compiled_kernel("avx")
    assert ew.horner_coefficients(3).shape == (4,)


# -- the lesson's widget through every option its text suggests (issue 31 §4) -----------------

def test_widget_every_size_and_thread_count():
    from mlpar.core import threads

    n = 1 << 14
    x, y = ew.random_vectors(n, seed=0)
    out = np.zeros(n)
    for log2_size in range(10, 15):  # the slider's sizes, up to the arrays' length
        for k in range(1, threads.max_threads() + 1):
            seen = ew.explore(x, y, out, log2_size=log2_size, n_threads=k, repeat=1)
            assert seen.n == 1 << log2_size and seen.n_threads == k
            assert seen.product.gbps > 0 and seen.horner.gflops > 0
            assert seen.horner_n == min(seen.n, ew.HORNER_LENGTH)
    with pytest.raises(ValueError, match="log2_size"):
        ew.explore(x, y, out, log2_size=15, n_threads=1)
    with pytest.raises(ValueError, match="n_threads"):
        ew.explore(x, y, out, log2_size=10, n_threads=threads.max_threads() + 1)


def test_repeated_kernels_run_the_product_reps_times():
    x, y = ew.random_vectors(1000, seed=1)
    for kind in ("scalar", "simd"):
        out = np.zeros(1000)
        ew.repeated_kernel(kind)(x, y, out, 3)
        assert np.array_equal(out, x * y)
    with pytest.raises(ValueError, match="kernel"):
        ew.repeated_kernel("avx")
