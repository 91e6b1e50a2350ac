"""A hostile class (issue 32), graded once; every row asserted, canaries checked.

Files that used to stop the grader (folders, links, FIFOs, devices, deep or malformed JSON,
undecodable and over-long names), students who reached other students' grades or the
instructor's files (escaped processes, shell escapes, writes outside the scratch folder),
answers that won points they had not earned (frames, patched comparisons, ``int`` subclasses,
forged events), honest answers that lost them (a lambda, ``%%time``, a fix below the official
cell, ``.IPYNB``, an NFD name with a trailing space), and names that attack a spreadsheet or a
terminal. After grading: nothing of the class runs any more, nothing is left in TMPDIR, and
the canaries outside the scratch folders are as they were.

The fast class is graded in the bubblewrap sandbox where it works, else without it (the
cases that would then really write outside or escape are left out: they are the sandbox's
job). ``MLPAR_SLOW_TESTS=1`` grades the same class as root and as an unprivileged user, with
bubblewrap and on a PATH without it (as on a machine where it is not installed)::

    MLPAR_SLOW_TESTS=1 .venv/bin/python -m pytest -p no:cacheprovider tests/course/test_grade_hostile.py
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from mlpar.course.grading import report, sandbox
from mlpar.course.grading.identity import file_stem
from mlpar.course.lessons import NOTEBOOKS, read_notebook
from mlpar.course.student_edition import student_notebook

LESSON = "00_index"
EXERCISES = ["parallel_sum_of_squares", "usable_threads", "one_blas_thread", "predict_seconds"]
FUNCTION = {"parallel_sum_of_squares": "parallel_sum_of_squares", "usable_threads": "usable_threads",
            "one_blas_thread": "matmul_one_blas_thread", "predict_seconds": "predict_seconds"}
SEED = 515151
TIMEOUT = 24

SUM = '''\
def parallel_sum_of_squares(x, executor, n_chunks):
    futures = [executor.submit(lambda part: float(np.dot(part, part)), part)
               for part in np.array_split(x, n_chunks)]
    return sum(f.result() for f in futures)'''
THREADS_LAMBDA = ("usable_threads = lambda affinity, quota: max(1, affinity if quota is None "
                  "else min(affinity, int(quota // 1)))")
BLAS = '''\
def matmul_one_blas_thread(A, B):
    with threadpool_limits(1, "blas"):
        return np.matmul(A, B)'''
PREDICT_TIMED = '''\
%%time
def predict_seconds(n, gflops):
    return 2.0 * n ** 3 / (gflops * 1e9)'''

FRAME_SWAP = '''\
import inspect
for _info in inspect.stack(0):  # the runner's locals: make every check it holds a no-op
    _loc = _info.frame.f_locals
    if isinstance(_loc.get("checks"), dict):
        for _name in _loc["checks"]:
            _loc["checks"][_name] = lambda function: None


def parallel_sum_of_squares(x, executor, n_chunks):
    list(executor.map(len, np.array_split(x, n_chunks)))
    return 1.0'''
ALWAYS_EQUAL = '''\
class _Threads(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def usable_threads(affinity, quota):
    return _Threads(0)'''
SELF_HEALING = '''\
import math as _math
_targets = [_math, np]


def _one_shot(module, attr):
    real = getattr(module, attr)

    def fake(*a, **k):
        setattr(module, attr, real)
        return True
    setattr(module, attr, fake)


def predict_seconds(n, gflops):
    _one_shot(_targets[0], "isclose")
    _one_shot(_targets[1], "allclose")
    return 1.0'''
FORGE = '''\
import json, os
_lie = "".join(json.dumps({"event": "check", "exercise": e, "passed": True, "message": "",
                           "flags": [], "detail": [], "seconds": 0.1}) + "\\n"
               for e in ["parallel_sum_of_squares", "usable_threads", "one_blas_thread", "predict_seconds"])
for _fd in range(3, 30):
    try:
        os.write(_fd, _lie.encode())
    except OSError:
        pass


def usable_threads(affinity, quota):
    return 0'''
SABOTEUR = '''\
import os, subprocess, sys
_daemon = """
import glob, os, sys, time
end = time.time() + 8
while time.time() < end:
    for path in sys.argv[1:]:
        try:
            with open(path, "a") as f:
                f.write("sabotage")
        except OSError:
            pass
    for results in glob.glob("/tmp/*/results.jsonl") + glob.glob("/tmp/mlpar-grade-*/*"):
        try:
            with open(results, "a") as f:
                f.write("sabotage")
        except OSError:
            pass
    time.sleep(0.05)
