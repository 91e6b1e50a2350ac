"""The published student edition through the command an instructor runs, for every lesson.

Issue 35's acceptance line: ``python -m mlpar.course grade`` on ``student/`` gives every check
of the untouched notebook no point, and every check of the instructor's notebook its point. One
class holds both for all eleven lessons (22 notebooks), graded with ``--jobs 2``: several
minutes, so opt-in like the other whole-course runs::

    MLPAR_SLOW_TESTS=1 .venv/bin/python -m pytest tests/course/test_grade_published.py

The fast per-lesson version (the grading process called directly, on a freshly built edition)
is ``test_grade_lessons.py``; ``test_student_edition.py`` checks that ``student/`` is current.
"""

from __future__ import annotations

import csv
import os
import shutil

import pytest

from mlpar.course import lessons as course
from mlpar.course.__main__ import main

STUDENT = course.NOTEBOOKS.parent / "student"


@pytest.mark.skipif(os.environ.get("MLPAR_SLOW_TESTS") != "1",
                    reason="opt-in whole-course grading run: set MLPAR_SLOW_TESTS=1")
def test_published_edition_scores_nothing_untouched_and_everything_solved(tmp_path):
    folder = tmp_path / "class"
    names = [p.name for p in course.lesson_paths()]
    for who, source in (("untouched", STUDENT), ("instructor", course.NOTEBOOKS)):
        (folder / who).mkdir(parents=True)
        for name in names:
            shutil.copy(source / name, folder / who / name)
    out = tmp_path / "grades.csv"
    assert main(["grade", str(folder), "--out", str(out), "--jobs", "2"]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for who, points in (("untouched", "0"), ("instructor", "1")):
        mine = [r for r in rows if r["student"] == who]
        assert {r["lesson"] for r in mine} == {n.removesuffix(".ipynb") for n in names}, who
        wrong = [(r["lesson"], r["exercise"], r["message"][:200]) for r in mine
                 if r["passed"] != points or not r["exercise"]]
        assert not wrong, f"{who}: {wrong}"
