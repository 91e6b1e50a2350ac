"""A generated class of lesson-00 submissions, honest and not, graded once; every row asserted.

Lesson 00 has three exercises (sum of squares on a pool, usable threads, one BLAS thread).
The class is built from the student edition, written into tmp_path, and graded with the CLI
in sandboxed processes (two at a time). Honest answers are written differently from the
instructor's, so the grader cannot be matching text.

``TIMEOUT`` is short because two students' loops wait for it (the notebook's limit, or a
quarter of it for one step) and every honest notebook here takes a second or two; the rows
name the limit whatever it is.
"""

from __future__ import annotations

import copy
import csv
import json

import numpy as np
import pytest

from mlpar.course.__main__ import main
from mlpar.course.grading.identity import file_stem
from mlpar.course.grading.report import FLAGS
from mlpar.course.lessons import NOTEBOOKS, read_notebook
from mlpar.course.student_edition import student_notebook

LESSON = "00_index"
EXERCISES = ["parallel_sum_of_squares", "usable_threads", "one_blas_thread", "predict_seconds"]
SEED = 424242  # the grader's per-run seed: the checks' arrays differ from the lesson's
TIMEOUT = 10

SOLUTIONS = {  # honest, and not the instructor's text
    "parallel_sum_of_squares": '''\
from mlpar.exercises import l00_index as exercises


def parallel_sum_of_squares(x, executor, n_chunks):
    futures = [executor.submit(lambda part: float(np.dot(part, part)), part)
               for part in np.array_split(x, n_chunks)]
    return sum(f.result() for f in futures)''',
    "usable_threads": '''\
def usable_threads(affinity, quota):
    limit = affinity if quota is None else min(affinity, int(quota // 1))
    return max(limit, 1)''',
    "one_blas_thread": '''\
def matmul_one_blas_thread(A, B):
    with threadpool_limits(1, "blas"):
        return np.matmul(A, B)''',
    "predict_seconds": '''\
def predict_seconds(n, gflops):
    work = 2.0 * n * n * n  # flops of an n×n product
    return work / (gflops * 1e9)''',
}
FUNCTION = {"parallel_sum_of_squares": "parallel_sum_of_squares", "usable_threads": "usable_threads",
            "one_blas_thread": "matmul_one_blas_thread", "predict_seconds": "predict_seconds"}


def _visible_sums() -> dict:
    """The answers to the visible cases of exercise 1 (the lesson's seed), to hard-code."""
    rng = np.random.default_rng(7)
    return {n: float(x @ x) for n, _ in [(1000, 2), (1001, 4), (17, 5), (10, 1)]
            for x in [rng.standard_normal(n)]}


HARD_CODED = f'''\
def parallel_sum_of_squares(x, executor, n_chunks):
    list(executor.map(len, np.array_split(x, n_chunks)))  # the tasks the check counts
    return {_visible_sums()!r}[len(x)]'''

WRONG_SUM = '''\
from mlpar.exercises import l00_index as exercises


def parallel_sum_of_squares(x, executor, n_chunks):
    parts = np.array_split(x, n_chunks)
    return sum(executor.map(lambda part: float(part @ part), parts)) + 1.0'''


def _cells(nb):
    return nb["cells"]


def _solution_index(nb, exercise):
    name = FUNCTION[exercise]
    for i, cell in enumerate(_cells(nb)):
        if cell["cell_type"] == "code" and f"def {name}(" in "".join(cell["source"]):
            return i
    raise AssertionError(name)


def _check_index(nb, exercise):
    for i, cell in enumerate(_cells(nb)):
        if f".check_{exercise}(" in "".join(cell["source"]):
            return i
    raise AssertionError(exercise)


def _solve(nb, exercise, source=None):
    nb["cells"][_solution_index(nb, exercise)]["source"] = source or SOLUTIONS[exercise]
    return nb


def _code(source):
    return {"cell_type": "code", "id": "added-" + str(abs(hash(source)) % 10**8), "metadata": {},
            "execution_count": None, "outputs": [], "source": source}


