"""Build the student edition: the course with every exercise solution taken out.

In the instructor's notebooks a solution sits inside a function body between two marker lines:

    def grid_stride_copy(x, out):
        # BEGIN SOLUTION
        ...the answer...
        # END SOLUTION

The student edition keeps the ``def`` line and replaces everything from ``# BEGIN SOLUTION`` to
``# END SOLUTION`` with ``raise NotImplementedError`` at the same indentation, and clears the
outputs of that cell and of the check cell after it. Graded with ``pytest --nbval-lax``, an
unsolved exercise therefore fails at its check cell with "not done yet".
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .course import NOTEBOOKS, ROOT, _read, _write, lesson_paths

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
PLACEHOLDER = 'raise NotImplementedError("exercise: replace this line with your solution")'


def strip_solutions(source: str) -> str:
    """Replace each BEGIN/END SOLUTION block with a ``raise NotImplementedError`` line."""
    out, inside = [], False
    for line in source.splitlines():
        begin = BEGIN.match(line)
        if begin and not inside:
            inside = True
            out.append(begin.group(1) + PLACEHOLDER)
        elif inside and END.match(line):
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("source: '# BEGIN SOLUTION' without a matching '# END SOLUTION'")
    return "\n".join(out)


def student_notebook(nb):
    """A copy of ``nb`` with solutions stripped and their (and their checks') outputs cleared."""
    import copy

    nb = copy.deepcopy(nb)
    clear_next = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "# BEGIN SOLUTION" in cell.source:
            cell.source = strip_solutions(cell.source)
            cell.outputs, cell.execution_count = [], None
            clear_next = True
        elif clear_next:
            cell.outputs, cell.execution_count = [], None
            clear_next = False
    return nb


def build(outdir: Path, folder: Path = NOTEBOOKS) -> list[Path]:
    """Write the student edition (notebooks and data) under ``outdir``; return written notebooks."""
    outdir = Path(outdir)
    (outdir / "notebooks").mkdir(parents=True, exist_ok=True)
    written = []
    for path in lesson_paths(folder):
        target = outdir / "notebooks" / path.name
        _write(student_notebook(_read(path)), target)
        written.append(target)
    shutil.copytree(ROOT / "data", outdir / "data", dirs_exist_ok=True)
    return written
