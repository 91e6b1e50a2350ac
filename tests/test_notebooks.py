"""Static checks of every committed notebook: what strict nbval and students rely on."""

import json
import re

import nbformat
import pytest

from mlpar.course import lessons as course

LESSONS = course.lesson_paths()
EXACT_MARKERS = {"NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}
MACHINE_PATHS = ("/work/", "/root/", "/home/", "/Users/", "/tmp/", "ipykernel_", "site-packages")
MAX_BYTES = 1_500_000


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


# Read once per notebook, not once per test (88 reads and validations were 3 s): the tests
# only read it.
@pytest.fixture(scope="module", params=LESSONS, ids=[p.name for p in LESSONS])
def notebook(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_there_are_lessons():
    assert [p.name for p in LESSONS[:2]] == ["00_index.ipynb", "01_loops_to_threads.ipynb"]


def test_executed_in_order(notebook):
    _, nb = notebook
    counts = [c.execution_count for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), "re-run with `make notebooks`"


def test_no_errors_and_no_machine_paths(notebook):
    _, nb = notebook
    for i, cell in enumerate(code_cells(nb)):
        for out in cell.outputs:
            assert out.output_type != "error", f"code cell {i} stored an error"
            assert not (out.output_type == "stream" and out.name == "stderr" and "Warning" in out.text), (
                f"code cell {i} stored a warning: {out.text[:200]}"
            )
            text = json.dumps(out)
            for bad in MACHINE_PATHS:
                assert bad not in text, f"code cell {i} output contains a machine path ({bad})"


def test_nbval_markers_are_exact(notebook):
    _, nb = notebook
    marker = re.compile(r"^\s*#\s*NBVAL_")
    for i, cell in enumerate(code_cells(nb)):
        for line in cell.source.splitlines():
            if marker.match(line):
                assert line.strip().lstrip("#").strip() in EXACT_MARKERS, f"cell {i}: {line!r}"


def test_interact_and_progress_cells_are_ignored(notebook):
    _, nb = notebook
    for cell in code_cells(nb):
        if re.search(r"\binteract(ive)?\(|\btqdm\b\(|trange\(", cell.source):
            assert cell.source.startswith("# NBVAL_IGNORE_OUTPUT"), cell.source[:80]


def test_size_limit(notebook):
    path, _ = notebook
    assert path.stat().st_size < MAX_BYTES


def test_frame(notebook):
    path, nb = notebook
    lesson = course.read_lesson(path, nb)  # title and time estimate
    title = nb.cells[0].source
    assert "**Objectives**" in title and "**Questions**" in title
    assert nb.cells[1].source.startswith(course.NAV_MARKER)
    assert nb.cells[-1].source.startswith(course.NAV_MARKER)
    assert code_cells(nb)[0].source == course.COLAB_CELL, "the Colab set-up cell comes first"
    headings = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown" and c.source]
    assert headings.index("## Exercises") < headings.index("## Key points"), lesson
    assert headings[-3:-1] == ["## Key points", "## References"], (
        "Key points, then the references the lesson draws on, close the lesson before navigation")


def test_every_solution_has_a_check_cell(notebook):
    _, nb = notebook
    cells = nb.cells
    solutions = [i for i, c in enumerate(cells) if "# BEGIN SOLUTION" in c.source]
    assert 3 <= len(solutions) <= 5, "3-5 graded exercises (issue 28 adds a predict-then-measure one)"
    for i in solutions:
        assert "# END SOLUTION" in cells[i].source
        nxt = cells[i + 1]
        assert nxt.cell_type == "code" and ".check_" in nxt.source, "a check cell follows each solution"
        assert any("passed" in o.get("text", "") for o in nxt.outputs), "the stored check passed"


def test_figure_cells_call_plt_show(notebook):
    # nbval's kernel registers the inline backend's end-of-cell flush once more, so a figure left
    # for that flush is displayed twice under nbval but once when the notebook was saved.
    _, nb = notebook
    for i, cell in enumerate(code_cells(nb)):
        shown = any("<Figure" in o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        if shown:
            assert "plt.show()" in cell.source, f"code cell {i} shows a figure without plt.show()"