def make_class(official: dict) -> dict[str, object]:
    """file path (relative) -> notebook dict, or bytes for a file that is not a notebook."""
    def fresh():
        return copy.deepcopy(official)

    def honest():
        nb = fresh()
        for ex in EXERCISES:
            _solve(nb, ex)
        return nb

    subs = {}
    subs["honest/00_index.ipynb"] = honest()
    subs["untouched/00_index.ipynb"] = fresh()
    subs["partial/00_index.ipynb"] = _solve(fresh(), "usable_threads")

    nb = _solve(fresh(), "parallel_sum_of_squares")
    nb["cells"] = [c for i, c in enumerate(nb["cells"])
                   if i not in {_check_index(official, ex) for ex in EXERCISES}]
    subs["checks_deleted/00_index.ipynb"] = nb

    nb = fresh()
    for ex in EXERCISES:
        nb["cells"][_check_index(nb, ex)]["source"] = "pass"
    subs["checks_pass/00_index.ipynb"] = nb

    nb = fresh()
    i = _solution_index(nb, "parallel_sum_of_squares")
    nb["cells"][i]["source"] = "".join(nb["cells"][i]["source"]) + "\n\n" + "\n".join(
        f"exercises.check_{ex} = lambda f: None" for ex in EXERCISES)
    subs["monkeypatched_check/00_index.ipynb"] = nb

    # a wrong sum, and numpy's comparisons patched to say yes
    subs["patched_numpy/00_index.ipynb"] = _solve(fresh(), "parallel_sum_of_squares", WRONG_SUM + """
import numpy, math
numpy.isclose = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
math.isclose = lambda *a, **k: True""")

    # unbalanced chunks (the check refuses them), and max/min patched so the sizes look even
    subs["patched_builtins/00_index.ipynb"] = _solve(fresh(), "parallel_sum_of_squares", """\
import builtins


def parallel_sum_of_squares(x, executor, n_chunks):
    cut = [0] + [1] * (n_chunks - 1)
    parts = np.split(x, np.cumsum(cut)[1:]) if n_chunks > 1 else [x]
    return sum(executor.map(lambda part: float(part @ part), parts))


builtins.max = lambda *a, **k: 0
builtins.min = lambda *a, **k: 0""")

    subs["hard_coded/00_index.ipynb"] = _solve(fresh(), "parallel_sum_of_squares", HARD_CODED)

    nb = _solve(fresh(), "usable_threads", "def usable_threads(affinity, quota):\n"
                "    return whole_cores(affinity, quota)")
    nb["cells"].insert(_solution_index(nb, "usable_threads"), _code(
        "def whole_cores(affinity, quota):\n"
        "    return affinity if quota is None else max(1, min(affinity, int(quota)))"))
    subs["extra_helper/00_index.ipynb"] = nb

    nb = honest()  # as Colab saves it (nbformat 4.0, no cell ids), and cells reordered
    nb["nbformat_minor"] = 0
    for cell in nb["cells"]:
        cell.pop("id", None)
    nb["cells"] = nb["cells"][::-1]
    subs["colab_reordered/Copy of 00_index (1).ipynb"] = nb

    nb = _solve(honest(), "usable_threads", SOLUTIONS["usable_threads"] + "\n\nwhile True:\n    pass")
    subs["infinite_loop/00_index.ipynb"] = nb  # stopped after its step's share: the rest is graded

    nb = _solve(honest(), "usable_threads", SOLUTIONS["usable_threads"] + """

import time
while True:  # swallows the step's limit: the notebook's limit ends it
    try:
        time.sleep(1)
    except BaseException:
        pass""")
    # "busy_…" sorts first: the grader takes files in name order, and this one waits the whole
    # notebook limit while the other job grades the rest of the class
    subs["busy_stubborn_loop/00_index.ipynb"] = nb

    subs["memory_bomb/00_index.ipynb"] = _solve(honest(), "one_blas_thread", """\
def matmul_one_blas_thread(A, B):
    hog = np.ones(2**40)  # 8 TiB
    return A @ B + hog[0]""")

    subs["os_exit/00_index.ipynb"] = _solve(honest(), "usable_threads",
                                            SOLUTIONS["usable_threads"] + "\n\nimport os\nos._exit(0)")

    subs["segfault/00_index.ipynb"] = _solve(honest(), "one_blas_thread", SOLUTIONS["one_blas_thread"]
                                             + "\n\nimport ctypes\nctypes.string_at(0)")

    subs["eve_1234_5678_00_index.ipynb"] = b'{"cells": [ {"cell_type": "code", '  # cut short
    subs["mallory/homework3.ipynb"] = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                       "cells": [_code("print('another course')")]}
    return subs


