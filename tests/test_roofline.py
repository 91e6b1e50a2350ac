import matplotlib
import numpy as np
import pytest

from mlpar import roofline

matplotlib.use("Agg")


def test_attainable_is_min_of_roofs():
    got = roofline.attainable([0.1, 1.0, 100.0], peak_gflops=50.0, bandwidth_gbps=10.0)
    np.testing.assert_allclose(got, [1.0, 10.0, 50.0])


@pytest.mark.parametrize("parallel", [False, True])
def test_copy_bandwidth_is_a_positive_rate(parallel):
    assert roofline.copy_bandwidth(megabytes=8, repeat=2, parallel=parallel) > 0


def test_plot_has_roof_and_points():
    ax = roofline.plot_roofline(20.0, 10.0, [("a", 0.05, 0.4), ("b", 4.0, 18.0)])
    assert len(ax.lines) == 4  # roofline, ridge marker, two points


def test_bad_input():
    with pytest.raises(ValueError, match="peak_gflops"):
        roofline.attainable(1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="intensity"):
        roofline.attainable([0.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="megabytes: expected a positive integer"):
        roofline.copy_bandwidth(megabytes=0)
    with pytest.raises(ValueError, match="intensity of a"):
        roofline.plot_roofline(1.0, 1.0, [("a", -1.0, 1.0)])
