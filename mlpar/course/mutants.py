"""Mutation testing of the exercise checks: ``python -m mlpar.course.mutants``.

A check earns its point only if it refuses wrong answers, including the ones nobody thought
to write down. So every exercise's reference solution (the ``# BEGIN SOLUTION`` cell of the
instructor's notebook) is mutated, one small change at a time, and each mutant is run
through that exercise's check. A mutant the check passes *survives*: either the check has a
hole, or the mutant is *equivalent* (it computes the same thing; those are listed, with the
reason, in ``tests/exercises/equivalent_mutants.py``). The score of a check is the share of
its non-equivalent mutants it kills; the goal is 100 %.

The mutations (``KINDS``), each applied to one place in the solution's lines:

* ``binop`` / ``augop``: an arithmetic operator swapped (``+``↔``-``, ``*``↔``/``, ``//``→``/``,
  ``**``→``*``, ``@``→``*``); ``drop-term``: ``a op b`` becomes ``a`` or ``b``;
* ``compare``: ``<``↔``<=``, ``<``↔``>``, ``==``↔``!=``, ...; ``boolop``: ``and``↔``or``;
  ``not``/unary minus dropped; ``minmax``: ``min``↔``max`` (and their numpy relatives);
* ``const``: a number ± 1 or × 2 (from a million up, × 2 or ÷ 2: ± 1 on 1e9 is no change);
* ``drop-stmt``: a statement replaced by ``pass``;
* ``prange``: numba's ``prange`` written as ``range`` (the loop runs on one thread);
* ``caller``: the work handed to a pool (``.map``, ``.submit``, joblib's ``Parallel``, a
  ``threading.Thread``) done on the caller instead, with do-nothing tasks still sent;
* ``thread0`` / ``block0``: a CUDA kernel whose whole work is done by thread 0 or block 0;
* ``library``: the function returns a call to a library function of the same name family
  (the one the exercise asks the student to build).

Each lesson's mutants run in one worker process that imports the lesson's setup cells once and
forks a child per mutant (a mutant that hangs is killed after ``--timeout`` seconds, with any
process it started). ``--sample K`` draws K mutants per exercise (seeded by ``--seed``), the
fast run ``make test`` does, together with every mutant of the kinds in ``ALWAYS``; ``make
mutants`` runs them all.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import difflib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlpar.course.lessons import NOTEBOOKS, ROOT, lesson_paths

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
EQUIVALENTS_FILE = ROOT / "tests" / "exercises" / "equivalent_mutants.py"
KINDS = ("binop", "augop", "drop-term", "compare", "boolop", "unary", "minmax", "const",
         "drop-stmt", "prange", "caller", "thread0", "block0", "library")

# Operator swaps: each operator's wrong twins.
BINOP_SWAPS = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Div,), ast.Div: (ast.Mult,),
    ast.FloorDiv: (ast.Div,), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
    ast.MatMult: (ast.Mult,), ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,),
}
COMPARE_SWAPS = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}
MINMAX = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum",
          "argmin": "argmax", "argmax": "argmin", "amin": "amax", "amax": "amin",
          "nanmin": "nanmax", "nanmax": "nanmin"}
# Words that say nothing about what a function computes (for the ``library`` mutants).
STOPWORDS = {"my", "predict", "prediction", "check", "exercise", "model", "the", "of", "to",
             "for", "by", "and", "from", "compute", "get", "make"}

# Helpers a ``caller`` mutant needs, appended to its cell: the work runs here, on the caller,
# while the pool still receives one do-nothing task per item, so "did it use the pool?" holds.
CALLER_HELPERS = '''

def _mutant_noop(*args, **kwargs):
    return None


def _mutant_caller_map(pool_map, func, *iterables, **kwargs):
    items = [list(it) for it in iterables]
    list(pool_map(_mutant_noop, *items))
    return [func(*args) for args in zip(*items)]


def _mutant_caller_submit(pool, func, *args, **kwargs):
    value = func(*args, **kwargs)
    return pool.submit(lambda *a, **k: value)


def _mutant_caller_joblib(parallel, tasks):
    tasks = list(tasks)
    from joblib import delayed
    parallel(delayed(_mutant_noop)() for _ in tasks)
    return [f(*a, **k) for f, a, k in tasks]


def _mutant_caller_thread(thread_class, target=None, args=(), kwargs=None, **rest):
    if target is not None:
        target(*args, **(kwargs or {}))
    return thread_class(target=_mutant_noop, **rest)
'''


# ---- Finding the exercises -----------------------------------------------------------------

@dataclass
class Mutant:
    key: str              # "kind: before -> after" (stable while the solution's text is)
    kind: str
    source: str           # the whole mutated solution cell
    diff: str = ""


@dataclass
class Target:
    lesson: str           # "05_mapreduce"
    name: str             # the exercise (the check's name without check_)
    function: str         # the student's function
    module: str
    check: str
    reference: str        # the solution cell
    check_source: str     # the check cell, as the notebook runs it
    mutants: list[Mutant] = field(default_factory=list)


def _cell_source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source or "")


def lesson_setup(cells: list) -> tuple[list[str], list]:
    """The setup sources grading mode runs before the solutions, and the lesson's exercises."""
    from mlpar.course.grading.plan import (
        closure,
        exercises,
        free_names,
        is_setup,
        parse,
        rule_cells,
    )
    from mlpar.course.grading.plan import prune_setup as prune

    found = exercises(cells)
    chosen = rule_cells(cells, found)
    trees = [parse(_cell_source(c)) if c.get("cell_type") == "code" else None for c in cells]
    exercise_cells = {e.solution for e in found} | {e.check_cell for e in found}
    chosen = closure(trees, chosen)
    needed = set()
    for i in chosen:
        if not is_setup(trees[i]):
            needed |= free_names(trees[i])
    setup = []
    for i in sorted(chosen - exercise_cells):
        source = _cell_source(cells[i])
        if is_setup(trees[i]):
            source = prune(trees[i], needed)
        if source.strip():
            setup.append(source)
    return setup, found


