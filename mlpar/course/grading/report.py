"""What grading writes: the grades CSV, the per-student summary, and feedback for each student.

``grades.csv`` has one row per student × lesson × exercise (:data:`COLUMNS`); a file that could
not be graded has one row with an empty exercise and the flag ``error``. It is appended to as
each submission is graded, so ``--resume`` can skip every submission whose sha256 it already
holds for that student. The summary (:func:`write_summary`) has one row per student: points
per lesson (the best of the student's submissions of that lesson), the total and the points
possible. Every field a student controls is written through :mod:`~.csv_safety` (no formula a
spreadsheet would run, no control character), and read back exactly; rows cut short or not
the grader's are skipped when read. Feedback files are named by
:func:`~.identity.file_stem`, unique per student.
"""

from __future__ import annotations

import csv
import re
import threading
from collections import defaultdict
from pathlib import Path

from mlpar.course.grading.csv_safety import cell, uncell
from mlpar.course.grading.identity import file_stem

COLUMNS = ["student", "lesson", "exercise", "passed", "message", "flags", "seconds", "sha256", "file"]

# The fixed vocabulary of the ``flags`` column (``;``-separated).
FLAGS = {
    "tampering": "a solution cell reaches for the grading machinery (module attributes, sys.modules, "
                 "builtins, importlib, __code__, os._exit, sys.exit, ...) or changed a module at run "
                 "time; what it changed was put back before the check",
    "extra_cells": "the notebook has code cells the student added; they were not run",
    "edited_cells": "a locked cell was changed or deleted; the official one was run instead",
    "missing_solution": "no cell defines the exercise's function; it counts as not done",
    "timeout": "a solution cell or a check ran past a quarter of --timeout (that exercise fails, the "
               "next ones are graded), or the notebook past --timeout (it was stopped)",
    "memory": "the submission ran past the address-space limit (--memory)",
    "crashed": "the grading process died or exited (a segfault, os._exit, a kill) before the check",
    "error": "the file could not be graded (not a notebook, no lesson, too big); see the message",
}


def flag_text(flags) -> str:
    ordered = [f for f in FLAGS if f in set(flags)]
    return ";".join(ordered)


