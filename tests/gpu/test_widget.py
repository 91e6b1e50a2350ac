"""Lesson 10's tile widget, moved through every option its text suggests (issue 31 §4).

The notebook's own ``explore_tiles`` is taken from its cell (without the ``interact`` call) and
called with every tile size of the dropdown and the ends and middle of the size slider; it
must draw the tiles, count blocks, threads and loads as the text says, and equal numpy.
"""

import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "10_gpu.ipynb"


@pytest.fixture(scope="module")
def explore_tiles():
    cells = {c.get("id"): "".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"]}
    namespace = {}
    exec(compile(cells["l10-02"], "imports", "exec"), namespace)  # chooses the CUDA path first
    exec(compile(cells["l10-27"].split("\ninteract(")[0], "explore_tiles", "exec"), namespace)
    drawn = []
    namespace["plt"].show = lambda: drawn.append(len(namespace["plt"].gcf().axes))
    return namespace["explore_tiles"], drawn


# Every tile of the dropdown, and both ends of the size slider (4 and 16) with the middle: on
# the simulator tile 2 at size 16 (256 Python threads per launch) is left out for time alone.
@pytest.mark.parametrize("tile, size", [(2, 4), (2, 9), (4, 4), (4, 16), (8, 9), (8, 16)])
def test_every_tile_at_the_ends_and_middle_of_the_size_slider(explore_tiles, tile, size, capsys):
    import math

    import matplotlib.pyplot as plt

    func, drawn = explore_tiles
    func(tile=tile, size=size)
    out = capsys.readouterr().out
    blocks = math.ceil(size / tile) ** 2
    assert drawn and drawn[-1] >= 1  # the tiles were drawn
    assert f"{blocks} blocks × {tile * tile} threads" in out
    assert "global loads: naive" in out and "equals numpy: True" in out
    plt.close("all")