def targets(lesson_path: Path) -> tuple[list[str], list[Target]]:
    """The setup sources and the exercises (with their mutants) of one instructor notebook."""
    cells = json.loads(Path(lesson_path).read_text(encoding="utf-8"))["cells"]
    setup, found = lesson_setup(cells)
    modules = lesson_modules(cells)
    out = []
    for e in found:
        reference = _cell_source(cells[e.solution])
        t = Target(lesson_path.stem, e.name, e.function, e.module, e.check, reference,
                   _cell_source(cells[e.check_cell]))
        t.mutants = mutants_of(reference, e.function, modules, e.name)
        out.append(t)
    return setup, out


# ---- Making mutants --------------------------------------------------------------------------

def _line_offsets(source: str) -> list[int]:
    """Byte offset of each line's start in ``source`` encoded as UTF-8 (ast counts bytes)."""
    offsets, total = [0], 0
    for line in source.encode("utf-8").splitlines(keepends=True):
        total += len(line)
        offsets.append(total)
    return offsets


def _splice(source: str, node: ast.AST, text: str) -> str:
    data, offsets = source.encode("utf-8"), _line_offsets(source)
    start = offsets[node.lineno - 1] + node.col_offset
    stop = offsets[node.end_lineno - 1] + node.end_col_offset
    return (data[:start] + text.encode("utf-8") + data[stop:]).decode("utf-8")


def _solution_span(source: str) -> tuple[int, int]:
    lines = source.splitlines()
    begin = next(i for i, line in enumerate(lines) if line.strip() == BEGIN) + 1
    end = next(i for i, line in enumerate(lines) if line.strip() == END) + 1
    return begin, end


def _function(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _inside(node: ast.AST, span: tuple[int, int]) -> bool:
    lineno = getattr(node, "lineno", None)
    return lineno is not None and span[0] < lineno and node.end_lineno < span[1]


def _call_name(node: ast.Call) -> str:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name):
        return node.func.id
    return ""


def _expr(node: ast.AST) -> str:
    return f"({ast.unparse(node)})"


def _short(node: ast.AST) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 70 else text[:67] + "..."


def _number(node) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool))


def _is_docstring(stmt, parents) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(getattr(stmt, "value", None), ast.Constant)


