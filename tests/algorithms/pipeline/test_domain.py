import numpy as np
import pytest
from scipy.signal import correlate2d

from mlpar.algorithms.pipeline import domain as dm


def test_reference_is_scipy_same_mode_layer_by_layer():
    image, kernels = dm.synthetic_image(20, 24, seed=3), dm.random_kernels(3, 5, seed=4)
    expected = image
    for k in kernels:
        expected = correlate2d(expected, k, mode="same")
    np.testing.assert_allclose(dm.convolve_same(image, kernels), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("exchange", dm.EXCHANGES)
@pytest.mark.parametrize(("n", "k", "layers"), [(1, 3, 2), (2, 3, 1), (3, 5, 3), (5, 3, 4), (4, 1, 2)])
def test_tiles_equal_the_full_convolution_and_count_the_halo(exchange, n, k, layers):
    image, kernels = dm.synthetic_image(40, 16, seed=0), dm.random_kernels(layers, k, seed=1)
    got = dm.convolve_tiles(image, kernels, n, engine="simulated", exchange=exchange)
    np.testing.assert_allclose(got.out, dm.convolve_same(image, kernels), rtol=0, atol=1e-12)
    assert got.halo_bytes == dm.halo_bytes(16, n, k, layers) == 2 * (n - 1) * layers * (k // 2) * 16 * 8
    h = k // 2
    if exchange == "per_layer":
        assert got.messages == (2 * (n - 1) * layers if h else 0)
        assert got.rows_computed == layers * 40
    else:
        assert got.messages == (2 * (n - 1) if h else 0)
        assert got.rows_computed == layers * 40 + 2 * (n - 1) * h * layers * (layers - 1) // 2


def test_real_processes_give_the_same_result(engine_factory):
    image, kernels = dm.synthetic_image(30, 12, seed=2), dm.random_kernels(2, 3, seed=5)
    eng = engine_factory(3)
    for exchange in dm.EXCHANGES:
        got = dm.convolve_tiles(image, kernels, 3, engine=eng, exchange=exchange)
        np.testing.assert_allclose(got.out, dm.convolve_same(image, kernels), rtol=0, atol=1e-12)
        assert got.halo_bytes == dm.halo_bytes(12, 3, 3, 2)


def test_without_halo_the_tile_edges_are_wrong():
    image, kernel = dm.synthetic_image(24, 10, seed=0), dm.random_kernels(1, 3, seed=0)[0]
    full = dm.convolve_same(image, kernel[None])
    alone = dm.layer(image[8:16], kernel, pad_top=True, pad_bottom=True)  # zeros instead of a halo
    assert not np.allclose(alone[0], full[8]) and np.allclose(alone[1:-1], full[9:15])


@pytest.mark.parametrize(("call", "match"), [
    (lambda: dm.halo_width(4), "k: expected an odd kernel size, got 4"),
    (lambda: dm.random_kernels(0, 3, seed=0), "layers: expected a positive integer"),
    (lambda: dm.convolve_tiles(np.ones((10, 4)), np.ones((1, 3, 3)), 0), "n_workers"),
    (lambda: dm.convolve_tiles(np.ones((10, 4)), np.ones((1, 3, 3)), 2, exchange="all"),
     "exchange: expected one of"),
    (lambda: dm.convolve_tiles(np.ones((10, 4)), np.ones((4, 3, 3)), 4, exchange="up_front"),
     "n_workers: expected tiles of at least 4 rows"),
    (lambda: dm.convolve_tiles(np.ones((10, 4)), np.ones((1, 3, 2)), 2), "kernels: expected square"),
    (lambda: dm.convolve_same(np.ones(10), np.ones((1, 3, 3))), "image: expected a 2-D array"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
