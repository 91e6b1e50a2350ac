"""Grading a class: find submissions, rebuild each, run it in a sandbox, write the grades.

:func:`grade` is ``python -m mlpar.course grade``. The lessons are read from the instructor's
notebooks (their student edition is built in memory, so a stale ``student/`` folder cannot
skew a grade). Each submission runs in its own process (:mod:`~mlpar.course.grading.sandbox`),
``jobs`` at a time here, or on the workers of an existing Dask cluster (``scheduler``). One
random seed is drawn per grading run and handed to every check (``MLPAR_GRADING_SEED``).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from mlpar.course.grading import report, sandbox, submissions
from mlpar.course.grading.csv_safety import printable
from mlpar.course.grading.plan import LessonPlan, cell_source, lesson_plan
from mlpar.course.grading.rebuild import rebuild


class GraderError(RuntimeError):
    """The grader itself cannot run (not a student's fault): exit code 2."""


class _Node(dict):
    """A dict whose keys read as attributes too, like nbformat's ``NotebookNode`` (what
    ``student_notebook`` reads), without importing nbformat: its validator's imports
    (jsonschema and the grammars of its formats) took 2 s of every ``grade`` command."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


def _node(value):
    if isinstance(value, dict):
        return _Node({k: _node(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return [_node(v) for v in value]
    return value


def official_plans(folder: Path) -> dict[str, tuple[LessonPlan, list]]:
    """lesson stem -> (plan on the official student edition, the instructor's cells)."""
    import json

    from mlpar.course.lessons import lesson_paths
    from mlpar.course.student_edition import student_notebook

    plans = {}
    for path in lesson_paths(Path(folder)):
        instructor = json.loads(path.read_text(encoding="utf-8"))
        cells = instructor["cells"]
        for cell in cells:
            cell["source"] = cell_source(cell)
        # not validated: the instructor's notebooks are trusted; validating costs seconds
        student = json.loads(json.dumps(student_notebook(_node(instructor))))
        plan = lesson_plan(path.stem, cells)
        plan.cells = student["cells"]
        if plan.exercises:
            plans[path.stem] = (plan, cells)
    if not plans:
        raise GraderError(f"official: no lesson with exercises in {folder}; give the instructor's "
                          "notebooks (with their # BEGIN SOLUTION cells), not the student edition")
    return plans


@dataclass
class Options:
    timeout: float = 300.0
    memory_mb: int = 4096
    seed: int = field(default_factory=lambda: 1 + secrets.randbelow(2**31 - 2))


def _row(sub, exercise: str, passed: bool, message: str, flags, seconds: float = 0.0) -> dict:
    """One row; every student-controlled field printable (no terminal escapes), bounded."""
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        seconds = 0.0
    return {"student": printable(sub.student, 200), "lesson": sub.lesson or "", "exercise": exercise,
            "passed": int(passed is True or passed == 1), "message": printable(message, 500),
            "flags": report.flag_text(flags), "seconds": f"{seconds:.2f}", "sha256": sub.sha256,
            "file": printable(sub.name, 200)}


def prepare(sub, plans, options: Options):
    """``(job, rebuilt)`` to run, or ``(None, error rows)`` for a file that cannot be graded."""
    if sub.error:
        return None, [_row(sub, "", False, sub.error, ["error"])]
    if sub.lesson not in plans:
        return None, [_row(sub, "", False, f"{sub.name}: lesson {sub.lesson} has no graded exercises",
                           ["error"])]
    plan, instructor = plans[sub.lesson]
    rebuilt = rebuild(plan, sub.notebook, options.seed, instructor)
    solved_somewhere = any(c["kind"] == "solution" for c in rebuilt.job["cells"])
    if not rebuilt.matched_any and not solved_somewhere:
        return None, [_row(sub, "", False, f"{sub.name}: does not look like lesson {sub.lesson} of "
                           "this course (none of its cells is a cell of the lesson)", ["error"])]
    return rebuilt, []


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def rows_from(sub, plan: LessonPlan, rebuilt, outcome: sandbox.Outcome, options: Options) -> list[dict]:
    """One row per exercise of the lesson, from what the grading process reported."""
    checks = {e["exercise"]: e for e in outcome.events if e.get("event") == "check"}
    during = outcome.last_started()
    where = f" while running exercise {during}" if during else ""
    memory_hint = any(s in outcome.output for s in ("MemoryError", "bad_alloc", "Cannot allocate memory",
                                                     "std::bad_alloc", "out of memory"))
    # tampering anywhere puts the whole submission under review: every row carries the flag
    tampered = (bool(rebuilt.tampering) or bool(outcome.bad_lines)
                or any("tampering" in e.get("flags", []) for e in checks.values()))
    rows = []
    for e in plan.exercises:
        flags = list(rebuilt.flags) + (["tampering"] if tampered else [])
        event = checks.get(e.name)
        if event is not None:
            flags += event.get("flags", [])
            message = event.get("message", "")
            if event.get("passed") and "tampering" in flags:
                found = (rebuilt.tampering.get(e.name) or event.get("detail")
                         or [f for fs in rebuilt.tampering.values() for f in fs])
                message = f"passed; flagged: {found[0]}" if found else message
            rows.append(_row(sub, e.name, event.get("passed"), message, flags, event.get("seconds", 0.0)))
            continue
        if outcome.timed_out:
            flags.append("timeout")
            message = f"timeout: stopped at the {options.timeout:g} s wall-clock limit{where}"
        elif memory_hint:
            flags.append("memory")
            message = f"memory: ran past the {options.memory_mb} MB address-space limit{where}"
        elif outcome.returncode is not None and outcome.returncode < 0:
            flags.append("crashed")
            message = f"crashed: the grading process died with {_signal_name(outcome.returncode)}{where}"
        elif not outcome.finished:
            flags.append("crashed")
            message = (f"crashed: the grading process exited with code {outcome.returncode} before "
                       f"this check ran{where} (os._exit or sys.exit in a solution?)")
        else:
            flags.append("error")
            message = "error: the grading process finished without running this check"
        rows.append(_row(sub, e.name, False, message, flags))
    return rows


def notes_of(rebuilt, outcome) -> list[str]:
    notes = list(rebuilt.notes)
    if outcome.bad_lines:
        notes.append(f"tampering: the grading process's channel carried {outcome.bad_lines} line(s) "
                     "that were not the grader's own events (not believed)")
    for name, found in rebuilt.tampering.items():
        notes += [f"tampering in the solution of {name}: {f}" for f in found]
    for event in outcome.events:
        notes += [f"{event.get('exercise')}: {d}" for d in event.get("detail", [])]
    return notes


def connect(address: str):
    """A client of the Dask scheduler at ``address`` whose workers all run this mlpar version.

    Uses ``mlpar.cluster.dask_cluster.connect`` (which checks every worker before any task is
    sent); its refusal becomes a :class:`GraderError`.
    """
    from mlpar.cluster import dask_cluster

    try:
        return dask_cluster.connect(address)
    except (dask_cluster.ClusterError, ValueError, TypeError) as exc:
        raise GraderError(f"scheduler: {exc}") from exc


def grade(folder: Path, out: Path, *, official: Path | None = None, jobs: int = 1,
          scheduler: str | None = None, options: Options | None = None, resume: bool = False,
          summary: Path | None = None, feedback: Path | None = None, echo=print) -> list[dict]:
    """Grade every notebook under ``folder`` into ``out``; return the rows of this run."""
    from mlpar.course.lessons import NOTEBOOKS

    options = options or Options()
    folder = Path(folder)
    try:
        is_folder = folder.is_dir() and os.access(folder, os.R_OK | os.X_OK)
    except OSError:
        is_folder = False
    if not is_folder:
        raise GraderError(f"submissions: expected a folder of notebooks this user can read, got {folder}")
    if jobs < 1:
        raise GraderError(f"jobs: expected 1 or more, got {jobs}")
    if not hasattr(os, "killpg"):  # native Windows: the fallback's process groups and limits are missing
        raise GraderError("this system has no process groups or resource limits (native Windows); grade "
                          "inside WSL 2, where bubblewrap installs as on Ubuntu (see docs/grading.md)")
    try:  # one probe, not an error row per file: this user must be able to start the grading Python
        subprocess.run([sys.executable, "-I", "-B", "-c", "pass"], check=True, capture_output=True,
                       timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GraderError(f"this user cannot start the course's Python {sys.executable} for the grading "
                          f"processes ({exc}); grade as a user who can, or install the course where "
                          "that user can read it") from exc
    plans = official_plans(official or NOTEBOOKS)
    lessons = sorted(plans)
    how, why = sandbox.isolation()
    sandbox.allow_jobs()  # an earlier grade() in this process may have been stopped
    sandbox.hide(folder, Path(out).parent, summary and Path(summary).parent, feedback,
                 official or NOTEBOOKS)
    book = report.GradeBook(out, resume=resume)
    done = book.done({lesson: len(plan.exercises) for lesson, (plan, _) in plans.items()})
    found = submissions.find(folder, lessons)
    for sub in found:  # the sha256 of each file, read with bounds and dropped: no notebook kept
        if sub.error is None:
            submissions.digest(sub)
    todo = [s for s in found if (printable(s.student, 200), s.sha256) not in done]
    echo(f"grading {len(todo)} file(s) of {len({s.student for s in found})} student(s)"
         + (f", {len(found) - len(todo)} already graded" if len(found) > len(todo) else "")
         + f"; seed {options.seed}")
    echo(f"isolation: {'bubblewrap sandbox' if how == 'bwrap' else 'process groups only, NOT sandboxed'}"
         + ("" if how == "bwrap" else f" ({why}; see docs/grading.md)"))
    if sys.platform == "darwin":
        echo("memory: --memory is not enforced here (macOS refuses address-space limits); "
             "the time limits are")
    rows_all, notes = [], {}

    def finish(sub, rows, seconds):
        book.add(rows)
        rows_all.extend(rows)
        got = sum(r["passed"] for r in rows if r["exercise"])
        total = sum(1 for r in rows if r["exercise"])
        flags = sorted({f for r in rows for f in r["flags"].split(";") if f})
        echo(f"  {printable(sub.student, 40):<16} {sub.lesson or '?':<22} {got}/{total}  {seconds:5.1f} s"
             + (f"  [{', '.join(flags)}]" if flags else ""))

    def grader_error(sub, stage, exc):
        return [_row(sub, "", False, f"{sub.name}: the grader could not {stage} this file "
                     f"({type(exc).__name__}: {str(exc)[:200]}); tell the instructor", ["error"])]

    def prepared():
        """(sub, rebuilt) one file at a time: a notebook is held only while it is rebuilt."""
        for sub in todo:
            try:
                submissions.read(sub, lessons)
                rebuilt, rows = prepare(sub, plans, options)
            except Exception as exc:  # noqa: BLE001  (one file never stops the class)
                rebuilt, rows = None, grader_error(sub, "read", exc)
            sub.notebook = None
            if rebuilt is None:
                finish(sub, rows, 0.0)
            else:
                yield sub, rebuilt

    def complete(sub, rebuilt, outcome):
        try:
            rows = rows_from(sub, plans[sub.lesson][0], rebuilt, outcome, options)
            notes[sub.sha256] = notes_of(rebuilt, outcome)
        except Exception as exc:  # noqa: BLE001
            rows = grader_error(sub, "read the results of", exc)
        finish(sub, rows, outcome.seconds)

    started = time.monotonic()
    if scheduler:
        _grade_on_cluster(scheduler, list(prepared()), options, complete)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {}
            try:
                for sub, rebuilt in prepared():
                    futures[pool.submit(sandbox.run_job, rebuilt.job, timeout=options.timeout,
                                        memory_mb=options.memory_mb)] = (sub, rebuilt)
                for future in as_completed(futures):
                    sub, rebuilt = futures[future]
                    try:
                        outcome = future.result()
                    except Exception as exc:  # noqa: BLE001
                        finish(sub, grader_error(sub, "run", exc), 0.0)
                        continue
                    complete(sub, rebuilt, outcome)
            except KeyboardInterrupt:  # stop now; what is in `out` stays, --resume goes on
                for future in futures:
                    future.cancel()
                sandbox.stop_all()
                raise
    everything = report.read_rows(out)
    if summary:
        report.write_summary(everything, summary)
    if feedback:
        report.write_feedback(everything, feedback, notes)
    echo(f"graded in {time.monotonic() - started:.1f} s: {len(rows_all)} row(s) -> {out}"
         + ("" if how == "bwrap" else "; NOT sandboxed")
         + (f"; summary -> {summary}" if summary else "")
         + (f"; feedback -> {feedback}/" if feedback else ""))
    return rows_all


def _grade_on_cluster(address: str, prepared, options: Options, complete) -> None:
    from distributed import as_completed as dask_completed

    with connect(address) as client:
        futures = {client.submit(sandbox.run_job, rebuilt.job, timeout=options.timeout,
                                 memory_mb=options.memory_mb, pure=False): (sub, rebuilt)
                   for sub, rebuilt in prepared}
        for future in dask_completed(list(futures)):
            complete(*futures[future], future.result())