def _expression_mutants(node: ast.AST, parent: ast.AST | None):
    """``(kind, replacement text)`` for an expression node (all but statement-level kinds)."""
    out = []
    if isinstance(node, ast.BinOp):
        for swap in BINOP_SWAPS.get(type(node.op), ()):
            out.append(("binop", _expr(ast.BinOp(node.left, swap(), node.right))))
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow,
                                ast.MatMult, ast.Mod)):
            out.append(("drop-term", _expr(node.left)))
            if not isinstance(node.op, ast.Pow):
                out.append(("drop-term", _expr(node.right)))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        for swap in COMPARE_SWAPS.get(type(node.ops[0]), ()):
            out.append(("compare", _expr(ast.Compare(node.left, [swap()], node.comparators))))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("boolop", _expr(ast.BoolOp(other, node.values))))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        out.append(("unary", _expr(node.operand)))
    elif _number(node) and not (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)):
        value = node.value
        seen = {value}
        # ± 1 on 1e9 is a change no tolerance could see: large numbers are halved instead
        changes = (value + 1, value - 1, value * 2) if abs(value) < 1e6 else (value / 2, value * 2)
        for new in changes:
            if new not in seen:
                seen.add(new)
                out.append(("const", _expr(ast.Constant(new))))
    elif isinstance(node, ast.Call):
        name = _call_name(node)
        if name in MINMAX:
            swapped = copy.deepcopy(node)
            if isinstance(swapped.func, ast.Attribute):
                swapped.func.attr = MINMAX[name]
            else:
                swapped.func.id = MINMAX[name]
            out.append(("minmax", _expr(swapped)))
        caller = _caller_mutant(node)
        if caller is not None:
            out.append(("caller", caller))
    elif isinstance(node, ast.Name) and node.id == "prange" and isinstance(node.ctx, ast.Load):
        out.append(("prange", "range"))
    return out


def _caller_mutant(node: ast.Call) -> str | None:
    """The pool call ``node`` rewritten so that the caller does its work (None: not a pool call)."""
    func = node.func
    args = ", ".join([ast.unparse(a) for a in node.args]
                     + [ast.unparse(k) for k in node.keywords])
    name = _call_name(node)
    if isinstance(func, ast.Call) and _call_name(func) == "Parallel" and len(node.args) == 1:
        return f"_mutant_caller_joblib({ast.unparse(func)}, {ast.unparse(node.args[0])})"
    if name == "Thread":
        return f"_mutant_caller_thread({ast.unparse(func)}, {args})"
    if isinstance(func, ast.Attribute) and name == "submit" and node.args:
        return f"_mutant_caller_submit({ast.unparse(func.value)}, {args})"
    is_builtin_map = isinstance(func, ast.Name) and name == "map"
    if (name.endswith("map") and not is_builtin_map and len(node.args) >= 2
            and not (isinstance(func, ast.Attribute) and ast.unparse(func.value) in ("np", "numpy"))):
        return f"_mutant_caller_map({ast.unparse(func)}, {args})"
    return None


def _cuda_kernel(fn) -> bool:
    return any("cuda.jit" in ast.unparse(d) for d in fn.decorator_list)


class _Guard(ast.NodeTransformer):
    """Replace ``cuda.grid(1)`` / ``cuda.gridsize(1)`` by fixed expressions."""

    def __init__(self, grid: str, gridsize: str):
        self.grid, self.gridsize = grid, gridsize

    def visit_Call(self, node):
        self.generic_visit(node)
        text = ast.unparse(node)
        if text == "cuda.grid(1)":
            return ast.parse(self.grid, mode="eval").body
        if text == "cuda.gridsize(1)":
            return ast.parse(self.gridsize, mode="eval").body
        return node


def _kernel_mutants(source: str, fn) -> list[tuple[str, str, str]]:
    """Thread 0 or block 0 does the whole kernel's work: ``(kind, description, new source)``."""
    out = []
    for kind, guard, grid, gridsize, what in (
            ("thread0", "cuda.grid(1) == 0", "0", "1", "thread 0 does all the work"),
            ("block0", "cuda.blockIdx.x == 0", "cuda.threadIdx.x", "cuda.blockDim.x",
             "only block 0 works")):
        new = copy.deepcopy(fn)
        body = [_Guard(grid, gridsize).visit(stmt) for stmt in new.body]
        new.body = [ast.If(test=ast.parse(guard, mode="eval").body, body=body, orelse=[])]
        ast.fix_missing_locations(new)
        start = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        lines = source.splitlines()
        text = "\n".join(lines[:start - 1] + [ast.unparse(new)] + lines[fn.end_lineno:])
        out.append((kind, what, text))
    return out


