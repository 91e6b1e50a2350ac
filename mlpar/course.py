"""Course tooling: run notebooks, generate the index and navigation, build the student edition.

    python -m mlpar.course run notebooks/01_loops_to_threads.ipynb   # re-execute in place
    python -m mlpar.course nav [--check]        # index, prev/next cells, Colab cells, README map
    python -m mlpar.course student build/student

``nav`` is idempotent: run twice, the second run changes nothing; ``--check`` exits with 1 and
names the stale files instead of writing them (CI runs the same check as a test).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
REPOSITORY = "mlpar-course/mlpar"  # GitHub owner/name used by the Colab and Binder links
NAV_MARKER = "<!-- mlpar:nav -->"
INDEX_MARKER = "<!-- mlpar:index -->"
README_BEGIN = "<!-- mlpar:lessons -->"
README_END = "<!-- /mlpar:lessons -->"

COLAB_CELL = f"""\
# NBVAL_IGNORE_OUTPUT
# Colab set-up: fetch the course and install its helpers. Anywhere else this does nothing.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    if not os.path.isdir("/content/mlpar"):
        subprocess.run(["git", "clone", "--depth=1", "https://github.com/{REPOSITORY}",
                        "/content/mlpar"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/mlpar"],
                       check=True)
    sys.path.insert(0, "/content/mlpar")
    os.chdir("/content/mlpar/notebooks")"""


def lesson_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    """Lessons are ``NN_name.ipynb``, in the order of their numbers."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


def _read(path: Path):
    import nbformat

    return nbformat.read(path, as_version=4)


def _write(nb, path: Path) -> None:
    import nbformat

    text = nbformat.writes(nb) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# --- reading a lesson's frame -------------------------------------------------------------

@dataclass(frozen=True)
class Lesson:
    path: Path
    number: str
    title: str
    minutes: str

    @property
    def label(self) -> str:
        return f"{self.number} · {self.title}"


def read_lesson(path: Path, nb=None) -> Lesson:
    """Number, title and time estimate from the title cell (``# NN · Title``, ``**Time:**``)."""
    nb = _read(path) if nb is None else nb
    first = nb.cells[0].source if nb.cells else ""
    heading = re.search(r"^#\s+(\d\d)\s*·\s*(.+)$", first, re.M)
    minutes = re.search(r"\*\*Time:\*\*\s*about\s+(\d+)\s+minutes", first)
    if not heading or not minutes:
        raise ValueError(
            f"{path.name}: the first cell must start with '# NN · Title' and contain "
            "'**Time:** about N minutes'"
        )
    return Lesson(path, heading.group(1), heading.group(2).strip(), minutes.group(1))


# --- generated cells ------------------------------------------------------------------------

def colab_url(path: Path) -> str:
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/{path.name}"


def nav_source(lessons: list[Lesson], i: int) -> str:
    lesson = lessons[i]
    parts = [f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
             f"({colab_url(lesson.path)})"]
    if i > 0:
        parts.append(f"[← {lessons[i - 1].label}]({lessons[i - 1].path.name})")
    if i > 0 and lessons[0].path != lesson.path:
        parts.append(f"[Index]({lessons[0].path.name})")
    if i + 1 < len(lessons):
        parts.append(f"[{lessons[i + 1].label} →]({lessons[i + 1].path.name})")
    return NAV_MARKER + "\n" + " · ".join(parts)


def index_source(lessons: list[Lesson]) -> str:
    rows = [INDEX_MARKER, "| Lesson | Time | Open in Colab |", "|---|---|---|"]
    for lesson in lessons[1:]:
        rows.append(f"| [{lesson.label}]({lesson.path.name}) | about {lesson.minutes} min | "
                    f"[Colab]({colab_url(lesson.path)}) |")
    return "\n".join(rows)


def readme_map(lessons: list[Lesson]) -> str:
    rows = [README_BEGIN, "| # | Lesson | Time |", "|---|---|---|"]
    for lesson in lessons:
        rows.append(f"| {lesson.number} | [{lesson.title}](notebooks/{lesson.path.name}) | "
                    f"about {lesson.minutes} min |")
    return "\n".join(rows + [README_END])


def _is_nav(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.startswith(NAV_MARKER)


def _is_colab(cell) -> bool:
    return cell.cell_type == "code" and "Colab set-up" in cell.source


def apply_frame(nb, lessons: list[Lesson], i: int) -> None:
    """Put the navigation cell second and last, the Colab cell first among code cells."""
    import nbformat

    nav = nav_source(lessons, i)
    nb.cells = [c for c in nb.cells if not _is_nav(c)]
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(nav))
    nb.cells.append(nbformat.v4.new_markdown_cell(nav))
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code and _is_colab(code[0]):
        code[0].source = COLAB_CELL
    else:
        nb.cells.insert(2, nbformat.v4.new_code_cell(COLAB_CELL))
    for cell in nb.cells:  # stable ids keep diffs and reruns quiet
        if cell.cell_type == "markdown" and cell.source.startswith(NAV_MARKER):
            cell.id = "nav-top" if cell is nb.cells[1] else "nav-bottom"
    if i == 0:
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.source.startswith(INDEX_MARKER):
                cell.source = index_source(lessons)


def navigate(write: bool = True, folder: Path = NOTEBOOKS, readme: Path = ROOT / "README.md") -> list[Path]:
    """Regenerate the frame of every lesson and the README's lesson map; return stale files."""
    import nbformat

    paths = lesson_paths(folder)
    books = [_read(p) for p in paths]
    lessons = [read_lesson(p, nb) for p, nb in zip(paths, books)]
    stale = []
    for i, (path, nb) in enumerate(zip(paths, books)):
        before = nbformat.writes(nb)
        apply_frame(nb, lessons, i)
        if nbformat.writes(nb) != before:
            stale.append(path)
            if write:
                _write(nb, path)
    if readme.exists():
        text = readme.read_text(encoding="utf-8")
        pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.S)
        if pattern.search(text):
            new = pattern.sub(lambda _: readme_map(lessons), text)
            if new != text:
                stale.append(readme)
                if write:
                    readme.write_text(new, encoding="utf-8")
    return stale


# --- running notebooks ------------------------------------------------------------------------

def run(path: Path, timeout: int = 300) -> float:
    """Execute a notebook top to bottom in a fresh kernel and save it in place; return seconds."""
    from nbclient import NotebookClient

    nb = _read(path)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    seconds = time.perf_counter() - start
    _write(nb, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlpar.course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="re-execute notebooks in place")
    p_run.add_argument("notebooks", nargs="+", type=Path)
    p_run.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    p_nav = sub.add_parser("nav", help="regenerate index, navigation and Colab cells")
    p_nav.add_argument("--check", action="store_true", help="only report stale files")
    p_student = sub.add_parser("student", help="build the student edition")
    p_student.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)

    if args.command == "run":
        for path in args.notebooks:
            print(f"{path}: {run(path, args.timeout):.1f} s", flush=True)
        return 0
    if args.command == "nav":
        stale = navigate(write=not args.check)
        for path in stale:
            print(("stale: " if args.check else "updated: ") + str(path.relative_to(ROOT)))
        return 1 if (args.check and stale) else 0
    from .student_edition import build

    for path in build(args.outdir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
