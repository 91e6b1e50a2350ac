"""Value checks, judged in a process the student's code never ran in.

A *value check* gives the student's function numbers and arrays and compares what comes back.
The grader runs it here, in a process of its own outside the sandbox, with the check imported
from the installed ``mlpar.exercises``. The check is given a :class:`Proxy` instead of the
function: each call sends its arguments, as plain data (:mod:`~mlpar.course.grading.plain`),
to the grading process (the runner, in the sandbox), which calls the student's function and
sends back its result (and its array and list arguments, which a function may fill in place)
as plain data too. So no frame, patch, subclass or ``__eq__`` of the student's ever reaches
the comparison: ``inspect.stack()`` finds no check to swap, a patched ``numpy.allclose`` patches
another process's numpy, and forged lines on the runner's pipe are not what the grader reads
for these checks (it reads this process's).

An *observing check* must watch the student's code while it runs: which threads, pools,
BLAS thread counts, library functions (``sys.setprofile``), array accesses (watched ndarray
subclasses, recorders) or CUDA kernels it uses. Those stay in the runner, as before
(:func:`observing` says which, from the check's own source; a check that passes a value that
is not plain data, such as an executor, is handed back to the runner at run time too). There a
determined student can still reach the check's frames and the process's state: the flag
``tampering`` and the run-time snapshot (:mod:`~mlpar.course.grading.integrity`) catch the
ways that are known, not every way. The threat model in docs/grading.md lists them.

Started by :mod:`~mlpar.course.grading.sandbox` as ``python -I -B -m
mlpar.course.grading.checker REQUESTS ANSWERS EVENTS`` (three pipe descriptors) with the job
on stdin.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import json
import os
import re
import sys
import time
import traceback

from mlpar.course.grading import plain
from mlpar.course.grading.steps import first_line, memory_error

# What in a check's source (or a helper of its module it reaches) means it watches the
# student's code run, not only its results.
# Looking at the function object itself (its source, its numba options, its attributes) counts.
_OBSERVES = re.compile(r"setprofile|settrace|getprofile|Watched|Recorder|Recording|threading|"
                       r"threadpool|[Ee]xecutor|Parallel|joblib|cuda|\.view\(|__code__|py_func|"
                       r"FunctionType|f_locals|f_back|_getframe|sys\.modules|getsource|inspect\.|"
                       r"hasattr\(|getattr\(|structure\.|targetoptions|njit|numba|signature|"
                       r"__wrapped__")
_CHECK_PACKAGE = "mlpar.exercises"  # the helpers a check takes from here are read too
_MARGIN = 2.0  # seconds a value check may take beyond the step's, for the channel itself
# flags a runner may attach to a value check it could not serve
_SERVE_FLAGS = {"missing_solution", "timeout", "memory", "error", "tampering"}


@functools.cache
def _module_names(module: str) -> tuple[str, dict, dict] | None:
    """``(source, defined, imported)`` of a check module, or None if its source cannot be read.

    ``defined``: its top-level functions, classes and ``NAME = …`` by name; ``imported``: the
    names it takes from the check package (``from mlpar.exercises import call_refusing``, or
    ``from mlpar.exercises import l01_loops_to_threads as _l01``): name -> ``(module, name)``,
    or ``(module, None)`` for a module.
    """
    try:
        source = inspect.getsource(importlib.import_module(module))
        tree = ast.parse(source)
    except (ImportError, OSError, SyntaxError, TypeError):
        return None
    defined = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in tree.body:  # NAME = something: reached like a function
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    defined.setdefault(t.id, n)
    imported = {}
    package = module.rpartition(".")[0]
    for n in tree.body:
        if isinstance(n, ast.ImportFrom):
            base = importlib.util.resolve_name("." * n.level + (n.module or ""), package) if n.level \
                else (n.module or "")
            if base != _CHECK_PACKAGE and not base.startswith(_CHECK_PACKAGE + "."):
                continue
            for alias in n.names:
                try:
                    is_module = inspect.ismodule(getattr(importlib.import_module(base), alias.name, None))
                except ImportError:
                    is_module = False
                imported[alias.asname or alias.name] = ((f"{base}.{alias.name}", None) if is_module
                                                        else (base, alias.name))
        elif isinstance(n, ast.Import):
            for alias in n.names:
                if alias.asname and alias.name.startswith(_CHECK_PACKAGE + "."):
                    imported[alias.asname] = (alias.name, None)
    return source, defined, imported


@functools.cache
def observing(module: str, check: str) -> str | None:
    """Why the check must run beside the student's code (what it watches), or None: a value check.

    The check's source is read, and so is every helper it reaches, in its module or taken from
    another module of the check package (``mlpar.exercises.call_refusing``, whose profiler must
    watch the student's function run).
    """
    todo, seen = [(module, check)], set()
    while todo:
        where, name = todo.pop()
        if (where, name) in seen:
            continue
        seen.add((where, name))
        names = _module_names(where)
        if names is None:
            return "its source cannot be read" + ("" if where == module else f" (nor {where}'s)")
        source, defined, imported = names
        if name not in defined:
            if (where, name) == (module, check):
                return "it is not a function of its module"
            continue  # a constant or a name from outside the check package
        text = ast.get_source_segment(source, defined[name]) or ""
        found = _OBSERVES.search(text)
        if found:
            inside = "" if (where, name) == (module, check) else \
                f" in {name}" if where == module else f" in {where}.{name}"
            return f"it watches the function run ({found.group(0)}{inside})"
        for n in ast.walk(defined[name]):
            if isinstance(n, ast.Name) and n.id in defined:
                todo.append((where, n.id))
            elif isinstance(n, ast.Name) and n.id in imported and imported[n.id][1] is not None:
                todo.append(imported[n.id])
            elif (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in imported
                  and imported[n.value.id][1] is None):
                todo.append((imported[n.value.id][0], n.attr))
    return None


# --- judging a check (here for value checks, in the runner for observing ones) ---------------



class HandOver(BaseException):  # noqa: N818  (a signal to the caller, not an error)
    """The check passes something that is not plain data: run it beside the function instead."""


class RunnerGone(BaseException):  # noqa: N818
    """The grading process ended (or broke the protocol) in the middle of a check."""


def judge(check, function, step: float | None, memory_mb: int) -> tuple[bool, str, list[str], list[str]]:
    """``(passed, message, flags, detail)`` of ``check(function)`` under the step's time limit."""
    from mlpar.course.grading.steps import StepTimeout, step_limit

    flags, detail = [], []
    passed, message = False, ""
    try:
        with contextlib.redirect_stdout(io.StringIO()), step_limit(step):
            check(function)
        passed = True
    except StepTimeout as exc:
        message = f"timeout: your function, called by the check, {exc}"
        flags.append("timeout")
    except AssertionError as exc:
        message = first_line(exc) or "the check failed"
        if memory_error(exc):
            flags.append("memory")
    except MemoryError:
        message = f"memory: ran past the {memory_mb} MB address-space limit (MemoryError)"
        flags.append("memory")
    except (HandOver, RunnerGone):
        raise
    except BaseException as exc:  # noqa: BLE001  (sys.exit in a student function, a check bug)
        message = f"the check stopped with {type(exc).__name__}: {first_line(exc)}"
        detail.append("".join(traceback.format_exception_only(type(exc), exc)).strip())
    if not passed and "memory" in flags and not message.startswith("memory"):
        message = f"memory: ran past the {memory_mb} MB address-space limit; {message}"
    return passed, message, flags, detail


def _exception(name: str, message: str) -> BaseException:
    """An exception the check's ``call`` reports as the student's function raising ``name``."""
    from mlpar.course.grading.steps import StepTimeout

    known = {"NotImplementedError": NotImplementedError, "AssertionError": AssertionError,
             "MemoryError": MemoryError, "StepTimeout": StepTimeout}
    if name in known:
        return known[name](message)
    name = name if name.isidentifier() and len(name) <= 60 else "Exception"
    return type(name, (Exception,), {})(message)


def _copy_back(original, returned) -> None:
    """Put into ``original`` (an array, list or dict argument) what the function left in it."""
    import numpy as np

    if type(original) is np.ndarray and isinstance(returned, np.ndarray):
        if original.shape == returned.shape and original.flags.writeable:
            with contextlib.suppress(TypeError, ValueError):
                np.copyto(original, returned, casting="unsafe")
    elif type(original) is list and isinstance(returned, list):
        if len(original) == len(returned):
            for a, b in zip(original, returned):
                _copy_back(a, b)
            for i, (a, b) in enumerate(zip(original, returned)):
                if not isinstance(a, (list, dict, np.ndarray)):
                    original[i] = b
        else:
            original[:] = returned
    elif type(original) is dict and isinstance(returned, dict):
        original.clear()
        original.update(returned)


class Proxy:
    """Stands for the student's function in a value check: each call crosses as plain data.

    The runner limits each call to the step's time (and answers ``timeout``); here the whole
    check gets the step's time plus a margin, measured at frame boundaries only, so a reply
    is never cut in half.
    """

    def __init__(self, name: str, requests: int, answers: int, step: float | None):
        self.__name__ = self.__qualname__ = name
        self._requests, self._answers, self._step = requests, answers, step
        self._seq = 0
        self._deadline = None if step is None else time.monotonic() + step + _MARGIN

    def _late(self):
        from mlpar.course.grading.steps import StepTimeout

        return StepTimeout(f"ran past the {self._step:g} s limit of one step")

    def __call__(self, *args, **kwargs):
        try:
            message = {"call": [plain.encode(list(args), strict=True), plain.encode(kwargs, strict=True)]}
        except plain.NotPlain as exc:
            raise HandOver(str(exc)) from None
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise self._late()
        self._seq += 1
        message["seq"] = self._seq
        try:
            plain.send(self._requests, message)
            while True:
                wait = None if self._deadline is None else max(0.1, self._deadline - time.monotonic())
                reply = plain.receive(self._answers, timeout=wait)
                if reply.get("seq") == self._seq:
                    break
        except TimeoutError:
            raise self._late() from None
        except (plain.ChannelClosed, OSError):
            raise RunnerGone from None
        if "raise" in reply and isinstance(reply["raise"], list) and len(reply["raise"]) == 2:
            raise _exception(str(reply["raise"][0]), str(reply["raise"][1])[:2000])
        if "refused" in reply:
            raise TypeError(str(reply["refused"])[:2000])
        if "return" not in reply:
            raise RunnerGone
        try:
            result = plain.decode(reply["return"])
            after = plain.decode(reply["args"]) if "args" in reply else None
        except (ValueError, TypeError, RecursionError) as exc:
            raise TypeError(f"your function returned something that is not plain data ({exc})") from None
        if isinstance(after, list) and len(after) == len(args):
            for original, changed in zip(args, after):
                _copy_back(original, changed)
        return result


def _event(fd: int, **event) -> None:
    data = (json.dumps(event) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def run(job: dict, requests: int, answers: int, events: int) -> None:
    """Judge the job's value checks in order, as the runner reaches each (see the module)."""
    os.environ["MLPAR_GRADING_SEED"] = str(job["seed"])
    step = job.get("step_timeout")
    deadline = time.monotonic() + float(job.get("timeout", 600))
    for cell in job["checks"]:
        name = cell["exercise"]
        try:
            check = getattr(importlib.import_module(cell["module"]), cell["check"])
        except (ImportError, AttributeError):
            check = None  # the runner reports it (it imports the same check for its own use)
        try:
            serve = {}
            while "serve" not in serve:  # a late reply to a call that timed out is skipped
                serve = plain.receive(answers, timeout=max(0.1, deadline - time.monotonic()))
        except (TimeoutError, plain.ChannelClosed, OSError):
            return  # the runner is gone or stuck: the grader says why
        if serve.get("serve") != name:
            return  # out of step: nothing more from this runner is trusted
        flags = [f for f in serve.get("flags", []) if isinstance(f, str) and f in _SERVE_FLAGS]
        detail = [str(d)[:500] for d in serve.get("detail", []) if isinstance(d, str)][:20]
        if "error" in serve or check is None:
            text = str(serve.get("error") or f"error: the official check {cell['check']} cannot be loaded")
            _event(events, event="check", exercise=name, passed=False, message=text[:2000], flags=flags,
                   detail=detail, seconds=0.0)
            continue
        t0 = time.perf_counter()
        try:
            passed, message, more, found = judge(check, Proxy(cell["argument"], requests, answers, step),
                                                 None, job["memory_mb"])
        except HandOver:
            plain.send(requests, {"in_process": True})
            _event(events, event="handed_over", exercise=name)
            continue
        except RunnerGone:
            return
        plain.send(requests, {"end": True})
        _event(events, event="check", exercise=name, passed=passed, message=message, flags=flags + more,
               detail=detail + found, seconds=round(time.perf_counter() - t0, 3))


def main() -> int:
    requests, answers, events = (int(a) for a in sys.argv[1:4])
    job = json.loads(sys.stdin.read())
    try:
        run(job, requests, answers, events)
    except (BrokenPipeError, OSError):
        pass
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
