"""Lesson 09's widget, moved through every option its text suggests (issue 31 §4).

The notebook's own ``explore`` function is taken from its cell (without the ``interact`` call)
and called in this process with each kernel and the ends of both sliders; the text promises that
a small C keeps many support vectors and a large C few, and that a large γ bends the boundary.
"""

import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NOTEBOOK = Path(__file__).parents[3] / "notebooks" / "09_svm_kernels.ipynb"


def _widget(name):
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    namespace = {}
    for cell in cells:
        source = "".join(cell["source"])
        if source.startswith("import inspect"):  # the lesson's imports and SEED
            exec(compile(source, "imports", "exec"), namespace)
        if f"def {name}(" in source:
            exec(compile(source.split("\ninteract(")[0], name, "exec"), namespace)
            return namespace
    raise AssertionError(f"no cell defines {name}")


@pytest.fixture(scope="module")
def explore():
    namespace = _widget("explore")
    shown = []
    namespace["plt"].show = lambda: shown.append(plt.gca().get_title())
    return namespace["explore"], shown


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
@pytest.mark.parametrize("C", [10**-2, 1.0, 10**2.5])
def test_every_kernel_at_both_ends_of_the_C_slider(explore, kernel, C):
    func, shown = explore
    func(kernel=kernel, C=C, gamma=1.0)
    assert shown and f"{kernel}, C={C:.3g}" in shown[-1] and "SVs" in shown[-1]
    plt.close("all")


def _support(title):
    return int(title.split(": ")[1].split(" SVs")[0])


def test_what_the_text_promises_is_visible(explore):
    func, shown = explore
    for C in (10**-2, 10**2.5):
        func(kernel="rbf", C=C, gamma=1.0)
    small_c, large_c = map(_support, shown[-2:])
    assert small_c > large_c  # a small C keeps many support vectors, a large C few
    for gamma in (10**-2, 10**1.5):
        func(kernel="rbf", C=1.0, gamma=gamma)
    smooth, narrow = map(_support, shown[-2:])
    assert narrow != smooth  # the γ slider changes the machine, not just the title
    plt.close("all")
