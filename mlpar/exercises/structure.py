"""How a student's function works, not only what it returns: the checks' structural tools.

Where an exercise is about *how* something is computed (on several threads, with two
accumulators, tile by tile, without a Python loop), the result alone cannot tell a right
answer from a shortcut. These helpers look at the function itself, never at a stopwatch:

* ``prange_loops``: numba's own record of the parallel loops it compiled from ``prange``;
* ``source_tree`` / ``calls`` / ``loops``: the function's syntax tree (``ast``);
* ``Recorder``: an ndarray subclass that notes every matrix product (and the thread that took
  it) and every Python-level walk over its rows, so a check can see what a function did with
  its inputs, and where;
* ``StepCounter``: the Python work the student's code does, in steps, per thread.

Issue 35: a structural check looks at what the code does, not at how it is spelled. The
syntax-tree helpers only read spelling (an alias, a helper, a different loop order changes
it), so a check uses them to *explain* a refusal or to refuse a named shortcut, and decides
on what ran: the products a ``Recorder`` saw and on which thread, the steps a ``StepCounter``
counted and on which thread (``work_by_thread``), numba's own parallel loops.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import warnings

import numpy as np


def python_function(func):
    """The Python function behind ``func`` (numba dispatchers keep it in ``py_func``)."""
    return getattr(func, "py_func", func)


def is_parallel_numba(func) -> bool:
    """True when ``func`` is a numba dispatcher compiled with ``parallel=True``."""
    options = getattr(func, "targetoptions", None)
    return isinstance(options, dict) and bool(options.get("parallel"))


def prange_loops(func) -> int:
    """How many parallel loops numba made from ``prange`` loops written in ``func`` (0 if none).

    Read from numba's parallel diagnostics of the first compiled signature: each parallel
    loop (parfor) lists the patterns it came from, and a loop the user wrote with ``prange``
    is tagged ``("prange", "user")``. Loops numba made by itself (``np.zeros``, array
    expressions, ``x.sum()``) carry other tags, so they do not count.
    """
    signatures = getattr(func, "signatures", [])
    if not signatures:
        return 0
    try:
        parfors = func.get_metadata(signatures[0])["parfor_diagnostics"].initial_parfors
        return sum(any(isinstance(p, tuple) and p[:2] == ("prange", "user") for p in pf.patterns)
                   for pf in parfors)
    except (AttributeError, KeyError, TypeError):
        return 0


def source_tree(exercise: str, func) -> ast.AST:
    """The syntax tree of ``func``'s source, or an ``AssertionError`` saying why not."""
    try:
        source = inspect.getsource(python_function(func))
    except (OSError, TypeError):
        raise AssertionError(
            f"{exercise}: the check cannot read your function's source; define it with `def` "
            "in a notebook cell (not with exec or lambda)") from None
    return ast.parse(textwrap.dedent(source))


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def calls(tree: ast.AST) -> set[str]:
    """Names of everything called in ``tree`` (``np.sum(x)`` and ``x.sum()`` both give 'sum')."""
    return {_call_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)}


def uses_matmul_operator(tree: ast.AST) -> bool:
    """True when ``tree`` contains the ``@`` operator."""
    return any(isinstance(n, (ast.BinOp, ast.AugAssign)) and isinstance(n.op, ast.MatMult)
               for n in ast.walk(tree))


def loops(tree: ast.AST) -> list[ast.AST]:
    """Every Python-level loop in ``tree``: for, while and comprehensions."""
    kinds = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp)
    return [n for n in ast.walk(tree) if isinstance(n, kinds)]


def accumulators(loop: ast.AST) -> set[str]:
    """Names updated as ``s += ...`` or ``s = s + ...`` directly in ``loop``'s body."""
    found = set()
    for node in ast.walk(loop):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.BinOp)):
            name = node.targets[0].id
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)):
                found.add(name)
    return found


def _new_log() -> dict:
    return {"products": [], "walks": 0, "product_threads": []}


def products_off(log: dict, thread: int) -> int:
    """How many of the products a ``Recorder`` noted ran on threads other than ``thread``
    (pass ``threading.get_ident()`` of the caller: the products its pool really computed)."""
    return sum(t != thread for t in log.get("product_threads", []))


