"""Lesson 04's widget, moved through every option its text suggests (issue 31 §4).

The notebook's own ``explore`` is taken from its cell (without the ``interact`` call) and called
in this process at both ends of the density slider and at 1 and 4 threads (more threads than
cores are allowed, the text says). It must print both variants' throughput, their ratio (what
the text asks the student to watch) and the race rates, which are 0 on one thread.
"""

import json
import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).parents[3] / "notebooks" / "04_hogwild.ipynb"


@pytest.fixture(scope="module")
def explore():
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    namespace = {}
    for cell in cells:
        source = "".join(cell["source"])
        if source.startswith("import inspect"):  # the lesson's imports and SEED
            exec(compile(source, "imports", "exec"), namespace)
        if "EPOCHS, STEP =" in source:
            exec(compile(next(line for line in source.splitlines() if "EPOCHS, STEP =" in line),
                         "step", "exec"), namespace)
        if "def explore(" in source:
            exec(compile(source.split("\ninteract(")[0], "explore", "exec"), namespace)
            return namespace["explore"]
    raise AssertionError("no cell defines explore")


@pytest.mark.parametrize("density", [0.001, 1.0])
@pytest.mark.parametrize("n_threads", [1, 4])
def test_every_end_of_the_sliders(explore, capsys, density, n_threads):
    explore(density=density, n_threads=n_threads)
    out = capsys.readouterr().out
    assert out.count("updates/s") == 2 and "lock-free / locked throughput" in out
    ratio = float(re.search(r"throughput: ([\d.]+)x", out).group(1))
    assert ratio > 0
    stale, lost = (float(v) for v in re.search(r"stale reads ([\d.e+-]+), lost updates ([\d.e+-]+)",
                                                out).groups())
    if n_threads == 1:
        assert stale == 0 and lost == 0  # one thread has nobody to race with
