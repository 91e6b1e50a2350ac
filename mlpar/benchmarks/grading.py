"""Benchmark family ``grading``: what grading costs, against running the notebooks.

    python -m mlpar.bench grading            # every lesson; a class of 30
    python -m mlpar.bench grading --quick    # lessons 00 and 01; a class of 6

Figures (one run):

* ``lessons``: for each lesson, the seconds to execute the whole instructor notebook in a fresh
  kernel (what ``pytest --nbval-lax`` grading pays per submission) and the seconds the grader
  takes for that same notebook submitted (one sandboxed grading process: its grading cells,
  the solution cells and the checks); ``ratio`` = grading ÷ full (target: at most
  ``TARGET_RATIO``).
* ``class``: a class of ``CLASS_SIZE`` students (the instructor's answers, each copy made a
  distinct file) of lesson ``CLASS_LESSON``, graded with ``python -m mlpar.course grade --jobs
  <usable cores>`` as configured here (in the bubblewrap sandbox where it works): wall-clock
  seconds (target: at most ``TARGET_CLASS_SECONDS`` on 2 cores), and the isolation used.
* ``sandbox``: what the sandbox itself costs: one notebook of ``CLASS_LESSON`` graded
  ``SANDBOX_REPEATS`` times in the sandbox and as many times without it (alternating, one at a
  time), median seconds of each and their difference per notebook. Absent where bubblewrap
  cannot run.

Timings on a shared machine vary; they are measured, never assumed.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 0.3
TARGET_CLASS_SECONDS = 300.0
CLASS_SIZE = 30
CLASS_LESSON = "01_loops_to_threads"
SANDBOX_REPEATS = 5
QUICK_LESSONS = ("00_index", "01_loops_to_threads")


def _full_run_seconds(path: Path) -> float:
    from mlpar.course.lessons import read_notebook
    from mlpar.course.run import client_for

    nb = read_notebook(path)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    start = time.perf_counter()
    client_for(nb, path).execute()
    return time.perf_counter() - start


def _grading_seconds(lesson: str, plans) -> float:
    from mlpar.course.grading import sandbox
    from mlpar.course.grading.rebuild import rebuild
    from mlpar.course.lessons import NOTEBOOKS

    plan, instructor = plans[lesson]
    nb = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    start = time.perf_counter()
    job = rebuild(plan, nb, seed=1, instructor_cells=instructor).job
    outcome = sandbox.run_job(job, timeout=600, memory_mb=8192)
    seconds = time.perf_counter() - start
    if not outcome.finished:
        raise RuntimeError(f"{lesson}: the grading process did not finish: {outcome.output[-500:]}")
    return seconds


def _sandbox_cost(lesson: str, plans, repeats: int) -> dict | None:
    """Median seconds of one notebook graded in the sandbox and without it (see the module)."""
    import os
    import statistics

    from mlpar.course.grading import sandbox

    try:
        if sandbox.isolation()[0] != "bwrap":
            return None
    except sandbox.SandboxUnavailable:
        return None
    times = {"bwrap": [], "none": []}
    before = os.environ.get(sandbox.SANDBOX_VARIABLE)
    try:
        for _ in range(repeats):
            for how in times:
                os.environ[sandbox.SANDBOX_VARIABLE] = how
                times[how].append(_grading_seconds(lesson, plans))
    finally:
        if before is None:
            os.environ.pop(sandbox.SANDBOX_VARIABLE, None)
        else:
            os.environ[sandbox.SANDBOX_VARIABLE] = before
    sandboxed, bare = statistics.median(times["bwrap"]), statistics.median(times["none"])
    return {"lesson": lesson, "repeats": repeats, "sandboxed_s": sandboxed, "bare_s": bare,
            "cost_s": sandboxed - bare}


def _class_seconds(lesson: str, size: int, jobs: int) -> dict:
    from mlpar.course.grading.grade import Options, grade
    from mlpar.course.lessons import NOTEBOOKS

    nb = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="mlpar-bench-grading-") as tmp:
        folder = Path(tmp) / "class"
        for k in range(size):
            mine = dict(nb, cells=nb["cells"] + [{"cell_type": "markdown", "id": f"note-{k}",
                                                  "metadata": {}, "source": f"student {k}"}])
            (folder / f"student{k:02d}").mkdir(parents=True)
            (folder / f"student{k:02d}" / f"{lesson}.ipynb").write_text(json.dumps(mine))
        start = time.perf_counter()
        rows = grade(folder, Path(tmp) / "grades.csv", jobs=jobs,
                     options=Options(timeout=600, memory_mb=8192), echo=lambda *_: None)
        seconds = time.perf_counter() - start
    from mlpar.course.grading import sandbox

    passed = sum(r["passed"] for r in rows)
    return {"lesson": lesson, "students": size, "jobs": jobs, "seconds": seconds,
            "rows": len(rows), "passed": passed, "isolation": sandbox.isolation()[0]}


def run(quick: bool = False) -> dict:
    from mlpar.core.environment import usable_cores
    from mlpar.course.grading.grade import official_plans
    from mlpar.course.lessons import NOTEBOOKS

    plans = official_plans(NOTEBOOKS)
    lessons = [lesson for lesson in plans if not quick or lesson in QUICK_LESSONS]
    table = {}
    for lesson in lessons:
        full = _full_run_seconds(NOTEBOOKS / f"{lesson}.ipynb")
        graded = _grading_seconds(lesson, plans)
        table[lesson] = {"full_s": full, "grading_s": graded, "ratio": graded / full}
    cores = usable_cores()
    return {"lessons": table, "cores": cores,
            "class": _class_seconds(CLASS_LESSON, 6 if quick else CLASS_SIZE, cores),
            "sandbox": _sandbox_cost(CLASS_LESSON, plans, 3 if quick else SANDBOX_REPEATS)}


def report(figures: dict) -> str:
    lines = [f"{'lesson':<22}{'full notebook':>15}{'grading':>10}{'ratio':>8}  (target ≤ {TARGET_RATIO})"]
    for lesson, f in figures["lessons"].items():
        mark = "✓" if f["ratio"] <= TARGET_RATIO else "✗"
        lines.append(f"{lesson:<22}{f['full_s']:>13.1f} s{f['grading_s']:>8.1f} s{f['ratio']:>8.2f}  {mark}")
    c = figures["class"]
    mark = "✓" if c["seconds"] <= TARGET_CLASS_SECONDS else "✗"
    lines.append(
        f"class of {c['students']} × {c['lesson']} with --jobs {c['jobs']} ({figures['cores']} usable "
        f"cores): {c['seconds']:.1f} s (target ≤ {TARGET_CLASS_SECONDS:.0f} s on 2 cores) {mark}; "
        f"{c['passed']} of {c['rows']} checks passed"
        + (f"; isolation: {c['isolation']}" if "isolation" in c else ""))
    cost = figures.get("sandbox")
    if "sandbox" not in figures:
        pass
    elif cost:
        lines.append(f"sandbox cost per notebook ({cost['lesson']}, median of {cost['repeats']}): "
                     f"{cost['sandboxed_s']:.2f} s in bubblewrap, {cost['bare_s']:.2f} s without, "
                     f"{cost['cost_s']:+.2f} s")
    else:
        lines.append("sandbox cost: not measured (bubblewrap cannot run here)")
    return "\n".join(lines)
