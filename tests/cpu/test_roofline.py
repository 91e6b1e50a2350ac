import matplotlib
import numpy as np
import pytest

from mlpar.core import environment
from mlpar.cpu import roofline

matplotlib.use("Agg")


def test_attainable_is_min_of_roofs():
    got = roofline.attainable([0.1, 1.0, 100.0], peak_gflops=50.0, bandwidth_gbps=10.0)
    np.testing.assert_allclose(got, [1.0, 10.0, 50.0])


@pytest.mark.parametrize("parallel", [False, True])
def test_copy_bandwidth_is_a_positive_rate(parallel):
    assert environment.copy_bandwidth(megabytes=8, repeat=2, parallel=parallel) > 0


def test_plot_has_roof_and_points():
    ax = roofline.plot_roofline(20.0, 10.0, [("a", 0.05, 0.4), ("b", 4.0, 18.0)])
    assert len(ax.lines) == 4  # roofline, ridge marker, two points


def test_bad_input():
    with pytest.raises(ValueError, match="peak_gflops"):
        roofline.attainable(1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="intensity"):
        roofline.attainable([0.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="megabytes: expected a positive integer"):
        environment.copy_bandwidth(megabytes=0)
    with pytest.raises(ValueError, match="intensity of a"):
        roofline.plot_roofline(1.0, 1.0, [("a", -1.0, 1.0)])


def test_annotated_plot_writes_names_and_plain_ticks():
    import matplotlib.pyplot as plt

    ax = roofline.plot_roofline(100.0, 30.0, [("ikj", 0.25, 6.0), ("blas", 40.0, 90.0)],
                                annotate=True, extra_peaks=[("one core", 50.0)])
    assert {t.get_text() for t in ax.texts} >= {"ikj", "blas"}
    assert len(ax.lines) == 5  # roofline, ridge, one-core roofline, two points
    labels = [ax.xaxis.get_major_formatter()(v, 0) for v in (0.1, 1.0, 100.0)]
    assert labels == ["0.1", "1", "100"]
    plt.close("all")


def test_measured_roofs_are_not_a_kernel_of_the_lesson():
    roofs = roofline.measure_roofs(quick=True)
    assert roofs.peak_gflops >= roofs.peak_one_core_gflops > 0 and roofs.bandwidth_gbps > 0
    assert roofs.ridge == roofs.peak_gflops / roofs.bandwidth_gbps
    assert "BLAS dgemm" in repr(roofs) and "STREAM" in repr(roofs)


def test_points_above_their_roof_are_named():
    points = [("under", 1 / 32, 1.0), ("over", 1 / 32, 1.5), ("compute", 10.0, 90.0)]
    found = roofline.above_roof(points, 80.0, 40.0)
    assert len(found) == 2 and found[0].startswith("over lies 20% above")
    assert roofline.above_roof(points, 80.0, 40.0, tolerance=0.15) == [found[0]]


def test_extra_roofs_are_drawn():
    import matplotlib

    matplotlib.use("Agg")
    ax = roofline.plot_roofline(80.0, 40.0, [("p", 0.1, 2.0)],
                                extra_roofs=[("one thread", 40.0, 20.0)])
    assert any("one thread" in line.get_label() for line in ax.get_lines())
