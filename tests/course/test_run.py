"""`make notebooks` re-executes lessons with interact cells and keeps what the widgets showed."""

import nbformat
import pytest

from mlpar.course import run as course_run


@pytest.fixture
def widget_notebook(tmp_path):
    cells = [nbformat.v4.new_code_cell("from ipywidgets import IntSlider, interact")]
    for i in range(3):
        cells.append(nbformat.v4.new_code_cell(
            f"def show(n={i}):\n    print('n =', n)\n\n"
            f"interact(show, n=IntSlider(value={i}, min=0, max=9, continuous_update=False));"
        ))
    path = tmp_path / "widgets.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_run_executes_interact_cells_and_saves_the_output_widgets_state(widget_notebook):
    seconds = course_run.run(widget_notebook, timeout=120)
    assert seconds > 0
    nb = nbformat.read(widget_notebook, as_version=4)
    assert [c.execution_count for c in nb.cells] == [1, 2, 3, 4]
    view = "application/vnd.jupyter.widget-view+json"
    views = [o for c in nb.cells[1:] for o in c.outputs if view in o.data]
    assert len(views) == 3
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    captured = [m["state"]["outputs"] for m in state.values() if m["model_name"] == "OutputModel"]
    texts = sorted(o["text"] for outs in captured for o in outs)
    assert texts == ["n = 0\n", "n = 1\n", "n = 2\n"]


def test_the_client_never_writes_to_the_kernels_shell_socket(widget_notebook):
    # nbclient's own Output-widget mimic sends on the shell socket mid-cell (nbclient#312).
    widget = course_run.local_output_widget()
    module, model = course_run.OUTPUT_MODEL
    client = course_run.client_for(nbformat.read(widget_notebook, as_version=4), widget_notebook)
    assert client.widget_registry[module][model].__name__ == "LocalOutputWidget"

    class Executor:
        widget_state = {"c1": {}}

    class NoSocket:
        def __getattr__(self, name):
            raise AssertionError(f"the kernel client was used: {name}")

    w = widget("c1", {"outputs": []}, NoSocket(), Executor())
    w.sync_state()
    assert Executor.widget_state["c1"] == {"outputs": []}


def test_run_refuses_a_missing_notebook(tmp_path):
    with pytest.raises(FileNotFoundError, match="path: expected an existing notebook"):
        course_run.run(tmp_path / "nope.ipynb")