def _tokens(name: str) -> set[str]:
    return {w for w in name.lower().split("_") if len(w) >= 3 and w not in STOPWORDS}


def _library_mutants(source: str, fn, modules: dict[str, str],
                     extra: str = "") -> list[tuple[str, str, str]]:
    """``return module.f(args)`` for library functions named like the exercise's function.

    ``modules``: alias -> mlpar module the lesson imports anywhere; ``extra``: the exercise's
    name, whose words count too. An exercise that asks the student to build what the library
    has must refuse the library's version (issue 35 §4).
    """
    wanted = _tokens(fn.name) | _tokens(extra)
    params = [a.arg for a in fn.args.args]
    found = []
    for alias, name in sorted(modules.items()):
        for attr, fits in _module_functions(name).items():
            shared = _tokens(attr) & wanted
            if not shared or attr.startswith(("check_", "plot_", "draw_", "show_")):
                continue
            if fits(len(params)):
                found.append((len(shared), alias, name, attr))
    found.sort(key=lambda x: (-x[0], x[1], x[3]))
    out = []
    begin, end = _solution_span(source)
    lines = source.splitlines()
    indent = re.match(r"\s*", lines[begin - 1]).group(0)
    args = ", ".join(params)
    for _, alias, name, attr in found[:4]:
        package, _, leaf = name.rpartition(".")
        body = [f"{indent}from {package} import {leaf} as _library",
                f"{indent}return _library.{attr}({args})"]
        text = "\n".join(lines[:begin] + body + lines[end - 1:])
        out.append(("library", f"return {alias}.{attr}({args})", text))
    return out


def _module_functions(module: str) -> dict:
    """Public top-level functions of an mlpar module, read from its source (nothing imported:
    importing mlpar.gpu here would fix numba's CUDA choice for the calling process), each with
    a test of whether it takes a number of positional arguments."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.is_file():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    if not path.is_file():
        return {}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = node.args.posonlyargs + node.args.args
            required = len(args) - len(node.args.defaults)
            most = float("inf") if node.args.vararg else len(args)
            out[node.name] = lambda k, lo=required, hi=most: lo <= k <= hi
    return out


def lesson_modules(cells: list) -> dict[str, str]:
    """alias -> module for every mlpar module a lesson's code cells import."""
    from mlpar.course.grading.plan import bindings, parse

    modules = {}
    for cell in cells:
        if cell.get("cell_type") == "code":
            for alias, module in bindings(parse(_cell_source(cell))).imports.items():
                if module.startswith("mlpar.") and module.count(".") >= 2:
                    modules[alias] = module
    return modules


def mutants_of(source: str, function: str, modules: dict[str, str] | None = None,
               exercise: str = "") -> list[Mutant]:
    """Every mutant of the solution cell ``source`` (the body of ``function`` between markers)."""
    tree = ast.parse(source)
    fn = _function(tree, function)
    if fn is None:
        return []
    span = _solution_span(source)
    parents = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    made: list[Mutant] = []
    for node in ast.walk(fn):
        if not _inside(node, span):
            continue
        parent = parents.get(node)
        if isinstance(node, ast.expr):
            # targets of an assignment stay (mutating them gives a syntax error or a no-op)
            if isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
                continue
            if isinstance(parent, ast.JoinedStr) or isinstance(parent, ast.FormattedValue):
                continue
            for kind, text in _expression_mutants(node, parent):
                made.append(Mutant(f"{kind}: {_short(node)} -> {text}", kind, _splice(source, node, text)))
        elif isinstance(node, ast.AugAssign):
            for swap in BINOP_SWAPS.get(type(node.op), ()):
                new = ast.AugAssign(node.target, swap(), node.value)
                made.append(Mutant(f"augop: {_short(node)} -> {ast.unparse(new)}", "augop",
                                   _splice(source, node, ast.unparse(new))))
        if isinstance(node, ast.stmt) and not isinstance(node, ast.Pass) \
                and not _is_docstring(node, parents):
            made.append(Mutant(f"drop-stmt: {_short(node)}", "drop-stmt", _splice(source, node, "pass")))
    if _cuda_kernel(fn):
        for kind, what, text in _kernel_mutants(source, fn):
            made.append(Mutant(f"{kind}: {what}", kind, text))
    for kind, what, text in _library_mutants(source, fn, modules or {}, exercise):
        made.append(Mutant(f"{kind}: {what}", kind, text))
    out, seen, keys = [], set(), {}
    for m in made:
        if m.kind == "caller":
            m.source += CALLER_HELPERS
        try:
            ast.parse(m.source)
        except SyntaxError:
            continue
        if m.source in seen or m.source == source:
            continue
        seen.add(m.source)
        keys[m.key] = keys.get(m.key, 0) + 1
        if keys[m.key] > 1:  # the same text at two places: number them in order
            m.key += f" #{keys[m.key]}"
        m.diff = "".join(difflib.unified_diff(
            source.splitlines(keepends=True), (m.source.split(CALLER_HELPERS)[0]).splitlines(keepends=True),
            "reference", "mutant", n=0))
        out.append(m)
    return out


