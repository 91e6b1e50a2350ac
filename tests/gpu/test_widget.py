"""Lesson 10's tile widget, moved through every option its text suggests (issue 31 §4).

The notebook's own ``explore_tiles`` is taken from its cell (without the ``interact`` call) and
called with every tile size of the dropdown and the ends and middle of the size slider; it
must draw the tiles, count blocks, threads and loads as the text says, and equal numpy. It runs
in a fresh interpreter, which chooses its CUDA path at its first numba import as the lesson
does (this test process may already have made that choice).
"""

import math
import textwrap
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "10_gpu.ipynb"
# Every tile of the dropdown, and both ends of the size slider (4 and 16) with the middle: on
# the simulator tile 2 at size 16 (256 Python threads per launch) is left out for time alone.
CASES = [(2, 4), (2, 9), (4, 4), (4, 16), (8, 9), (8, 16)]

SCRIPT = textwrap.dedent('''
    import contextlib, io, json
    import matplotlib
    matplotlib.use("Agg")
    cells = {c.get("id"): "".join(c["source"]) for c in json.load(open(NOTEBOOK))["cells"]}
    namespace = {}
    exec(compile(cells["l10-02"], "imports", "exec"), namespace)  # the CUDA path first
    exec(compile(cells["l10-27"].split("\\ninteract(")[0], "explore_tiles", "exec"), namespace)
    plt = namespace["plt"]
    out = {}
    for tile, size in CASES:
        drawn = []
        plt.show = lambda: drawn.append(len(plt.gcf().axes))
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            namespace["explore_tiles"](tile=tile, size=size)
        plt.close("all")
        out[f"{tile} {size}"] = {"axes": drawn[-1] if drawn else 0, "text": text.getvalue()}
    print("RESULT " + json.dumps(out))
''')


@pytest.fixture(scope="module")
def shown(fresh_python):
    return fresh_python(f"NOTEBOOK = {str(NOTEBOOK)!r}\nCASES = {CASES!r}\n" + SCRIPT, timeout=600)


@pytest.mark.parametrize("tile, size", CASES)
def test_every_tile_at_the_ends_and_middle_of_the_size_slider(shown, tile, size):
    got = shown[f"{tile} {size}"]
    blocks = math.ceil(size / tile) ** 2
    assert got["axes"] >= 1  # the tiles were drawn
    assert f"{blocks} blocks × {tile * tile} threads" in got["text"]
    assert "global loads: naive" in got["text"] and "equals numpy: True" in got["text"]
