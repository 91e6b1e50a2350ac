"""Re-execute a lesson top to bottom in a fresh kernel and save it in place.

    python -m mlpar.course run notebooks/01_loops_to_threads.ipynb
    python -m mlpar.course run notebooks/[0-9]*.ipynb      # every lesson (make notebooks)

Why not plain ``NotebookClient(nb).execute()``: nbclient imitates a browser's Output widget
(``interact`` puts the function's output in one) and, on every captured output, sends the
widget's new state back to the kernel on the *shell* socket, the very socket on which it is
at that moment awaiting the cell's ``execute_reply``. ZeroMQ signals readability to asyncio
edge-triggered, so that send can swallow the wake-up of the pending receive, and the cell
then waits for an event that never comes (jupyter/nbclient#312). The kernel needs no copy of
that state to finish the cell, so ``LocalOutputWidget`` keeps it on our side only: it is
stored in the notebook's widget state exactly as the kernel's echo would have stored it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from mlpar.course.lessons import read_notebook, write_notebook

OUTPUT_MODEL = ("@jupyter-widgets/output", "OutputModel")


def local_output_widget():
    """nbclient's Output-widget mimic, minus its messages to the kernel (see the module doc)."""
    from nbclient.output_widget import OutputWidget

    class LocalOutputWidget(OutputWidget):
        def send(self, data=None, metadata=None, buffers=None) -> None:
            state = (data or {}).get("state")
            if state is not None and hasattr(self.executor, "widget_state"):
                self.executor.widget_state.setdefault(self.comm_id, {}).update(state)

    return LocalOutputWidget


def client_for(nb, path: Path, timeout: int = 300):
    """The NotebookClient ``run`` uses: a fresh python3 kernel in the notebook's folder."""
    from nbclient import NotebookClient

    module, model = OUTPUT_MODEL
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(Path(path).parent)}})
    # A plain attribute that nbclient's __init__ fills in, not a constructor option.
    client.widget_registry = {**client.widget_registry, module: {model: local_output_widget()}}
    return client


def run(path: Path, timeout: int = 300) -> float:
    """Execute a notebook top to bottom in a fresh kernel and save it in place; return seconds."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: expected an existing notebook, got {str(path)!r}")
    nb = read_notebook(path)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    start = time.perf_counter()
    client_for(nb, path, timeout).execute()
    seconds = time.perf_counter() - start
    write_notebook(nb, path)
    return seconds