# ---- Running mutants: one worker per group of lessons, one forked child per mutant ---------

class _Shell:
    """What notebook cells may call besides Python (``get_ipython().run_line_magic``)."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _python(source: str) -> str:
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001  (plain Python then)
        return source


def _exec_cell(source: str, namespace: dict, folder: str, label: str) -> None:
    # A real file, so inspect.getsource (and the checks that read a function's source) work.
    path = os.path.join(folder, f"{label}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(_python(source))
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), path, "exec")
    exec(code, namespace)  # noqa: S102  (the course's own cells and their mutants)


def _first_line(text) -> str:
    line = next((x.strip() for x in str(text).splitlines() if x.strip()), "")
    return line[:300]


def _run_child(solution: str, check: str, namespace: dict, folder: str, label: str) -> dict:
    """In the forked child: the solution cell, then the check cell."""
    namespace = dict(namespace)
    try:
        _exec_cell(solution, namespace, folder, label)
    except BaseException as exc:  # noqa: BLE001
        return {"status": "killed", "how": "solution cell raised",
                "message": f"{type(exc).__name__}: {_first_line(exc)}"}
    try:
        _exec_cell(check, namespace, folder, label + "_check")
    except AssertionError as exc:
        return {"status": "killed", "how": "check refused", "message": _first_line(exc)}
    except BaseException as exc:  # noqa: BLE001  (the check itself stopped: a defect to report)
        return {"status": "killed", "how": "check crashed",
                "message": f"{type(exc).__name__}: {_first_line(exc)}"}
    return {"status": "survived", "how": "check passed", "message": ""}


def _die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the worker that forked it dies (no orphans)."""
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _fork_run(solution: str, check: str, namespace: dict, folder: str, label: str,
              timeout: float) -> dict:
    """Run one mutant in a forked child (own process group), killed after ``timeout`` s."""
    import select
    import signal

    read, write = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read)
            os.setpgid(0, 0)
            _die_with_parent()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            result = _run_child(solution, check, namespace, folder, label)
            os.write(write, json.dumps(result).encode())
        finally:
            os._exit(0)
    os.close(write)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    data, timed_out = b"", False
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read], [], [], left)
        if ready:
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            data += chunk
    os.close(read)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the child, and any pool or process it left behind
    os.waitpid(pid, 0)
    seconds = round(time.perf_counter() - t0, 2)
    if timed_out:
        return {"status": "killed", "how": "timeout", "seconds": seconds,
                "message": f"ran past {timeout:g} s"}
    try:
        result = json.loads(data.decode() or "{}")
    except ValueError:
        result = {}
    if not result:
        result = {"status": "killed", "how": "child died", "message": "no result (crashed)"}
    result["seconds"] = seconds
    return result


def _warm_numba() -> None:
    """Compile one small serial function here, so that each forked child starts with numba's
    compiler set up (halves a mutant's compile time). Not a parallel one: that would start
    the threading layer (OpenMP), after which fork is unsafe."""
    if "numba" not in sys.modules or getattr(_warm_numba, "done", False):
        return
    _warm_numba.done = True
    with contextlib.suppress(Exception):
        from numba import njit

        njit(lambda x: x[0] + 1.0).compile("(float64[:],)")