#: numpy functions that multiply matrices (what ``Recorder`` notes).
PRODUCTS = ("matmul", "dot", "einsum", "tensordot", "inner", "vdot", "multi_dot", "outer")


class Recorder(np.ndarray):
    """An ndarray that records what a function does with it, in ``log`` (shared by views).

    ``log["products"]``: the shapes of the operands of every matrix product it took part in;
    ``log["walks"]``: how many times Python walked over it element by element or row by row
    (``for row in X``, ``X[i]`` with an integer, ``X.tolist()``).
    """

    def __new__(cls, array, log=None):
        obj = np.asarray(array).view(cls)
        obj.log = log if log is not None else _new_log()
        return obj

    def __array_finalize__(self, obj):
        self.log = getattr(obj, "log", None) or _new_log()

    def _note_product(self, operands):
        import threading

        self.log["products"].append(tuple(np.shape(o) for o in operands))
        # which thread did the work: a pool's task, or the caller before it handed trivial tasks
        self.log.setdefault("product_threads", []).append(threading.get_ident())

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul:
            self._note_product(inputs)
        plain = [np.asarray(i) if isinstance(i, Recorder) else i for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, Recorder) else o
                                  for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return self._wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in PRODUCTS:
            self._note_product([a for a in args if hasattr(a, "shape")])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return super().__array_function__(func, types, args, kwargs)

    def _wrap(self, result):
        if isinstance(result, np.ndarray) and not isinstance(result, Recorder):
            return Recorder(result, self.log)
        return result

    def dot(self, other, out=None):
        self._note_product([self, other])
        return self._wrap(np.asarray(self).dot(np.asarray(other)))

    def __iter__(self):
        self.log["walks"] += 1
        return super().__iter__()

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)) or (
                isinstance(key, tuple) and all(isinstance(k, (int, np.integer)) for k in key)):
            self.log["walks"] += 1
        return super().__getitem__(key)

    def tolist(self):
        self.log["walks"] += 1
        return super().tolist()


# ---- What the code does when it runs: Python steps counted under a tracer ------------------

#: Calls that run a Python-level loop out of sight: each applies a function element by element
#: (or row by row) from C, so neither a ``for`` statement nor, for builtins such as
#: ``math.exp``, a traced Python frame shows it.
HIDDEN_LOOP_CALLS = frozenset({"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes",
                               "fromiter", "map", "starmap"})


# Packages whose Python lines are library work wherever they are installed: a folder on
# PYTHONPATH, ``pip install --target`` or ``--user`` is none of the interpreter's own folders.
LIBRARIES = ("numpy", "scipy", "numba", "llvmlite", "sklearn", "joblib", "threadpoolctl",
             "dask", "distributed", "cloudpickle", "toolz")


def _library_roots() -> tuple[str, ...]:
    # Code under these paths is not the student's: the standard library, installed packages
    # (numpy's own Python lines), and mlpar itself (the checks and the references).
    import importlib.util
    import os
    import site
    import sys
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        roots.add(sysconfig.get_paths().get(key))
    roots.update(getattr(site, "getsitepackages", list)())
    roots.add(site.getusersitepackages() if site.ENABLE_USER_SITE else None)
    # where each library really is: numpy carried on PYTHONPATH to a GPU machine had every
    # numpy line counted as the student's, and np.vectorize looked like a loop in disguise
    for name in LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and spec.origin != "built-in":
            roots.add(os.path.dirname(os.path.dirname(os.path.abspath(spec.origin))))
    return tuple(sorted(os.path.abspath(r) + os.sep for r in roots if r))


