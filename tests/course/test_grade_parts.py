"""The grader's parts, one at a time, without a grading process (fast).

Submissions (names, layouts, files that are not notebooks), the tampering scan (every form it
names, and none of the course's own solutions), the run-time snapshot, rebuilding a notebook
(cell ids, function names, extra and edited cells), the plan of every lesson and its tags.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from mlpar.course import lessons as course
from mlpar.course.grading import integrity, plan, submissions, tagging
from mlpar.course.grading.grade import official_plans
from mlpar.course.grading.rebuild import rebuild

LESSONS = [p.stem for p in course.lesson_paths()]


@pytest.fixture(scope="module")
def plans():
    return official_plans(course.NOTEBOOKS)


# --- submissions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, student", [
    ("alice_12345_67890_01_loops_to_threads.ipynb", "alice (12345)"),                 # Canvas
    ("alice_late_12345_67890_01_loops_to_threads-1.ipynb", "alice (12345)"),          # Canvas, late
    ("Alice Smith_12345_assignsubmission_file_01_loops_to_threads.ipynb", "Alice Smith (12345)"),  # Moodle
    ("Lab 1_bob_attempt_2024-01-01-10-00-00_01_loops_to_threads.ipynb", "bob"),       # Blackboard
    ("carol - 01 Loops to Threads.ipynb", "carol"),
    ("Copy of 01_loops_to_threads (1).ipynb", "Copy of 01_loops_to_threads (1)"),  # nobody named
    ("Copy of frank_77_01_loops_to_threads.ipynb", "frank"),
    # the LMS's part names the student, never the file name the student chose
    ("bob_222_333_final_01_loops_to_threads.ipynb", "bob (222)"),
    ("carol_444_555_late_Copy of 01_loops_to_threads (1).ipynb", "carol (444)"),
    ("Lab 1_mallory_attempt_2024-01-01-10-00-00_alice_01_loops_to_threads.ipynb", "mallory"),
    ("Wei Zhang_1111_assignsubmission_file_01_loops_to_threads.ipynb", "Wei Zhang (1111)"),
    ("Wei Zhang_2222_assignsubmission_file_01_loops_to_threads.ipynb", "Wei Zhang (2222)"),
    ("Zoe\u0308_1_2_01_loops_to_threads.IPYNB", "Zo\u00eb (1)"),                          # NFD -> NFC
    ("kim _01_loops_to_threads.ipynb.json", "kim"),
])
def test_students_in_flat_exports(name, student):
    assert submissions.student_from_flat_name(name, LESSONS) == student
    assert submissions.lesson_in_name(name, LESSONS)[0] == "01_loops_to_threads"


def test_lesson_from_metadata_before_the_file_name(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "cells": [],
          "metadata": {"mlpar": {"lesson": "04_hogwild", "edition": "student"}}}
    (tmp_path / "dave").mkdir()
    (tmp_path / "dave" / "my homework 02_linear_algebra.ipynb").write_text(json.dumps(nb))
    (tmp_path / "dave" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "dave" / ".ipynb_checkpoints" / "x-checkpoint.ipynb").write_text("{}")
    (sub,) = submissions.find(tmp_path, LESSONS)
    submissions.read(sub, LESSONS)
    assert (sub.student, sub.lesson, sub.error) == ("dave", "04_hogwild", None)


@pytest.mark.parametrize("content, reason", [
    (b"", "the file is empty"),
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b"[1, 2]", "not a Jupyter notebook"),
    (json.dumps({"nbformat": 3, "worksheets": []}).encode(), "nbformat 3 is not supported"),
    (json.dumps({"nbformat": 4, "cells": [{"source": "x"}]}).encode(), "without a cell_type"),
    (json.dumps({"nbformat": 4, "metadata": {}, "cells": []}).encode(), "matches no lesson"),
])
def test_files_that_cannot_be_graded_say_why(tmp_path, content, reason):
    path = tmp_path / ("05_mapreduce.ipynb" if "lesson" not in reason else "notes.ipynb")
    path.write_bytes(content)
    sub = submissions.read(submissions.Submission(path, "erin"), LESSONS)
    assert reason in sub.error and path.name in sub.error and len(sub.sha256) == 64


def test_a_huge_file_is_refused_unread(tmp_path):
    path = tmp_path / "05_mapreduce.ipynb"
    path.write_bytes(b"{" + b" " * 3000 + b"}")
    sub = submissions.read(submissions.Submission(path, "erin"), LESSONS, max_bytes=1000)
    assert "over the 0 MB limit" in sub.error and sub.lesson == "05_mapreduce"


# --- the tampering scan --------------------------------------------------------------------------

MODULES = {"np", "math", "exercises"}


@pytest.mark.parametrize("source, words", [
    ("exercises.check_delta = lambda f: None", "assigns to exercises.check_delta"),
    ("import numpy\nnumpy.allclose = lambda *a, **k: True", "assigns to numpy.allclose"),
    ("math.isclose = max", "assigns to math.isclose"),
    ("ex = exercises\nex.check_rho = print", "assigns to ex.check_rho"),
    ("del np.isclose", "assigns to np.isclose"),
    ("setattr(exercises, 'check_rho', print)", "calls setattr on exercises"),
    ("setattr(__import__('math'), 'isclose', max)", "calls setattr"),
    ("vars(exercises)['check_rho'] = print", "writes into vars(exercises)"),
    ("import sys\nsys.modules['math'] = None", "uses sys.modules"),
    ("import builtins\nbuiltins.max = min", "uses builtins"),
    ("__builtins__.max = min", "uses __builtins__"),
    ("import importlib\nimportlib.reload(exercises)", "uses importlib"),
    ("def f():\n    pass\nexercises.check_rho.__code__ = f.__code__", "uses exercises.check_rho.__code__"),
    ("import os\nos._exit(0)", "uses os._exit"),
    ("import sys\nsys.exit()", "uses sys.exit"),
    ("exit()", "calls exit()"),
    ("import ctypes", "imports ctypes"),
    ("import gc\nchecks = gc.get_referrers(exercises)", "uses gc.get_referrers"),
    ("from importlib import reload", "imports importlib"),
])
def test_scan_names_each_way_of_reaching_for_the_machinery(source, words):
    found = integrity.scan(source, MODULES)
    assert any(words in f for f in found), found


def test_scan_finds_nothing_in_the_course_solutions_or_an_honest_answer(plans):
    for lesson, (lesson_plan, instructor) in plans.items():
        modules = set()
        for cell in instructor:
            modules |= set(plan.bindings(plan.parse(plan.cell_source(cell))).imports)
        for ex in lesson_plan.exercises:
            source = plan.cell_source(instructor[ex.solution])
            assert integrity.scan(source, modules) == [], (lesson, ex.name)
    honest = ("import gc, os\ndef f(w, x):\n    w.data[0] = 1\n    setattr(w, 'x', x)\n    return sum(x)\n"
              "%time f(1, 2)\ngc.collect()\nos.environ['OMP_NUM_THREADS'] = '1'\nnp.random.seed(0)")
    assert integrity.scan(honest, MODULES) == []


# --- the run-time snapshot -----------------------------------------------------------------------

def test_snapshot_puts_back_patched_comparisons_and_check_code():
    from mlpar.exercises import l00_index as checks

    isclose, allclose, code = math.isclose, np.allclose, checks.check_usable_threads.__code__
    snap = integrity.Snapshot()
    try:
        math.isclose = lambda *a, **k: True
        np.allclose = lambda *a, **k: True
        checks.check_usable_threads.__code__ = (lambda f: None).__code__
        changes = snap.restore()
    finally:
        math.isclose, np.allclose, checks.check_usable_threads.__code__ = isclose, allclose, code
    assert math.isclose is isclose and np.allclose is allclose
    assert "math.isclose replaced" in changes and "numpy.allclose replaced" in changes
    altered = integrity.check_altered(changes, checks.__name__)
    assert altered == ["mlpar.exercises.l00_index.check_usable_threads: its code or defaults were swapped"]
    assert snap.restore() == []  # nothing left to put back


# --- lessons: exercises, grading cells, tags -------------------------------------------------------

def test_every_lesson_has_exercises_whose_checks_exist(plans):
    import importlib

    assert set(plans) == set(LESSONS)
    for lesson, (lesson_plan, _) in plans.items():
        assert lesson_plan.exercises, lesson
        for ex in lesson_plan.exercises:
            module = importlib.import_module(ex.module)
            assert callable(getattr(module, ex.check, None)), f"{lesson}: {ex.module}.{ex.check} is missing"
            assert {ex.solution, ex.check_cell} <= lesson_plan.grading
        code = [i for i, c in enumerate(lesson_plan.cells) if c["cell_type"] == "code"]
        assert len(lesson_plan.grading) < len(code), f"{lesson}: grading mode would run every cell"


def test_tags_are_written_idempotently_and_touch_only_metadata(tmp_path):
    path = tmp_path / "04_hogwild.ipynb"
    original = json.loads((course.NOTEBOOKS / path.name).read_text())
    for cell in original["cells"]:
        cell.get("metadata", {}).pop("tags", None)
    path.write_text(tagging.dumps(original))
    assert tagging.tag_notebooks([path]) == [path]
    assert tagging.tag_notebooks([path]) == []
    tagged = json.loads(path.read_text())
    assert [c["source"] for c in tagged["cells"]] == [c["source"] for c in original["cells"]]
    marked = plan.tagged(tagged["cells"])
    assert marked == plan.rule_cells(tagged["cells"]) and marked


def test_course_notebooks_carry_their_grading_tags():
    stale = tagging.tag_notebooks(course.lesson_paths(), write=False)
    assert stale == [], "run `python -m mlpar.course tag-grading`"


# --- rebuilding a submission ---------------------------------------------------------------------

def _student_notebook(plans, lesson="00_index"):
    lesson_plan, _ = plans[lesson]
    return lesson_plan, {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                         "cells": copy.deepcopy(lesson_plan.cells)}


def _solutions(job):
    return [c for c in job["cells"] if c["kind"] == "solution"]


def _defining(source):
    return {"cell_type": "code", "id": f"added-{abs(hash(source)) % 10**6}", "metadata": {},
            "outputs": [], "execution_count": None, "source": source}


def test_the_function_a_check_sees_is_the_one_jupyter_would_run(plans):
    lesson_plan, nb = _student_notebook(plans)
    ex = lesson_plan.exercises[1]  # usable_threads
    k = next(i for i, c in enumerate(nb["cells"]) if c.get("id") == ex.solution_id)
    nb["cells"][k]["source"] = "def usable_threads(a, q):\n    return 1  # wrong, fixed below"
    nb["cells"].insert(k + 1, _defining("usable_threads = lambda a, q: 2  # the fix"))
    nb["cells"].append(_defining("def usable_threads(a, q):\n    return 3  # scratch, after the check"))
    got = rebuild(lesson_plan, nb, seed=1)
    (cell,) = [c for c in _solutions(got.job) if c["exercises"] == [ex.name]]
    assert "the fix" in cell["source"]  # the last binding before the check cell
    assert "extra_cells" in got.flags  # the scratch copy is a cell the student added


@pytest.mark.parametrize("source", [
    "def _mine(a, q):\n    return 2\n\nusable_threads = _mine",
    "%%time\ndef usable_threads(a, q):\n    return 2",
    "%%capture out\nusable_threads = lambda a, q: 2",
])
def test_a_function_bound_by_assignment_or_inside_a_timing_magic_is_found(plans, source):
    lesson_plan, nb = _student_notebook(plans)
    ex = lesson_plan.exercises[1]
    k = next(i for i, c in enumerate(nb["cells"]) if c.get("id") == ex.solution_id)
    nb["cells"][k]["source"] = source
    got = rebuild(lesson_plan, nb, seed=1)
    check = next(c for c in got.job["cells"] if c["kind"] == "check" and c["exercise"] == ex.name)
    assert "missing" not in check and "missing_solution" not in got.flags


def test_missing_solutions_extra_and_edited_cells_are_reported(plans):
    lesson_plan, nb = _student_notebook(plans)
    first = lesson_plan.exercises[0]
    nb["cells"] = [c for c in nb["cells"] if c.get("id") != first.solution_id]
    check = lesson_plan.cells[lesson_plan.exercises[1].check_cell]["id"]
    for cell in nb["cells"]:
        if cell.get("id") == check:
            cell["source"] = "pass"
    nb["cells"].append({"cell_type": "code", "id": "mine", "metadata": {}, "outputs": [],
                        "execution_count": None, "source": "helper = 1"})
    got = rebuild(lesson_plan, nb, seed=1)
    checks = {c["exercise"]: c for c in got.job["cells"] if c["kind"] == "check"}
    assert "no solution" in checks[first.name]["missing"]
    assert sorted(got.flags) == ["edited_cells", "extra_cells"]
    assert all("helper = 1" not in c.get("source", "") for c in got.job["cells"])
    assert got.job["seed"] == 1 and got.job["lesson"] == "00_index"


def test_a_notebook_of_another_course_named_like_a_lesson_is_an_error_row(plans, tmp_path):
    from mlpar.course.grading.grade import Options, prepare

    path = tmp_path / "00_index.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "import pandas as pd\npd.read_csv('titanic.csv')"}]}))
    sub = submissions.read(submissions.Submission(path, "gus"), LESSONS)
    rebuilt, rows = prepare(sub, plans, Options(seed=1))
    assert rebuilt is None
    assert rows[0]["flags"] == "error" and "does not look like lesson 00_index" in rows[0]["message"]


def test_summary_counts_the_best_file_of_a_lesson(tmp_path):
    from mlpar.course.grading import report

    rows = [{"student": "ann", "lesson": "00_index", "exercise": e, "passed": p, "sha256": sha}
            for sha, passes in [("a", [1, 0, 0]), ("b", [1, 1, 0])] for e, p in zip("xyz", passes)]
    rows.append({"student": "bo", "lesson": "", "exercise": "", "passed": 0, "sha256": "c"})
    report.write_summary(rows, tmp_path / "s.csv")
    assert (tmp_path / "s.csv").read_text().splitlines() == [
        "student,00_index,unknown,total,possible", "ann,2,0,2,3", "bo,0,0,0,3"]
