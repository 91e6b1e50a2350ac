"""Every lesson in grading mode: the instructor's solutions pass, the untouched edition fails.

One grading process per lesson (two at a time) runs the lesson's grading cells with the
instructor's solution cells and the instructor's checks, then the student edition's untouched
solution cells and the same checks again, so each lesson pays its imports once. The student
edition is the one the grader builds in memory (``student_notebook``, as ``make student``);
``test_grade_published.py`` grades the files of ``student/`` themselves.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from mlpar.course import lessons as course
from mlpar.course.grading import sandbox
from mlpar.course.grading.grade import official_plans
from mlpar.course.grading.rebuild import rebuild

LESSONS = [p.stem for p in course.lesson_paths()]
# numba kernels compiled per process (01, 02), model fits (03), SMO solves under a profiler (09)
COSTLIEST = ("01_loops_to_threads", "03_model_selection", "09_svm_kernels", "02_linear_algebra")


@pytest.fixture(scope="module")
def outcomes():
    plans = official_plans(course.NOTEBOOKS)
    jobs = {}
    for lesson, (plan, _) in plans.items():
        instructor = json.loads((course.NOTEBOOKS / f"{lesson}.ipynb").read_text())
        untouched = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": plan.cells}
        first = rebuild(plan, instructor, seed=97).job
        second = rebuild(plan, untouched, seed=97).job
        again = [c for c in second["cells"] if c["kind"] in {"solution", "check"}]
        jobs[lesson] = (plan, dict(first, cells=first["cells"] + again))
    # the costliest to grade first, so that the two workers finish together (only the order)
    order = sorted(jobs, key=lambda lesson: lesson not in COSTLIEST)
    with ThreadPoolExecutor(2) as pool:
        futures = {lesson: pool.submit(sandbox.run_job, jobs[lesson][1], timeout=240, memory_mb=6144)
                   for lesson in order}
        return {lesson: (jobs[lesson][0], f.result()) for lesson, f in futures.items()}


@pytest.mark.parametrize("lesson", LESSONS)
def test_instructor_passes_and_untouched_edition_fails_every_check(outcomes, lesson):
    plan, outcome = outcomes[lesson]
    assert outcome.finished, f"{lesson}: {outcome.output[-2000:]}"
    checks = [e for e in outcome.events if e["event"] == "check"]
    names = [e.name for e in plan.exercises]
    assert [c["exercise"] for c in checks] == names + names
    for c in checks[: len(names)]:
        assert c["passed"] and not c["flags"], f"{lesson}: the instructor's solution failed: {c}"
    for c in checks[len(names):]:
        assert not c["passed"] and "not done yet" in c["message"], f"{lesson}: untouched passed: {c}"
