"""The numba convolution layer equals scipy's cross-correlation and two numpy references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import signal

from mlpar.cpu import convolution as cv

LAYERS = {
    "numba serial": lambda x, w: cv.conv2d(x, w, parallel=False),
    "numba parallel": lambda x, w: cv.conv2d(x, w, parallel=True),
    "im2col": cv.conv2d_im2col,
    "reference": cv.conv2d_reference,
}


def scipy_layer(images, filters):
    """The definition, spelled with scipy: sum over channels of 2-D valid correlations."""
    n, f = images.shape[0], filters.shape[0]
    out = np.zeros(cv.output_shape(images.shape, filters.shape))
    for b in range(n):
        for g in range(f):
            for c in range(images.shape[1]):
                out[b, g] += signal.correlate2d(images[b, c], filters[g, c], mode="valid")
    return out


@pytest.mark.parametrize("name", sorted(LAYERS))
@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(1, 3), c=st.integers(1, 3), f=st.integers(1, 4),
    h=st.integers(1, 14), w=st.integers(1, 14), kh=st.integers(1, 5), kw=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_layer_equals_scipy_correlation(name, n, c, f, h, w, kh, kw, seed):
    kh, kw = min(kh, h), min(kw, w)
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, c, h, w))
    filters = rng.standard_normal((f, c, kh, kw))
    got = LAYERS[name](images, filters)
    assert got.shape == (n, f, h - kh + 1, w - kw + 1)
    np.testing.assert_allclose(got, scipy_layer(images, filters), rtol=1e-10, atol=1e-10)


def test_it_is_correlation_not_flipped_convolution():
    x, w = cv.random_layer(1, 1, 9, 1, 3, seed=4)
    image, kernel = x[0, 0], w[0, 0]
    got = cv.correlate2d(image, kernel)
    np.testing.assert_allclose(got, signal.correlate2d(image, kernel, mode="valid"), atol=1e-12)
    # The mathematician's convolution flips the kernel; with an asymmetric kernel they differ.
    np.testing.assert_allclose(
        got, signal.convolve2d(image, kernel[::-1, ::-1], mode="valid"), atol=1e-12)
    assert not np.allclose(got, signal.convolve2d(image, kernel, mode="valid"))


def test_same_result_on_one_and_all_threads():
    from mlpar.core.threads import max_threads, using_threads

    x, w = cv.random_layer(3, 2, 17, 5, 3, seed=5)
    with using_threads(1):
        one = cv.conv2d(x, w)
    with using_threads(max_threads()):
        many = cv.conv2d(x, w)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_array_equal(one, cv.conv2d(x, w, parallel=False))


def test_strided_views_are_accepted():
    x, w = cv.random_layer(2, 2, 12, 2, 3, seed=6)
    view = x[:, :, ::2, ::2]
    np.testing.assert_allclose(cv.conv2d(view, w), cv.conv2d_reference(view, w), atol=1e-12)


def test_flops_and_shapes():
    assert cv.output_shape((2, 3, 10, 8), (4, 3, 3, 2)) == (2, 4, 8, 7)
    assert cv.conv2d_flops((2, 3, 10, 8), (4, 3, 3, 2)) == 2 * 2 * 4 * 3 * 3 * 2 * 8 * 7


@pytest.mark.parametrize("func", [cv.conv2d, cv.conv2d_reference, cv.conv2d_im2col])
def test_bad_layers_are_rejected(func):
    x, w = cv.random_layer(2, 3, 8, 4, 3)
    with pytest.raises(ValueError, match=r"filters: expected 3 input channels .* got shape"):
        func(x, np.ones((4, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"filters: expected a kernel no larger than the image"):
        func(x, np.ones((4, 3, 9, 3)))
    with pytest.raises(ValueError, match=r"images: expected a 4-D array, got 2-D"):
        func(x[0, 0], w)
    with pytest.raises(TypeError, match=r"filters: expected dtype float64, got int64"):
        func(x, w.astype(np.int64))


def test_bad_arguments_are_rejected():
    x, w = cv.random_layer(1, 1, 6, 1, 3)
    with pytest.raises(TypeError, match=r"parallel: expected True or False, got int"):
        cv.conv2d(x, w, parallel=1)
    with pytest.raises(ValueError, match=r"kernel: expected at most size=4, got 5"):
        cv.random_layer(size=4, kernel=5)
    with pytest.raises(ValueError, match=r"kernel: expected a 2-D array, got 3-D"):
        cv.correlate2d(x[0, 0], w[0])
    with pytest.raises(ValueError, match="thread_counts: expected at least one"):
        cv.measure_thread_speedup(x, w, ())


def test_random_layer_is_seeded():
    a = cv.random_layer(2, 3, 8, 4, 3, seed=1)
    b = cv.random_layer(2, 3, 8, 4, 3, seed=1)
    assert a[0].shape == (2, 3, 8, 8) and a[1].shape == (4, 3, 3, 3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_thread_speedup_table_names_each_count():
    from mlpar.core.threads import max_threads

    x, w = cv.random_layer(2, 2, 16, 2, 3)
    counts = sorted({1, max_threads()})  # (1,) where numba has one thread (NUMBA_NUM_THREADS=1)
    table = cv.measure_thread_speedup(x, w, counts, repeat=1)
    assert [t.name for t in table.timings] == [f"numba, {k} thread(s)" for k in counts]
    assert table["numba, 1 thread(s)"].flops == cv.conv2d_flops(x.shape, w.shape)
