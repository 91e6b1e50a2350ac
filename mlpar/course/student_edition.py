"""Build the student edition: the course with every exercise solution taken out.

In the instructor's notebooks a solution sits inside a function body between two marker lines:

    def grid_stride_copy(x, out):
        # BEGIN SOLUTION
        ...the answer...
        # END SOLUTION

The student edition keeps the ``def`` line and replaces everything from ``# BEGIN SOLUTION`` to
``# END SOLUTION`` with ``raise NotImplementedError`` at the same indentation. It carries no
output computed from a solution: every code cell from the exercises' heading on (the first
markdown heading ``Exercises``, else the first solution cell) has its outputs cleared, the
check cells', the measure cells' that call a solution and any other's alike, so a student opens
the exercises with nothing printed below them. Graded with ``pytest --nbval-lax``, an unsolved
exercise therefore fails at its check cell with "not done yet".

:func:`leaks` is the test of that promise for the text of the lesson: it names each exercise
whose answer (its formula, its predicted numbers, as the instructor's solution and the cells
that call it print them) can be read anywhere in the student edition before or inside it.

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
    first = exercises_start(nb.cells)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if "Colab set-up" in cell.source:
            cell.source = cell.source.replace(COLAB_INSTRUCTOR_DIR, COLAB_STUDENT_DIR)
        if "# BEGIN SOLUTION" in cell.source:
            cell.source = strip_solutions(cell.source)
        if i >= first:
            cell.outputs, cell.execution_count = [], None
    return nb


EXERCISES_HEADING = re.compile(r"^#{1,6}\s*Exercises?\b", re.MULTILINE)


def exercises_start(cells) -> int:
    """Index of the exercises' heading cell (or of the first solution cell; len(cells) if none).

    Everything a solution computes is printed from there on: the check cells' pass lines
    state the formula they verified, the measure cells the predicted numbers.
    """
    first_solution = next((i for i, c in enumerate(cells)
                           if c.cell_type == "code" and "# BEGIN SOLUTION" in c.source), len(cells))
    heading = next((i for i, c in enumerate(cells[:first_solution])
                    if c.cell_type == "markdown" and EXERCISES_HEADING.search(c.source)), None)
    return first_solution if heading is None else heading


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


# ---- Does any exercise's answer show before it? ---------------------------------------------

# A formula as the lesson prints it: terms (names, numbers, brackets, roots, powers) joined by
# operators, e.g. "mp/(m + p − 1)", "m* = √(C/t)", "n·t / (⌈n/p⌉·(t + c))".
_TERM = r"[\w.()\[\]⌈⌉⌊⌋√²³ᵀ·×*/^|]+"
_FORMULA = re.compile(rf"{_TERM}(?:\s*[+\-−×·*/=^]\s*{_TERM})*")
_OPERATORS = set("/×·*^√²³+-−⌈")
# Words joined by a hyphen or a slash ("memory-bound", "GFLOP/s", "40-point") are prose.
_WORDS = re.compile(r"^(?:\d+|[^\W\d_]+)(?:[-/][^\W\d_]+)+$")
# A predicted number as the measure cells print it ("predicted 3.33 GFLOP/s", "m* = 22.04").
_PREDICTED = re.compile(
    r"(?:predicted|prediction|ideal)\b[^\d\n]{0,24}?(?P<before>[^\s=]{1,4}\s*=\s*)?"
    r"(?P<number>\d+(?:[.,]\d+)*)(?P<unit>\s*(?:×|x\b|%|[mµn]?s\b|GFLOP/s|GB/s|rounds\b|"
    r"steps\b|workers\b|threads\b|bytes\b))?")


def normal(text: str) -> str:
    """Text compared as formulas are read: no spaces or multiplication signs, one minus, lower case."""
    text = re.sub(r"(\d)\s*×", r"\1x", text)  # "1.71×" is a speedup, not a product
    text = text.lower().replace("−", "-").replace("**", "^").replace("\\cdot", "").replace("\\times", "")
    text = text.replace("\\left", "").replace("\\right", "").replace("\\sqrt", "√")
    return re.sub(r"[\s·×*⋅{}$\\]", "", text)


def _formulas(text: str) -> set[str]:
    """Distinguishing formulas in ``text`` (each side of an ``=`` too), normalised."""
    found = set()
    for match in _FORMULA.finditer(text):
        whole = match.group(0).strip(" .,;:")
        for part in [whole, *whole.split("=")]:
            norm = normal(part).strip(".,;:")
            letters = set(re.findall(r"[^\W\d_]", norm))
            if (len(norm) >= 6 and len(letters) >= 2 and _OPERATORS & set(norm)
                    and norm.count("(") == norm.count(")") and not _WORDS.match(norm)):
                found.add(norm)
    return found


def _expression_texts(source: str, function: str) -> set[str]:
    """The solution's returned and assigned expressions, as the lesson would print them."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for sub in ast.walk(node):
                if isinstance(sub, (ast.BinOp, ast.Call)) and sum(
                        isinstance(n, ast.BinOp) for n in ast.walk(sub)) >= 2:
                    text = normal(ast.unparse(sub).replace("math.", "").replace("np.", ""))
                    if len(text) >= 8:
                        out.add(text)
    return out


def _cell_text(cell) -> str:
    parts = [cell.source]
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "data" in output:
            data = output["data"]
            parts.append(data.get("text/markdown", "") or data.get("text/plain", ""))
    return "\n".join(parts)


def answer_texts(nb) -> dict[str, set[str]]:
    """Exercise (its function) → the distinguishing texts of its answer, normalised.

    Read from the instructor's notebook: the solution's own expressions, and from the cells
    that call the solution (its check, the measure cell after it) the formulas they print and
    the numbers they print as predicted.
    """
    from mlpar.course.grading.plan import exercises

    found = exercises([dict(c) for c in nb.cells])
    answers = {}
    for e in found:
        texts = _expression_texts(nb.cells[e.solution].source, e.function)
        call = re.compile(rf"\b{re.escape(e.function)}\b")
        for cell in nb.cells[e.solution + 1:]:
            if cell.cell_type != "code" or not call.search(cell.source):
                continue
            shown = _cell_text(cell)[len(cell.source):]
            texts |= _formulas(shown)
            for m in _PREDICTED.finditer(shown):
                before, unit = (m.group("before") or ""), (m.group("unit") or "").strip()
                if before or unit:
                    texts.add(normal(before + m.group("number") + unit))
        answers[e.function] = texts
    return answers


def leaks(instructor, student) -> list[tuple[str, str, int]]:
    """``(exercise function, answer text, cell index)`` for each answer shown before or inside it.

    ``instructor`` and ``student``: the two editions of one lesson (cells in the same order).
    The answer texts come from :func:`answer_texts`; they are looked for in every cell of the
    student edition, source and outputs, from the first through the exercise's check cell.
    """
    from mlpar.course.grading.plan import exercises

    found = exercises([dict(c) for c in instructor.cells])
    texts = [normal(_cell_text(c)) for c in student.cells]
    out = []
    for e in found:
        for answer in sorted(answer_texts(instructor).get(e.function, ())):
            for i in range(min(e.check_cell + 1, len(texts))):
                if answer in texts[i]:
                    out.append((e.function, answer, i))
                    break
    return out