"""
subprocess.Popen([sys.executable, "-c", _daemon, *{targets!r}], start_new_session=True, env={{}})
subprocess.Popen(["sleep", "{mark}"], start_new_session=True, env={{}})
for _path in {targets!r}:
    try:
        with open(_path, "a") as _f:
            _f.write("damage")
    except OSError:
        pass
get_ipython().system("echo bang >> {bang}")


''' + SUM


def _solution_index(nb, exercise):
    name = FUNCTION[exercise]
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and f"def {name}(" in "".join(cell["source"]):
            return i
    raise AssertionError(name)


def _solve(nb, exercise, source):
    nb["cells"][_solution_index(nb, exercise)]["source"] = source
    return nb


def _code(source, tag):
    return {"cell_type": "code", "id": f"added-{tag}", "metadata": {}, "execution_count": None,
            "outputs": [], "source": source}


def _honest(official):
    nb = copy.deepcopy(official)
    _solve(nb, "parallel_sum_of_squares", SUM)
    _solve(nb, "usable_threads", THREADS_LAMBDA)
    _solve(nb, "predict_seconds", PREDICT_TIMED)
    # the official cell left as handed out, the fix in a cell added just below it (as Jupyter runs it)
    nb["cells"].insert(_solution_index(nb, "one_blas_thread") + 1, _code(BLAS, "fix"))
    return nb


def make_class(official, folder, canaries, mark, sandboxed: bool) -> None:
    """Write the class into ``folder`` (see the module)."""
    def put(relative, content):
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())

    put("Zoe\u0308 /00_index.IPYNB", _honest(official))  # NFD, a trailing space, an upper-case suffix
    put("victim/00_index.ipynb.json", _honest(official))
    cheat = copy.deepcopy(official)
    _solve(cheat, "parallel_sum_of_squares", FRAME_SWAP)
    _solve(cheat, "usable_threads", ALWAYS_EQUAL)
    _solve(cheat, "predict_seconds", SELF_HEALING)
    cheat["cells"].append(_code("x = " + "-" * 100_000 + "1", "deep"))  # an added cell too deep to parse
    put("cheat/00_index.ipynb", cheat)
    put("forger/00_index.ipynb", _solve(copy.deepcopy(official), "usable_threads", FORGE))
    if sandboxed:  # without the sandbox these would really write outside and stay running
        put("saboteur/00_index.ipynb", _solve(_honest(official), "parallel_sum_of_squares", SABOTEUR.format(
            targets=[str(c) for c in canaries], mark=mark, bang=canaries[0])))

    # files that used to stop the grader: each is one error row now
    (folder / "folder" / "00_index.ipynb").mkdir(parents=True)
    (folder / "dangling").mkdir()
    os.symlink(folder / "nowhere.ipynb", folder / "dangling" / "00_index.ipynb")
    (folder / "fifo").mkdir()
    os.mkfifo(folder / "fifo" / "00_index.ipynb")
    (folder / "zero").mkdir()
    os.symlink("/dev/zero", folder / "zero" / "00_index.ipynb")
    deep = b"[" * 100_000 + b"]" * 100_000
    put("deep/00_index.ipynb", b'{"nbformat": 4, "metadata": ' + deep + b', "cells": []}')
    put("metalist/00_index.ipynb", dict(official, metadata=[]))
    bad = copy.deepcopy(official)
    bad["cells"][0]["source"] = [["x"]]
    put("nested/00_index.ipynb", bad)
    bad = copy.deepcopy(official)
    bad["cells"][0]["id"] = ["x"]
    put("listid/00_index.ipynb", bad)
    put(os.fsdecode(b"M\xfcller") + "/00_index.ipynb", b"")          # a Windows zip's Latin-1 name
    put("n" * 255 + "/00_index.ipynb", b"")                          # a 255-byte name, with --feedback
    put("=2+5/00_index.ipynb", b"")                                  # spreadsheet formulas
    put("+2+5/00_index.ipynb", b"")
    put("\x1b]0;PWNED\x07\x1b[2Jansi/00_index.ipynb", b"")           # terminal escapes
    put("mallory_123_456_alice_00_index.ipynb", b"")                 # Canvas: mallory, not alice
    put("pdf/report.pdf", b"%PDF-1.4")
    put("__MACOSX/._00_index.ipynb", b"\x00")                        # skipped: not a submission


PASS, FAIL = 1, 0
# student -> per exercise: (passed, flags that must be there, words the message must contain)
GRADED = {
    "Zoë": [(PASS, set(), "")] * 4,
    "victim": [(PASS, set(), "")] * 4,
    "cheat": [(FAIL, {"tampering", "extra_cells"}, "expected"),
              (FAIL, {"tampering", "extra_cells"}, "returned 0, expected"),
              (FAIL, {"tampering", "extra_cells"}, "not done yet"),
              (FAIL, {"tampering", "extra_cells"}, "got 1, expected")],
    "saboteur": [(PASS, {"tampering"}, "")] * 4,
}
ERRORS = {  # student -> words of its one error row
    "folder": "a folder named like a notebook", "dangling": "symbolic link", "fifo": "not a regular file",
    "zero": "symbolic link", "deep": "nested too deeply", "metalist": "metadata is not a mapping",
    "nested": "source is not text", "listid": "id is not a short string", "Müller": "the file is empty",
    "n" * 199 + "…": "the file is empty",  # the name as the CSV keeps it: 200 characters at most
    "=2+5": "the file is empty", "+2+5": "the file is empty",
    "?]0;PWNED??[2Jansi": "the file is empty", "mallory (123)": "the file is empty",
    "pdf": "not a notebook (only .ipynb files are graded)",
}


def _marked(mark: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and mark in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


# This process's graders start their tokens with this, so that a grader another test runs
# beside this one (the other xdist worker's) does not count here.
PREFIX = f"w{os.getpid()}-"


@pytest.fixture(autouse=True)
def _own_tokens(monkeypatch):
    monkeypatch.setenv(sandbox.TOKEN_PREFIX_VARIABLE, PREFIX)


def _tokened() -> set[int]:
    """Processes carrying a token of this test process's graders in their environment."""
    found = set()
    for proc in psutil.process_iter():
        try:
            token = proc.environ().get(sandbox.TOKEN_VARIABLE)
            if token and token.startswith(PREFIX) and proc.status() != psutil.STATUS_ZOMBIE:
                found.add(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def _path_without_bwrap(folder) -> str:
    """A PATH with every program of this one but ``bwrap`` (links in ``folder``): a machine
    where bubblewrap is not installed, as the grader finds it (``shutil.which``)."""
    folder.mkdir()
    for place in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = sorted(os.listdir(place))
        except OSError:
            continue
        for name in names:
            program = os.path.join(place, name)
            if (name != "bwrap" and not os.path.lexists(folder / name) and os.path.isfile(program)
                    and os.access(program, os.X_OK)):
                os.symlink(program, folder / name)
    return str(folder)


def grade_class(root, official, *, sandboxed: bool, as_user: int | None = None, python=None,
                bwrap_absent: bool = False):
    """Build and grade the class under ``root``; return (rows, raw CSV, echo, canaries, tmpdir, out).

    ``bwrap_absent``: not sandboxed because bubblewrap is not on the PATH (else because
    ``MLPAR_GRADING_SANDBOX=none`` says so).
    """
    folder, tmpdir = root / "submissions", root / "tmp"
    tmpdir.mkdir()
    home_canary = os.path.expanduser(f"~/.mlpar-hostile-canary-{os.getpid()}")
    canaries = [root / "canary.txt", home_canary]
    (root / "canary.txt").write_text("canary")
    mark = f"301.{os.getpid()}{time.monotonic_ns() % 10**6}"
    make_class(official, folder, canaries, mark, sandboxed)
    out = root / "out" / "grades.csv"
    out.parent.mkdir()
    command = [python or sys.executable, "-m", "mlpar.course", "grade", str(folder), "--out", str(out),
               "--jobs", "2", "--seed", str(SEED), "--timeout", str(TIMEOUT), "--memory", "3072",
               "--feedback", str(root / "out" / "feedback")]
    env = dict(os.environ, TMPDIR=str(tmpdir),
               **{sandbox.SANDBOX_VARIABLE: "bwrap" if sandboxed else "none"})
    if bwrap_absent:
        assert not sandboxed
        env.pop(sandbox.SANDBOX_VARIABLE)
        env["PATH"] = _path_without_bwrap(root / "bin-without-bwrap")
    if as_user is not None:
        for path in [root, folder, tmpdir, out.parent]:
            os.chmod(path, 0o777)
        command = [shutil.which("setpriv"), f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups",
                   *command]
        env.pop("VIRTUAL_ENV", None)
        env["HOME"] = str(tmpdir)
    before = _tokened()
    done = subprocess.run(command, capture_output=True, env=env, timeout=600, cwd=root)
    echo = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, echo + done.stderr.decode("utf-8", "replace")
    # nothing of the class runs once the grader has returned (no waiting: issue 36)
    assert _tokened() - before == set() and _marked(mark) == []
    rows = report.read_rows(out)
    with open(out, newline="", encoding="utf-8") as f:
        raw = list(csv.reader(f))
    return rows, raw, echo, canaries, tmpdir, root / "out"


@pytest.fixture(scope="module")
def official():
    """Lesson 00 as ``make student`` writes it into ``student/``."""
    import nbformat

    return json.loads(nbformat.writes(student_notebook(read_notebook(NOTEBOOKS / f"{LESSON}.ipynb"), LESSON)))


def _check(rows, raw, echo, canaries, tmpdir, out, sandboxed):
    by_student: dict[str, list[dict]] = {}
    for row in rows:
        by_student.setdefault(row["student"], []).append(row)
    expected = {k: v for k, v in GRADED.items() if sandboxed or k != "saboteur"}
    assert set(by_student) == set(expected) | set(ERRORS) | {"forger"}
    for student, cases in expected.items():
        mine = by_student[student]
        assert [r["exercise"] for r in mine] == EXERCISES, student
        for row, (passed, flags, words) in zip(mine, cases):
            where = f"{student}/{row['exercise']}: {row}"
            assert int(row["passed"]) == passed, where
            assert flags <= set(filter(None, row["flags"].split(";"))), where
            assert words in row["message"], where
    # the forged events are not believed: no point, whatever else the flags say
    assert [int(r["passed"]) for r in by_student["forger"]] == [0, 0, 0, 0]
    for student, words in ERRORS.items():
        (row,) = by_student[student]
        assert row["exercise"] == "" and row["flags"] == "error" and words in row["message"], row
    # spreadsheet formulas neutralised, and read back exactly
    fields = [f for line in raw[1:] for f in line]
    assert not any(f.startswith(("=", "+", "-", "@")) for f in fields)
    assert "'=2+5" in fields and "'+2+5" in fields
    # no control character reaches the CSV or the terminal
    assert not any(c in "".join(fields) + echo for c in "\x1b\x07")
    # one feedback file per student, none shared, none too long
    feedback = sorted(os.listdir(out / "feedback"))
    assert len(feedback) == len(by_student) and all(len(name.encode()) < 100 for name in feedback)
    assert f"{file_stem('Zoë')}.md" in feedback
    # nothing left in TMPDIR; nothing outside the scratch folders written
    assert os.listdir(tmpdir) == [] or all(n.startswith(".") for n in os.listdir(tmpdir))
    # the isolation is named on the first lines and again on the final one
    first, last = echo.splitlines()[1], echo.splitlines()[-1]
    if sandboxed:
        assert canaries[0].read_text() == "canary" and not os.path.exists(canaries[1])
        assert first == "isolation: bubblewrap sandbox" and "NOT sandboxed" not in last, echo
    else:
        assert first.startswith("isolation: process groups only, NOT sandboxed (") and "NOT sandboxed" in last
    return first


def test_the_hostile_class(official, tmp_path, monkeypatch):
    try:
        monkeypatch.setenv(sandbox.SANDBOX_VARIABLE, "bwrap")
        sandboxed = sandbox.isolation()[0] == "bwrap"
    except sandbox.SandboxUnavailable:
        sandboxed = False
    _check(*grade_class(tmp_path, official, sandboxed=sandboxed), sandboxed)


def test_resume_survives_a_cut_row_and_a_garbage_row(tmp_path):
    out = tmp_path / "grades.csv"
    book = report.GradeBook(out)
    sha = "a" * 64
    book.add([{"student": "=ann", "lesson": LESSON, "exercise": e, "passed": 1, "message": "-x",
               "flags": "", "seconds": "0.10", "sha256": sha, "file": "f.ipynb"} for e in EXERCISES])
    book.add([{"student": "bob", "lesson": LESSON, "exercise": e, "passed": 1, "message": "",
               "flags": "", "seconds": "0.10", "sha256": "b" * 64, "file": "f.ipynb"} for e in EXERCISES])
    text = out.read_bytes()
    out.write_bytes(text[: len(text) - 40] + b"\nnot,a,row\n" + text[len(text) - 40: len(text) - 20])  # cut
    again = report.GradeBook(out, resume=True)
    assert ("=ann", sha) in again.done({LESSON: 4})  # whole, and its name read back exactly
    assert ("bob", "b" * 64) not in again.done({LESSON: 4})  # its last row was cut: graded again
    again.add([{"student": "bob", "lesson": LESSON, "exercise": e, "passed": 0, "message": "",
                "flags": "", "seconds": "0.10", "sha256": "b" * 64, "file": "f.ipynb"} for e in EXERCISES])
    rows = report.read_rows(out)
    assert report.points(rows)["bob"][LESSON] == (0, 4) and report.points(rows)["=ann"][LESSON] == (4, 4)
    summary = tmp_path / "summary.csv"
    report.write_summary(rows, summary)
    assert "'=ann" in summary.read_text()


_AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _python_for_nobody(folder) -> tuple[str | None, str]:
    """A Python an unprivileged user can start with the course importable, or (None, why not).

    The course's own interpreter may live under a folder only root can search (a pyenv in
    /root): then a venv of the system's Python of the same minor version, with the course's
    site-packages added by a ``.pth`` file (read even under ``python -I``).
    """
    if os.getuid() != 0:
        return None, "needs root to switch to an unprivileged user"
    if not shutil.which("setpriv"):
        return None, "setpriv is not installed"
    probe = [sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', "
             "'import mlpar.course.grading'], check=True)"]
    if subprocess.run(_AS_NOBODY + probe, capture_output=True).returncode == 0:
        return sys.executable, ""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    places = (f"/usr/bin/{version}", f"/usr/local/bin/{version}")
    system = next((p for p in places if os.path.exists(p)), None)
    if system is None:
        return None, "no system Python of the course's version for an unprivileged user"
    venv = folder / "venv-nobody"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    import sysconfig

    (next(venv.glob("lib/python*/site-packages")) / "course.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n" + os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))) + "\n")
    python = str(venv / "bin" / "python")
    if subprocess.run(_AS_NOBODY + [python, "-I", "-c", "import mlpar.course.grading, numpy"],
                      capture_output=True).returncode != 0:
        return None, "the course cannot be imported by an unprivileged user"
    return python, ""


@pytest.mark.slow
@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "bwrap-absent"])
def test_the_hostile_class_as_each_user_with_and_without_the_sandbox(official, tmp_path, user, sandboxed,
                                                                      monkeypatch):
    if not os.environ.get("MLPAR_SLOW_TESTS"):
        pytest.skip("set MLPAR_SLOW_TESTS=1")
    if sandboxed:
        monkeypatch.setenv(sandbox.SANDBOX_VARIABLE, "bwrap")
        try:
            sandbox.isolation()
        except sandbox.SandboxUnavailable as exc:
            pytest.skip(str(exc))
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp(prefix="mlpar-hostile-", dir="/tmp"))  # pytest's is private to root
    os.chmod(root, 0o777)
    try:
        python = None
        if user == "nobody":
            python, why = _python_for_nobody(root)
            if python is None:
                pytest.skip(why)
        first = _check(*grade_class(root, official, sandboxed=sandboxed, python=python,
                                    as_user=65534 if user == "nobody" else None,
                                    bwrap_absent=not sandboxed), sandboxed)
        if not sandboxed:  # graded anyway, and the reason said
            assert "bubblewrap (bwrap) is not installed" in first, first
    finally:
        shutil.rmtree(root, ignore_errors=True)