PASS, FAIL = 1, 0
EXPECTED = {  # student -> per exercise: (passed, flags, words the message must contain)
    "honest": [(PASS, "", "")] * 4,
    "colab_reordered": [(PASS, "", "")] * 4,
    "untouched": [(FAIL, "", "not done yet")] * 4,
    "partial": [(FAIL, "", "not done yet"), (PASS, "", ""), (FAIL, "", "not done yet"),
                (FAIL, "", "not done yet")],
    "checks_deleted": [(PASS, "edited_cells", "")] + [(FAIL, "edited_cells", "not done yet")] * 3,
    "checks_pass": [(FAIL, "edited_cells", "not done yet")] * 4,
    "monkeypatched_check": [(FAIL, "tampering", "not done yet")] * 4,
    "patched_numpy": [(FAIL, "tampering", "expected")] + [(FAIL, "tampering", "not done yet")] * 3,
    "patched_builtins": [(FAIL, "tampering", "unbalanced")] + [(FAIL, "tampering", "not done yet")] * 3,
    "hard_coded": [(FAIL, "", "expected")] + [(FAIL, "", "not done yet")] * 3,
    "extra_helper": [(FAIL, "extra_cells", "not done yet"), (FAIL, "extra_cells", "NameError"),
                     (FAIL, "extra_cells", "not done yet"), (FAIL, "extra_cells", "not done yet")],
    "infinite_loop": [(PASS, "", ""), (FAIL, "timeout", f"ran past the {TIMEOUT / 4:g} s limit of one step"),
                      (PASS, "", ""), (PASS, "", "")],
    "busy_stubborn_loop": [(PASS, "", "")] + [(FAIL, "timeout", f"{TIMEOUT} s wall-clock limit")] * 3,
    "memory_bomb": [(PASS, "", ""), (PASS, "", ""), (FAIL, "memory", "address-space limit"), (PASS, "", "")],
    "os_exit": [(PASS, "tampering", "")] + [(FAIL, "crashed;tampering", "exited with code 0")] * 3,
    "segfault": [(PASS, "tampering", ""), (PASS, "tampering", "")]
                + [(FAIL, "crashed;tampering", "SIGSEGV")] * 2,
}
ERRORS = {"eve (1234)": "not valid JSON", "mallory": "matches no lesson"}


def _flags(text):
    return set(filter(None, text.split(";")))


def student_edition(lesson: str) -> dict:
    """The lesson as ``make student`` writes it into ``student/`` (this lesson only)."""
    import nbformat

    return json.loads(nbformat.writes(student_notebook(read_notebook(NOTEBOOKS / f"{lesson}.ipynb"), lesson)))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    official = student_edition(LESSON)
    assert official["metadata"]["mlpar"]["lesson"] == LESSON  # the student edition says its lesson
    folder = root / "submissions"
    for name, nb in make_class(official).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(nb if isinstance(nb, bytes) else json.dumps(nb).encode())
    out = root / "grades.csv"
    status = main(["grade", str(folder), "--out", str(out), "--jobs", "2", "--seed", str(SEED),
                   "--timeout", str(TIMEOUT), "--memory", "3072", "--feedback", str(root / "feedback")])
    assert status == 0
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    return root, folder, out, rows


def test_every_row_of_the_class(graded):
    _, _, _, rows = graded
    by_student = {}
    for row in rows:
        by_student.setdefault(row["student"], []).append(row)
    assert set(by_student) == set(EXPECTED) | set(ERRORS)
    for student, expected in EXPECTED.items():
        mine = by_student[student]
        assert [r["exercise"] for r in mine] == EXERCISES, student
        for row, (passed, flags, words) in zip(mine, expected):
            where = f"{student}/{row['exercise']}: {row}"
            assert int(row["passed"]) == passed, where
            assert _flags(row["flags"]) == _flags(flags), where
            assert words in row["message"], where
            assert row["lesson"] == LESSON and len(row["sha256"]) == 64, where
            assert set(_flags(row["flags"])) <= set(FLAGS)
    for student, words in ERRORS.items():
        (row,) = by_student[student]
        assert row["exercise"] == "" and row["passed"] == "0" and row["flags"] == "error"
        assert words in row["message"] and row["file"] in row["message"], row


def test_summary_and_feedback(graded):
    root, _, out, _ = graded
    with open(out.with_name("grades_summary.csv"), newline="") as f:
        summary = {r["student"]: r for r in csv.DictReader(f)}
    assert summary["honest"][LESSON] == "4" and summary["honest"]["total"] == "4"
    assert summary["partial"]["total"] == "1" and summary["untouched"]["total"] == "0"
    assert summary["eve (1234)"]["total"] == "0" and summary["honest"]["possible"] == "4"
    text = (root / "feedback" / f"{file_stem('monkeypatched_check')}.md").read_text()
    assert "not done yet" in text and "`tampering`" in text and "exercises.check_" in text


def test_resume_skips_what_is_graded(graded, capsys):
    root, folder, out, rows = graded
    status = main(["grade", str(folder), "--out", str(out), "--resume", "--seed", str(SEED)])
    assert status == 0
    assert "grading 0 file(s)" in capsys.readouterr().out
    with open(out, newline="") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    # the same bytes from another student still need that student's rows (an error row: fast)
    (folder / "zoe_1_2_00_index.ipynb").write_bytes((folder / "eve_1234_5678_00_index.ipynb").read_bytes())
    assert main(["grade", str(folder), "--out", str(out), "--resume", "--seed", str(SEED)]) == 0
    assert "grading 1 file(s)" in capsys.readouterr().out
    with open(out, newline="") as f:
        zoe = [r for r in csv.DictReader(f) if r["student"] == "zoe (1)"]
    assert len(zoe) == 1 and "not valid JSON" in zoe[0]["message"]
