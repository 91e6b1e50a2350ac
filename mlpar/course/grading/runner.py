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

import importlib
import json
import os
import sys
import time

from mlpar.course.grading.steps import StepTimeout, step_limit  # noqa: F401  (the checker's too)
from mlpar.course.grading.steps import first_line as _first_line
from mlpar.course.grading.steps import memory_error as _memory_error


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


def serve(calls: dict, name: str, function, step, flags: list, detail: list) -> bool:
    """Answer the checker's calls of ``function`` for the check ``name``, as plain data.

    Returns False when the checker hands the check back (it passes something that is not
    plain data): the runner then judges it here, as an observing check.
    """
    from mlpar.course.grading import plain

    requests, answers = calls["requests"], calls["answers"]
    plain.send(answers, {"serve": name, "flags": flags, "detail": detail})
    while True:
        try:
            message = plain.receive(requests)
        except plain.ChannelClosed:
            return True
        if message.get("end"):
            return True
        if message.get("in_process"):
            return False
        seq = message.get("seq")
        try:
            args, kwargs = (plain.decode(part) for part in message["call"])
        except (KeyError, ValueError, TypeError):
            plain.send(answers, {"seq": seq, "refused": "the grader sent a call it cannot read"})
            continue
        try:
            with step_limit(step):
                result = function(*args, **kwargs)
        except StepTimeout as exc:
            plain.send(answers, {"seq": seq, "raise": ["StepTimeout", str(exc)]})
            continue
        except BaseException as exc:  # noqa: BLE001  (reported to the check as the function's error)
            plain.send(answers, {"seq": seq, "raise": [type(exc).__name__, str(exc)]})
            continue
        try:
            reply = {"seq": seq, "return": plain.encode(result, strict=False),
                     "args": plain.encode(args, strict=False)}
            plain.send(answers, reply)
        except plain.NotPlain as exc:
            plain.send(answers, {"seq": seq, "refused": f"your function returned {exc}; return numbers, "
                                 "lists or numpy arrays"})
        except (RecursionError, ValueError, OverflowError) as exc:
            plain.send(answers, {"seq": seq, "refused": f"your function returned something that cannot be "
                                 f"sent as data ({type(exc).__name__})"})


def serve_error(calls: dict, name: str, message: str, flags: list, detail: list) -> None:
    """Tell the checker this value check cannot run (no solution, a timeout, …): it reports it."""
    from mlpar.course.grading import plain

    plain.send(calls["answers"], {"serve": name, "error": message, "flags": flags, "detail": detail})


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
    from mlpar.course.grading.checker import judge
    from mlpar.course.grading.integrity import Snapshot, check_altered

    shell = _shell()
    snapshot = None
    cell_errors: list[str] = []
    solution_errors: dict[str, str] = {}
    timed_out: set[str] = set()
    step = job.get("step_timeout")
    calls = job.get("channel")  # {"requests": fd, "answers": fd}: value checks run in the checker
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
        value_check = calls is not None and not cell.get("observing")
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
        elif value_check and serve(calls, name, shell.user_ns[cell["argument"]], step, flags, detail):
            continue  # judged by the checker, in its own process
        else:
            value_check = False  # handed back by the checker: judged here
            # the module's attribute, just restored by the snapshot, not the runner's own dict
            # (a solution can reach the runner's locals through its frames: inspect.stack())
            check = getattr(sys.modules[cell["module"]], cell["check"], None)
            if check is not checks[name]:
                flags.append("tampering")
                detail.append("the grader's copy of the check was replaced at run time")
            passed, message, more, found = judge(check, shell.user_ns[cell["argument"]], step,
                                                 job["memory_mb"])
            flags += more
            detail += found
            during = snapshot.restore()  # what the student's function changed while it was checked
            if during:
                passed = False
                message = (f"your function changed {during[0]} while the check ran; "
                           "a check cannot be trusted then")
                flags.append("tampering")
                detail += [f"restored after the check: {c}" for c in during]
        if not passed and "memory" in flags and not message.startswith("memory"):
            message = f"memory: ran past the {job['memory_mb']} MB address-space limit; {message}"
        if value_check:
            serve_error(calls, name, message, flags, detail)  # the checker writes this row
            continue
        report(event="check", exercise=name, passed=passed, message=message, flags=flags,
               detail=detail, seconds=round(time.perf_counter() - t0, 3), observed=True)
    report(event="done", seconds=round(time.perf_counter() - started, 3), cell_errors=cell_errors)


def limit(memory_bytes: int, file_bytes: int, processes: int = 0) -> None:
    """Address space, file size, core dumps and process count, for this process and its children.

    ``processes``: ``RLIMIT_NPROC``, counted by the grader (0: leave it; root is exempt anyway).
    """
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ValueError, OSError):  # macOS refuses address-space limits (EINVAL); on Linux only a
        pass                       # lower hard limit, already in force, refuses it: grade on
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