class GradeBook:
    """The grades CSV, appended to row by row from any thread.

    Every field goes through :func:`~mlpar.course.grading.csv_safety.cell` (no formulas) and is
    read back through ``uncell``. A last row cut short by a hard stop (no final newline) is
    ended before anything is appended, so it stays one bad row that :func:`read_rows` skips.
    """

    def __init__(self, path: Path, resume: bool = False):
        self.path = Path(path)
        self._lock = threading.Lock()
        self.rows: list[dict] = read_rows(self.path) if resume else []
        if not resume or not self.path.exists() or self.path.stat().st_size == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerow(COLUMNS)
        else:
            with open(self.path, "rb+") as f:
                f.seek(-1, 2)
                if f.read(1) not in (b"\n", b"\r"):
                    f.write(b"\r\n")

    def done(self, expected: dict[str, int]) -> set[tuple[str, str]]:
        """``(student, sha256)`` of every file whose rows are all here: an error row, or one row
        per exercise of its lesson (``expected``: lesson -> exercises). A file cut short by a
        hard stop is graded again."""
        got: dict[tuple[str, str], set] = defaultdict(set)
        whole = set()
        for row in self.rows:
            key = (row["student"], row["sha256"])
            if not row["exercise"]:
                whole.add(key)
            elif len(got[key] | {row["exercise"]}) >= expected.get(row["lesson"], 1):
                whole.add(key)
            got[key].add(row["exercise"])
        return whole

    def add(self, rows: list[dict]) -> None:
        with self._lock, open(self.path, "a", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerows([[cell(row.get(k, "")) for k in COLUMNS] for row in rows])


_SHA = re.compile(r"^[0-9a-f]{64}$")


def _valid(row: dict) -> bool:
    return (all(isinstance(row.get(k), str) for k in COLUMNS) and row["passed"] in ("0", "1")
            and bool(_SHA.match(row["sha256"])) and row["student"] != "student")


def read_rows(path: Path) -> list[dict]:
    """The well-formed rows of a grades CSV (one cut short, or written by hand wrongly, is skipped)."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f)
        for fields in reader:
            if len(fields) != len(COLUMNS) or fields == COLUMNS:
                continue
            row = dict(zip(COLUMNS, (uncell(x) for x in fields)))
            if _valid(row):
                rows.append(row)
    return rows


def graded(path: Path) -> set[tuple[str, str]]:
    """``(student, sha256)`` of every file with rows in ``path``: two students may hand in the
    same bytes (the untouched edition), and each needs rows of their own."""
    return {(row["student"], row["sha256"]) for row in read_rows(path)}


def points(rows: list[dict]) -> dict[str, dict[str, tuple[int, int]]]:
    """student -> lesson -> (points, possible), the best of the student's files of a lesson.

    A file graded twice (a run cut short, then resumed) counts once: its last row per exercise.
    """
    last: dict[tuple, dict] = {}
    for row in rows:
        last[(row["student"], row["lesson"], row["sha256"], row["exercise"])] = row
    per_file: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for (student, lesson, sha, exercise), row in last.items():
        key = (student, lesson, sha)
        if exercise:
            per_file[key][0] += int(row["passed"])
            per_file[key][1] += 1
        else:
            per_file[key]  # an error row: a file worth nothing  # noqa: B018
    best: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for (student, lesson, _), (got, possible) in per_file.items():
        old = best[student].get(lesson or "unknown")
        if old is None or (got, possible) > old:
            best[student][lesson or "unknown"] = (got, possible)
    return best


def write_summary(rows: list[dict], path: Path) -> None:
    """One row per student: points per lesson, total, and the points possible."""
    best = points(rows)
    lessons = sorted({lesson for per in best.values() for lesson in per})
    possible = {lesson: max((per[lesson][1] for per in best.values() if lesson in per), default=0)
                for lesson in lessons}
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *lessons, "total", "possible"])
        for student in sorted(best):
            got = [best[student].get(lesson, (0, 0))[0] for lesson in lessons]
            writer.writerow([cell(student), *got, sum(got), sum(possible.values())])


def write_feedback(rows: list[dict], folder: Path, notes: dict | None = None) -> list[Path]:
    """One markdown file per student: each exercise's result and the check's message."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    by_student: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_student[row["student"]].append(row)
    written = []
    for student, mine in sorted(by_student.items()):
        lines = [f"# Feedback for {student}", ""]
        for file in sorted({r["file"] for r in mine}):
            these = [r for r in mine if r["file"] == file]
            exercises = [r for r in these if r["exercise"]]
            lesson = these[0]["lesson"] or "unknown lesson"
            got = sum(int(r["passed"]) for r in exercises)
            lines += [f"## {lesson} ({file}): {got} of {len(exercises)}", ""]
            if not exercises:
                lines += [f"Not graded: {these[0]['message']}", ""]
                continue
            lines += ["| exercise | result | message |", "|---|---|---|"]
            for r in exercises:
                mark = "✓ passed" if r["passed"] == "1" or r["passed"] == 1 else "✗ not passed"
                text = str(r["message"]).replace("|", "\\|")
                lines.append(f"| {r['exercise']} | {mark} | {text} |")
            flags = sorted({f for r in these for f in str(r["flags"]).split(";") if f})
            if flags:
                lines += ["", "Flags:"] + [f"- `{f}`: {FLAGS.get(f, f)}" for f in flags]
            for note in (notes or {}).get(these[0]["sha256"], []):
                lines.append(f"  - {note}")
            lines.append("")
        path = folder / f"{file_stem(student)}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        written.append(path)
    return written