def _slow(source: str) -> bool:
    """Whether a solution compiles (numba) or starts workers, which take seconds before it runs."""
    return any(mark in source for mark in ("jit", "numba", "Parallel(", "Thread(", ".map(",
                                           ".submit(", "Pool", "Client", "Executor"))


def worker(job: dict, results: str) -> None:
    """Run a job (lessons, their setup, mutants) and write one JSON line per outcome."""
    _die_with_parent()
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.pop("MLPAR_GRADING_SEED", None)
    import shutil

    folder = tempfile.mkdtemp(prefix="mlpar-mutants-")
    os.chdir(folder)  # the checks count code outside mlpar's folder as the student's
    try:
        _work(job, results, folder)
    finally:
        os.chdir(tempfile.gettempdir())
        shutil.rmtree(folder, ignore_errors=True)


def _work(job: dict, results: str, folder: str) -> None:
    with open(results, "a", encoding="utf-8") as out:
        def emit(**event):
            out.write(json.dumps(event) + "\n")
            out.flush()

        for lesson in job["lessons"]:
            namespace = {"__name__": "__main__", "get_ipython": _Shell, "display": print}
            tag = lesson["lesson"][:2]
            t0 = time.perf_counter()
            try:
                for k, source in enumerate(lesson["setup"]):
                    _exec_cell(source, namespace, folder, f"l{tag}_setup{k}")
            except BaseException as exc:  # noqa: BLE001
                emit(lesson=lesson["lesson"], event="setup_failed",
                     message=f"{type(exc).__name__}: {_first_line(exc)}")
                continue
            try:  # the solution cells too: a later exercise may use an earlier cell's import
                for t in lesson["all_targets"]:
                    _exec_cell(t["reference"], namespace, folder, f"l{tag}_{t['name']}")
            except BaseException as exc:  # noqa: BLE001
                emit(lesson=lesson["lesson"], event="setup_failed",
                     message=f"reference cells: {type(exc).__name__}: {_first_line(exc)}")
                continue
            _warm_numba()
            emit(lesson=lesson["lesson"], event="setup", seconds=round(time.perf_counter() - t0, 2))
            for t in lesson["targets"]:
                # without a reference run to calibrate on, plain Python gets a short limit
                timeout = job["timeout"] if _slow(t["reference"]) else min(job["timeout"], 5.0)
                if job.get("reference", True):
                    # generous: a loaded machine may take long to compile a numba reference
                    ref = _fork_run(t["reference"], t["check_source"], namespace, folder,
                                    f"l{tag}_{t['name']}_reference", max(120.0, 8 * job["timeout"]))
                    emit(lesson=lesson["lesson"], exercise=t["name"], event="reference", **ref)
                    if ref["status"] != "survived":
                        continue
                    timeout = max(job["timeout"], 3 * ref["seconds"])
                for k, m in enumerate(t["mutants"]):
                    result = _fork_run(m["source"], t["check_source"], namespace, folder,
                                       f"l{tag}_{t['name']}_m{k}", timeout)
                    emit(lesson=lesson["lesson"], exercise=t["name"], event="mutant",
                         key=m["key"], kind=m["kind"], diff=m["diff"], **result)


# ---- The command ----------------------------------------------------------------------------

