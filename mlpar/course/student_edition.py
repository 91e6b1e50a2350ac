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

It is published in the repository as ``student/`` (``make student``), which the students'
Binder and Colab links open; ``--check`` (and a test) fail when it is out of date. The data
files ship inside the package, so the edition is notebooks only. ``build`` refuses a target
that is, holds or lies inside the instructor's folder, and never overwrites a notebook that
still has solutions in it.
"""

from __future__ import annotations

import re
from pathlib import Path

from mlpar.course.lessons import NOTEBOOKS, STUDENT_FOLDER, lesson_paths, read_notebook

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
PLACEHOLDER = 'raise NotImplementedError("exercise: replace this line with your solution")'
README = """\
# Student edition

The lessons of the course with the exercise solutions taken out: open these (the Binder and
Colab links of the course do). Each exercise's function body is a `raise NotImplementedError`
line; replace it with your solution and run the check cell below it.

Generated from `notebooks/` by `make student`; do not edit these files by hand.
"""
# The Colab set-up cell changes into the folder of the notebook it opened.
COLAB_INSTRUCTOR_DIR = 'os.chdir("/content/mlpar/notebooks")'
COLAB_STUDENT_DIR = f'os.chdir("/content/mlpar/{STUDENT_FOLDER}")'


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


def student_notebook(nb, lesson: str | None = None):
    """A copy of ``nb`` with solutions stripped and their (and their checks') outputs cleared.

    ``lesson`` (the file's stem, ``04_hogwild``) is written into the notebook's metadata as
    ``metadata["mlpar"]``, with the edition and the course's version, so the grader knows a
    submitted notebook's lesson whatever the student renamed the file to.
    """
    import copy

    from mlpar import __version__

    nb = copy.deepcopy(nb)
    if lesson is not None:
        nb.metadata["mlpar"] = {"lesson": lesson, "edition": "student", "version": __version__}
    clear_next = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "Colab set-up" in cell.source:
            cell.source = cell.source.replace(COLAB_INSTRUCTOR_DIR, COLAB_STUDENT_DIR)
        if "# BEGIN SOLUTION" in cell.source:
            cell.source = strip_solutions(cell.source)
            cell.outputs, cell.execution_count = [], None
            clear_next = True
        elif clear_next:
            cell.outputs, cell.execution_count = [], None
            clear_next = False
    return nb


def check_target(outdir: Path, folder: Path = NOTEBOOKS) -> Path:
    """``outdir`` resolved, or ValueError when writing there could damage the instructor's copy."""
    target, source = Path(outdir).resolve(), Path(folder).resolve()
    if target == source or source in target.parents or target in source.parents:
        raise ValueError(
            f"outdir: expected a folder outside the instructor's notebooks ({source}) that does not "
            f"contain them, got {target}; e.g. `python -m mlpar.course student {STUDENT_FOLDER}`"
        )
    for existing in lesson_paths(target) if target.is_dir() else []:
        if "# BEGIN SOLUTION" in existing.read_text(encoding="utf-8"):
            raise ValueError(f"outdir: {existing} still has solutions in it; refusing to overwrite it")
    return target


def expected_files(folder: Path = NOTEBOOKS) -> dict[str, str]:
    """File name → text of every file of the student edition."""
    import nbformat

    files = {"README.md": README}
    for path in lesson_paths(folder):
        files[path.name] = nbformat.writes(student_notebook(read_notebook(path), path.stem)) + "\n"
    return files


def build(outdir: Path, folder: Path = NOTEBOOKS) -> list[Path]:
    """Write the student edition into ``outdir``; return the notebooks written.

    Notebooks of lessons that no longer exist are removed, so the folder mirrors ``folder``.
    """
    target = check_target(outdir, folder)
    files = expected_files(folder)
    if len(files) == 1:
        raise ValueError(f"folder: expected lesson notebooks (NN_name.ipynb) in {folder}, found none")
    target.mkdir(parents=True, exist_ok=True)
    for old in lesson_paths(target):
        if old.name not in files:
            old.unlink()
    written = []
    for name, text in files.items():
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        if name.endswith(".ipynb"):
            written.append(path)
    return written


def stale(outdir: Path, folder: Path = NOTEBOOKS) -> list[str]:
    """Names of the files in ``outdir`` that differ from a fresh build (missing, changed or extra)."""
    target = Path(outdir)
    files = expected_files(folder)
    out = [name for name, text in files.items()
           if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text]
    out += [p.name for p in lesson_paths(target) if p.name not in files] if target.is_dir() else []
    return sorted(out)
