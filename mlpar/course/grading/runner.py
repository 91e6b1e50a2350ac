"""The grading process: runs one rebuilt submission and reports each check, one JSON line each.

Started by :mod:`mlpar.course.grading.sandbox` as ``python -I -m mlpar.course.grading.runner
FD MEMORY FILESIZE NPROC`` with the job (:func:`mlpar.course.grading.rebuild.rebuild`) on stdin.
It runs the cells in order in an IPython shell, as a kernel would. A check is not the notebook's
check cell: the runner calls the check function it imported from the instructor's ``mlpar``
before any student code ran, after :class:`~mlpar.course.grading.integrity.Snapshot` has put
back whatever student code changed. Results go to the pipe whose file descriptor is on the
command line (:mod:`~mlpar.course.grading.channel`), one line per event, written as they happen,
so what was graded before a crash or a timeout survives it.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
import time
import traceback


def _first_line(text: str, limit: int = 300) -> str:
    line = next((x.strip() for x in str(text).splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _memory_error(exc: BaseException | None) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class Report:
    """Events, one JSON line each, on the pipe the grader passed (its file descriptor)."""

    def __init__(self, fd: int):
        self._fd = fd

    def __call__(self, **event) -> None:
        data = (json.dumps(event) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data):]


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    return InteractiveShell.instance(config=config)


class StepTimeout(BaseException):
    """A solution cell or a check ran past its share of the time (not an ``Exception``, so the
    checks' ``call`` does not turn it into a wrong answer)."""


@contextlib.contextmanager
def step_limit(seconds: float | None):
    """Raise :class:`StepTimeout` in this (main) thread after ``seconds`` (None: no limit)."""
    import signal

    if not seconds:
        yield
        return

    def expire(signum, frame):
        raise StepTimeout(f"ran past the {seconds:g} s limit of one step")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_cell(shell, source: str):
    """Run a cell like a kernel; return the exception it raised or None."""
    result = shell.run_cell(source, store_history=False, silent=False)
    return result.error_in_exec or result.error_before_exec


def run(job: dict, report: Report) -> None:
    os.environ["MLPAR_GRADING_SEED"] = str(job["seed"])
    os.environ.setdefault("MPLBACKEND", "Agg")
    checks, broken = {}, {}
    for cell in job["cells"]:  # the instructor's checks, imported before any student code runs
        if cell["kind"] == "check":
            try:
                checks[cell["exercise"]] = getattr(importlib.import_module(cell["module"]), cell["check"])
            except (ImportError, AttributeError) as exc:
                broken[cell["exercise"]] = (f"error: the official check {cell['module']}.{cell['check']} "
                                            f"cannot be loaded ({type(exc).__name__}: {_first_line(exc)}); "
                                            "the course's notebook and its mlpar disagree")
    from mlpar.course.grading.integrity import Snapshot, check_altered

    shell = _shell()
    snapshot = None
    cell_errors: list[str] = []
    solution_errors: dict[str, str] = {}
    timed_out: set[str] = set()
    step = job.get("step_timeout")
    started = time.perf_counter()
    for cell in job["cells"]:
        kind = cell["kind"]
        if kind == "official":
            error = _run_cell(shell, cell["source"])
            if error is not None:
                cell_errors.append(f"official cell {cell['label']} raised {type(error).__name__}: "
                                   f"{_first_line(error)}")
            continue
        if kind == "solution":
            if snapshot is None:
                snapshot = Snapshot()
            report(event="start", exercise=cell["exercises"][0], stage="solution")
            with step_limit(step):
                error = _run_cell(shell, cell["source"])
            if isinstance(error, StepTimeout):
                timed_out.update(cell["exercises"])
                message = f"timeout: your solution cell {error}; the exercise counts as not done"
                solution_errors.update(dict.fromkeys(cell["exercises"], message))
                report(event="solution_error", exercises=cell["exercises"], message=message, memory=False)
            elif error is not None:
                message = f"your solution cell raised {type(error).__name__}: {_first_line(error)}"
                solution_errors.update(dict.fromkeys(cell["exercises"], message))
                report(event="solution_error", exercises=cell["exercises"], message=message,
                       memory=_memory_error(error))
            continue
        name = cell["exercise"]
        report(event="start", exercise=name, stage="check")
        if snapshot is None:
            snapshot = Snapshot()
        changes = snapshot.restore()
        altered = check_altered(changes, cell["module"])
        flags = ["tampering"] if changes else []  # put back; the check judges the answer as usual
        detail = [f"restored before the check: {c}" for c in changes]
        t0 = time.perf_counter()
        passed, message = False, ""
        if name in solution_errors and "MemoryError" in solution_errors[name]:
            flags.append("memory")
        if name in timed_out:
            message, flags = solution_errors[name], flags + ["timeout"]
        elif name in broken:
            message, flags = broken[name], flags + ["error"]
        elif cell.get("missing"):
            message, flags = cell["missing"], flags + ["missing_solution"]
        elif altered:
            message = f"the check's own code was altered at run time ({altered[0]})"
        elif cell["argument"] not in shell.user_ns:
            message = solution_errors.get(name) or (
                f"`{cell['argument']}` is not defined after your solution cell ran"
                + (f"; {cell_errors[-1]}" if cell_errors else ""))
        else:
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out), step_limit(step):
                    checks[name](shell.user_ns[cell["argument"]])
                passed = True
            except StepTimeout as exc:
                message = f"timeout: your function, called by the check, {exc}"
                flags.append("timeout")
            except AssertionError as exc:
                message = _first_line(exc) or "the check failed"
                if _memory_error(exc):
                    flags.append("memory")
            except MemoryError:
                message = f"memory: ran past the {job['memory_mb']} MB address-space limit (MemoryError)"
                flags.append("memory")
            except BaseException as exc:  # noqa: BLE001  (sys.exit in a student function, a check bug)
                message = f"the check stopped with {type(exc).__name__}: {_first_line(exc)}"
                detail.append("".join(traceback.format_exception_only(type(exc), exc)).strip())
            during = snapshot.restore()  # what the student's function changed while it was checked
            if during:
                passed = False
                message = (f"your function changed {during[0]} while the check ran; "
                           "a check cannot be trusted then")
                flags.append("tampering")
                detail += [f"restored after the check: {c}" for c in during]
        if not passed and "memory" in flags and not message.startswith("memory"):
            message = f"memory: ran past the {job['memory_mb']} MB address-space limit; {message}"
        report(event="check", exercise=name, passed=passed, message=message, flags=flags,
               detail=detail, seconds=round(time.perf_counter() - t0, 3))
    report(event="done", seconds=round(time.perf_counter() - started, 3), cell_errors=cell_errors)


def limit(memory_bytes: int, file_bytes: int, processes: int = 0) -> None:
    """Address space, file size, core dumps and process count, for this process and its children.

    ``processes``: ``RLIMIT_NPROC``, counted by the grader (0: leave it; root is exempt anyway).
    """
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if processes > 0:
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        if hard == resource.RLIM_INFINITY or processes < hard:
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


def main() -> int:
    limit(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    job = json.loads(sys.stdin.read())
    report = Report(int(sys.argv[1]))
    run(job, report)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: student threads or atexit hooks cannot stall it


if __name__ == "__main__":
    sys.exit(main())