class StepCounter:
    """Counts the Python work a function does in the student's own code (``sys.settrace``).

    ``lines``: line events in the student's frames (a loop's body fires one per iteration,
    a comprehension one per element); ``calls``: calls into the student's Python functions
    other than the top one (a helper, a lambda given to ``map`` or ``np.vectorize``);
    ``code``: the code objects that ran. Frames of numpy, the standard library and mlpar are
    not counted, so a vectorised call costs the same few steps whatever the data's size.
    No clock is read: the counts depend on the code and the inputs only.
    """

    def __init__(self):
        self.lines = 0
        self.calls = 0
        self.code = set()
        self.by_thread: dict[int, int] = {}  # thread id -> steps taken on it
        self.caller: int | None = None       # the thread that called ``run``
        self._roots = _library_roots()
        self._mine = {}

    def _is_student(self, code) -> bool:
        known = self._mine.get(code)
        if known is None:
            import os

            name = code.co_filename
            known = not (name.startswith("<frozen") or
                         os.path.abspath(name).startswith(self._roots))
            self._mine[code] = known
        return known

    def _step(self) -> None:
        import threading

        key = threading.get_ident()
        self.by_thread[key] = self.by_thread.get(key, 0) + 1

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines += 1
            self._step()
        return self._local

    def _global(self, frame, event, arg):
        if event != "call" or not self._is_student(frame.f_code):
            return None
        self.code.add(frame.f_code)
        self.calls += 1
        self._step()
        return self._local

    def run(self, func, *args, **kwargs):
        """``func(*args, **kwargs)`` under the tracer; the tracer in place before is restored.

        Threads the function starts while it runs are traced too (``threading.settrace``), so a
        loop handed to a new thread pool still counts; threads that existed before are not.
        """
        import sys
        import threading

        self.caller = threading.get_ident()
        before = sys.gettrace()
        threads_before = threading.gettrace()
        threading.settrace(self._global)
        sys.settrace(self._global)
        try:
            return func(*args, **kwargs)
        finally:
            sys.settrace(before)
            threading.settrace(threads_before)
            # The top-level call is the function itself, not a helper it called.
            self.calls = max(self.calls - 1, 0)

    @property
    def steps(self) -> int:
        """Lines plus helper calls: the Python-level work, in steps."""
        return self.lines + self.calls

    def work_by_thread(self) -> tuple[int, list[int]]:
        """``(steps on the calling thread, [steps on each other thread, most first])``.

        What each task did, whatever the pool or the spelling: a loop the caller runs itself
        while its pool gets empty tasks shows as caller steps growing with the data and
        threads with a step or two each.
        """
        caller = self.by_thread.get(self.caller, 0)
        others = sorted((n for t, n in self.by_thread.items() if t != self.caller), reverse=True)
        return caller, others

    def hidden_loops(self) -> list[str]:
        """The ``HIDDEN_LOOP_CALLS`` named in the source of any of the student's code that ran."""
        found = set()
        for code in self.code:
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
            except (OSError, TypeError, SyntaxError, IndentationError):
                continue
            found |= calls(tree) & HIDDEN_LOOP_CALLS
        return sorted(found)


def python_work(func, *args, **kwargs):
    """``(result, counter)``: ``func(*args, **kwargs)`` run under a ``StepCounter``."""
    counter = StepCounter()
    result = counter.run(func, *args, **kwargs)
    return result, counter


def expect_vectorised(exercise: str, run_small, run_large, *, small: str, large: str,
                      extra_items: int) -> None:
    """Fail unless the student's code does the same Python work on a small and a large case.

    ``run_small`` / ``run_large``: zero-argument callables that call the student's function
    on the two cases (through ``exercises.call``) with arrays wrapped in one ``Recorder`` each,
    and return ``(counter, recorder_log)``. ``extra_items``: how many more rows or entries the
    large case has. Vectorised code runs the same few Python lines whatever the size; a loop,
    written out, hidden in a helper, a comprehension, ``map`` or ``np.vectorize``, runs
    (at least) one more step per extra item, and a walk over an array's rows shows in the log.
    """
    few, few_log = run_small()
    many, many_log = run_large()
    hidden = sorted(set(few.hidden_loops()) | set(many.hidden_loops()))
    if hidden:
        raise AssertionError(
            f"{exercise}: your code calls {', '.join(hidden)}, which runs a Python function once "
            "per element or row: a loop in disguise; use numpy operations on whole arrays")
    grew = many.steps - few.steps
    walked = many_log["walks"] - few_log["walks"]
    if grew >= extra_items // 2 or walked > 0:
        how = (f"{few.steps} Python steps for {small}, {many.steps} for {large}" if grew > 0
               else f"it walks the arrays element by element or row by row "
                    f"({few_log['walks']} walks for {small}, {many_log['walks']} for {large})")
        raise AssertionError(
            f"{exercise}: your code does Python work once per row or entry ({how}): a loop, "
            "written out, in a helper, a comprehension or map(); the lesson asks for numpy "
            "operations on whole arrays, whose Python work does not grow with the data")