def load_equivalents(path: Path = EQUIVALENTS_FILE) -> dict[tuple[str, str, str], str]:
    """``(lesson number, exercise, mutant key) -> reason`` from the list of equivalent mutants."""
    if not Path(path).is_file():
        return {}
    import importlib.util

    spec = importlib.util.spec_from_file_location("equivalent_mutants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.EQUIVALENT)


def plan(lessons: list[str] | None = None, sample: int | None = None, seed: int = 0,
         folder: Path = NOTEBOOKS, kinds: set[str] | None = None) -> list[dict]:
    """The worker jobs' lessons: setup and targets with their (sampled) mutants."""
    out = []
    for path in lesson_paths(folder):
        if lessons and path.stem[:2] not in lessons:
            continue
        setup, found = targets(path)
        items = []
        for t in found:
            chosen = [m for m in t.mutants if kinds is None or m.kind in kinds]
            items.append({"name": t.name, "reference": t.reference, "check_source": t.check_source,
                          "mutants": [m.__dict__ for m in chosen]})
        if items:
            out.append({"lesson": path.stem, "setup": setup, "targets": items,
                        "all_targets": [{"name": t.name, "reference": t.reference} for t in found]})
    # lesson 10 chooses numba's CUDA path before numba is imported: it goes first in a worker
    out.sort(key=lambda lesson: (not lesson["lesson"].startswith("10_"), lesson["lesson"]))
    return out if sample is None else draw(out, sample, seed)


#: Mutations a sample always runs: the wrong answers §2 and §4 of issue 35 name (the work left
#: on the caller, thread 0 or block 0 doing a kernel's work, the library's own function).
ALWAYS = ("caller", "thread0", "block0", "library")


def draw(lessons: list[dict], sample: int, seed: int = 0, always=ALWAYS) -> list[dict]:
    """A copy of ``lessons`` with ``sample`` mutants per exercise drawn with ``seed``, plus
    every mutant of the ``always`` kinds (but not library calls from a numba exercise: each
    would compile a kernel, seconds apiece; the full run has them)."""
    out = []
    for lesson in lessons:
        rng = random.Random(f"{seed}:{lesson['lesson']}")
        targets_ = []
        for t in lesson["targets"]:
            compiled = "jit" in t["reference"]
            fixed = [m for m in t["mutants"] if m["kind"] in always
                     and not (compiled and m["kind"] == "library")]
            rest = [m for m in t["mutants"] if m not in fixed]
            drawn = rng.sample(rest, sample) if len(rest) > sample else list(rest)
            targets_.append({**t, "mutants": fixed + drawn})
        out.append({**lesson, "targets": targets_})
    return out


def run(lessons: list[dict], *, timeout: float = 15.0, reference: bool = True,
        jobs: int = 1, python: str | None = None, progress=None) -> list[dict]:
    """Run the lessons' mutants in ``jobs`` worker processes; return every outcome.

    ``progress``: called now and then with the outcomes so far (to refresh a report).
    """
    groups = [lessons[i::jobs] for i in range(max(1, min(jobs, len(lessons))))]
    with tempfile.TemporaryDirectory(prefix="mlpar-mutants-run-") as tmp:
        procs = []
        for k, group in enumerate(groups):
            results = os.path.join(tmp, f"results{k}.jsonl")
            job = {"lessons": group, "timeout": timeout, "reference": reference}
            proc = subprocess.Popen(
                [python or sys.executable, "-m", "mlpar.course.mutants", "--worker", results],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True, cwd=tmp)
            proc.stdin.write(json.dumps(job))
            proc.stdin.close()
            procs.append((proc, results))
        def read_all() -> list[dict]:
            events = []
            for _, results in procs:
                if Path(results).exists():
                    lines = Path(results).read_text().splitlines()
                    events += [json.loads(line) for line in lines if line.endswith("}")]
            return events

        while progress is not None and any(proc.poll() is None for proc, _ in procs):
            time.sleep(20)
            progress(read_all())
        errors = []
        for proc, _ in procs:
            stderr = proc.stderr.read()
            proc.wait()
            if proc.returncode != 0:
                errors.append({"event": "worker_failed", "message": stderr[-2000:]})
        return read_all() + errors


@dataclass
class Score:
    lesson: str
    exercise: str
    killed: int = 0
    survived: list = field(default_factory=list)    # non-equivalent survivors (events)
    equivalent: list = field(default_factory=list)  # (key, reason)
    crashed: list = field(default_factory=list)     # the check stopped with a non-Assertion error
    timeouts: int = 0
    reference: str = ""                             # why the reference failed, if it did

    @property
    def counted(self) -> int:
        return self.killed + len(self.survived)

    @property
    def score(self) -> float:
        return self.killed / self.counted if self.counted else 1.0


def scores(events: list[dict], equivalents: dict | None = None) -> list[Score]:
    """One ``Score`` per exercise from the run's events."""
    equivalents = load_equivalents() if equivalents is None else equivalents
    table: dict[tuple[str, str], Score] = {}
    for e in events:
        if "exercise" not in e:
            continue
        s = table.setdefault((e["lesson"], e["exercise"]), Score(e["lesson"], e["exercise"]))
        if e["event"] == "reference":
            if e["status"] != "survived":
                s.reference = f"{e['how']}: {e['message']}"
            continue
        reason = equivalents.get((e["lesson"][:2], e["exercise"], e["key"]))
        if e["status"] == "survived":
            if reason:
                s.equivalent.append((e["key"], reason))
            else:
                s.survived.append(e)
        else:
            s.killed += 1
            s.timeouts += e["how"] == "timeout"
            if e["how"] == "check crashed":
                s.crashed.append(e)
    return list(table.values())


def report(results: list[Score], events: list[dict], seconds: float) -> str:
    lines = [f"mutation score per check ({time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
             f"{seconds:.0f} s)", ""]
    lines.append(f"{'lesson':<22} {'exercise':<24} {'score':>7} {'killed':>7} {'survived':>8} "
                 f"{'equiv':>6} {'timeout':>7}")
    for s in results:
        score = "ref ✗" if s.reference else f"{100 * s.score:.0f}%"
        lines.append(f"{s.lesson:<22} {s.exercise:<24} {score:>7} {s.killed:>7} "
                     f"{len(s.survived):>8} {len(s.equivalent):>6} {s.timeouts:>7}")
    total_k = sum(s.killed for s in results)
    total = sum(s.counted for s in results)
    lines.append(f"\ntotal: {total_k}/{total} non-equivalent mutants killed"
                 + (f" ({100 * total_k / total:.1f}%)" if total else ""))
    for e in events:
        if e.get("event") in ("setup_failed", "worker_failed"):
            lines.append(f"\n!! {e.get('lesson', '')} {e['event']}: {e['message']}")
    broken = [s for s in results if s.reference]
    if broken:
        lines.append("\n== reference solutions that fail their own check (mutants not run)")
        lines += [f"{s.lesson} {s.exercise}: {s.reference}" for s in broken]
    for s in results:
        if s.survived:
            lines.append(f"\n== survivors: {s.lesson} {s.exercise} ({len(s.survived)})")
            for e in s.survived:
                lines.append(f"-- {e['key']}")
                lines.append(e["diff"].rstrip())
    crashed = [(s, e) for s in results for e in s.crashed]
    if crashed:
        lines.append("\n== checks that crashed instead of refusing (killed, but a check must "
                     "not crash)")
        lines += [f"{s.lesson} {s.exercise}: {e['key']}: {e['message']}" for s, e in crashed]
    equiv = [(s, k, r) for s in results for k, r in s.equivalent]
    if equiv:
        lines.append("\n== equivalent mutants (not counted)")
        lines += [f"{s.lesson} {s.exercise}: {k}: {r}" for s, k, r in equiv]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlpar.course.mutants",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--lesson", action="append", help="two-digit lesson number (repeatable)")
    parser.add_argument("--sample", type=int, help="mutants drawn per exercise (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--kind", action="append", choices=KINDS, help="only these mutations")
    parser.add_argument("--timeout", type=float, default=15.0,
                        help="seconds per mutant, at least (and 3 times the reference's)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--report", type=Path, help="also write the report to this file")
    parser.add_argument("--no-reference", action="store_true",
                        help="skip running each reference solution through its check first")
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument("--events", type=Path, help="write every outcome, one JSON line each")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(sys.stdin.read()), args.worker)
        return 0
    lessons = [f"{int(x):02d}" for x in args.lesson] if args.lesson else None
    work = plan(lessons, args.sample, args.seed, kinds=set(args.kind) if args.kind else None)
    if args.list:
        for lesson in work:
            for t in lesson["targets"]:
                for m in t["mutants"]:
                    print(f"{lesson['lesson']} {t['name']}: {m['key']}")
        return 0
    t0 = time.perf_counter()

    def refresh(events):
        if args.report:
            text = report(scores(events), events, time.perf_counter() - t0)
            args.report.write_text("(run in progress)\n" + text, encoding="utf-8")

    events = run(work, timeout=args.timeout, jobs=args.jobs, reference=not args.no_reference,
                 progress=refresh)
    results = scores(events)
    if args.events:
        args.events.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    text = report(results, events, time.perf_counter() - t0)
    print(text)
    if args.report:
        args.report.write_text(text, encoding="utf-8")
    bad = any(s.survived or s.reference for s in results) or any(
        e.get("event") in ("setup_failed", "worker_failed") for e in events)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
