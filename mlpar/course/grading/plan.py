"""What grading a lesson runs: its exercises and the cells a solution and its check need.

An exercise is found in the official notebook, never in a list kept by hand: a *solution cell*
holds ``# BEGIN SOLUTION``; the code cell after it is its *check cell*, which calls
``<alias>.check_<name>(<function>)`` with ``<alias>`` bound by an import of a module of
``mlpar.exercises``. So new or changed exercises are graded as soon as the notebook has them.

Grading mode runs only the cells those need (:func:`grading_cells`), by one rule that the
``tag-grading`` command writes into the instructor notebooks as the cell tag ``grading``:

* solution and check cells;
* *setup* cells: every statement an import or ``NAME = constant`` (the lesson's imports, SEED),
  cut down when a submission is graded to the statements binding a name the graded cells read
  (:func:`prune_setup`);
* transitively, the nearest earlier cell defining each name that a selected cell reads
  (a helper the exercise uses, the ``from mlpar.exercises import ...`` line).

A cell an instructor tags ``grading`` by hand is always run as well.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

GRADING_TAG = "grading"
BEGIN_MARK = "# BEGIN SOLUTION"
CHECK_PACKAGE = "mlpar.exercises"
# Names a notebook has without defining them.
_GIVEN = set(dir(builtins)) | {"get_ipython", "display", "__builtins__", "__name__", "In", "Out"}


def cell_source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source or "")


MAX_PARSED = 256 * 1024  # characters: a longer cell is no exercise's answer, and is not parsed
# Cell magics whose body is the cell's Python, run as written (``%%time`` in a timing course).
RUN_BODY_MAGICS = {"time", "capture", "timeit", "prun"}


def parse(source: str) -> ast.Module | None:
    """The cell as Python (IPython magics turned into calls first), or None if it is not valid.

    A cell longer than :data:`MAX_PARSED`, nested too deeply for the parser, or too big for its
    memory is not Python either: it is never an error of the grader's.
    """
    if not isinstance(source, str) or len(source) > MAX_PARSED:
        return None
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001  (a cell IPython cannot read is simply not Python)
        pass
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def magic_body(tree: ast.Module | None) -> ast.Module | None:
    """The Python inside a ``%%time``-like cell (see :data:`RUN_BODY_MAGICS`), else ``tree``."""
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return tree
    call = tree.body[0].value
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "run_cell_magic" and len(call.args) == 3
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
            and call.args[0].value in RUN_BODY_MAGICS):
        return parse(call.args[2].value)
    return tree


class _Binder(ast.NodeVisitor):
    """Top-level names a cell binds (not the locals of the functions it defines)."""

    def __init__(self):
        self.bound: set[str] = set()
        self.imports: dict[str, str] = {}  # name -> module it is bound to (for imports)

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.bound.add(node.id)

    def visit_FunctionDef(self, node):
        self.bound.add(node.name)
        for deco in node.decorator_list:
            self.visit(deco)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.bound.add(node.name)

    def visit_Lambda(self, node):
        pass

    def visit_ListComp(self, node):
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Import(self, node):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            self.bound.add(name)
            self.imports[name] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node):
        for alias in node.names:
            if alias.name == "*":
                continue
            name = alias.asname or alias.name
            self.bound.add(name)
            self.imports[name] = f"{node.module}.{alias.name}" if node.module else alias.name


def bindings(tree: ast.Module | None) -> _Binder:
    binder = _Binder()
    if tree is not None:
        binder.visit(tree)
    return binder


def free_names(tree: ast.Module | None) -> set[str]:
    """Names the cell reads but binds nowhere (not even as a local): what it needs from before."""
    if tree is None:
        return set()
    loads, stores = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, ast.arg):
            stores.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stores |= {a.asname or a.name.split(".")[0] for a in node.names}
    return loads - stores - _GIVEN


def is_setup(tree: ast.Module | None) -> bool:
    """Only imports and ``NAME = constant`` lines (a lesson's import and seed cell)."""
    if tree is None or not tree.body:
        return False
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        if (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
                and isinstance(stmt.value, ast.Constant)):
            continue
        return False
    return True


def prune_setup(tree: ast.Module, needed: set[str]) -> str:
    """A setup cell cut down to the imports and constants that bind a ``needed`` name.

    A lesson's import cell pulls in everything its demonstrations use (scikit-learn, widgets,
    plotting): seconds that grading an exercise need not pay.
    """
    kept = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) in needed]
            if names:
                kept.append(ast.unparse(type(stmt)(**{**{f: getattr(stmt, f) for f in stmt._fields},
                                                       "names": names})))
        elif bindings(ast.Module(body=[stmt], type_ignores=[])).bound & needed:
            kept.append(ast.unparse(stmt))
    return "\n".join(kept)


@dataclass(frozen=True)
class Exercise:
    name: str            # the check's name without ``check_``: one row of grades per exercise
    function: str        # the student's function the check is given
    module: str          # e.g. mlpar.exercises.l00_index
    check: str           # e.g. check_parallel_sum_of_squares
    solution: int        # index of the solution cell in the official notebook
    solution_id: str | None
    check_cell: int


@dataclass
class LessonPlan:
    lesson: str                      # file stem, e.g. 04_hogwild
    cells: list                      # the official student edition's cells
    exercises: list[Exercise]
    grading: set[int] = field(default_factory=set)  # indices of the cells grading mode runs
    _parsed: tuple = field(default=(None, None), repr=False, compare=False)

    def trees(self) -> list:
        """:func:`code_trees` of :attr:`cells`, parsed once for every submission of the lesson
        (callers read them, never change them)."""
        cells, trees = self._parsed
        if cells is not self.cells:
            trees = code_trees(self.cells)
            self._parsed = (self.cells, trees)
        return trees

    @property
    def solution_cells(self) -> set[int]:
        return {e.solution for e in self.exercises}

    @property
    def check_cells(self) -> set[int]:
        return {e.check_cell for e in self.exercises}


def _check_calls(tree: ast.Module | None, imports: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(module, check function, argument)`` for each ``alias.check_x(f)`` call in the cell."""
    calls = []
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.attr.startswith("check_")
                and node.args and isinstance(node.args[0], ast.Name)):
            module = imports.get(node.func.value.id, "")
            if module.startswith(CHECK_PACKAGE + "."):
                calls.append((module, node.func.attr, node.args[0].id))
    return calls


def code_trees(cells: list) -> list:
    """Each cell parsed (:func:`parse`; None for a markdown cell or one that is not Python)."""
    return [parse(cell_source(c)) if c.get("cell_type") == "code" else None for c in cells]


def exercises(cells: list, trees: list | None = None) -> list[Exercise]:
    """The graded exercises of a notebook, in order (see the module's docstring).

    ``trees``: :func:`code_trees` of ``cells``, when the caller has them already.
    """
    trees = code_trees(cells) if trees is None else trees
    imports: dict[str, str] = {}
    for tree in trees:
        imports.update(bindings(tree).imports)
    found = []
    code = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    for k, i in enumerate(code):
        if BEGIN_MARK not in cell_source(cells[i]) or k + 1 >= len(code):
            continue
        j = code[k + 1]
        for module, check, argument in _check_calls(trees[j], imports):
            found.append(Exercise(check.removeprefix("check_"), argument, module, check, i,
                                  cells[i].get("id"), j))
    return found


def closure(trees: list, start: set[int], needed_by: dict[int, set[str]] | None = None) -> set[int]:
    """``start`` plus, transitively, the nearest earlier cell binding each name a chosen cell reads."""
    bound = [bindings(t).bound for t in trees]
    chosen, todo = set(start), sorted(start)
    while todo:
        i = todo.pop()
        names = (needed_by or {}).get(i, free_names(trees[i]))
        for name in names:
            for j in range(i - 1, -1, -1):
                if name in bound[j]:
                    if j not in chosen:
                        chosen.add(j)
                        todo.append(j)
                    break
    return chosen


def rule_cells(cells: list, found: list[Exercise] | None = None, trees: list | None = None) -> set[int]:
    """The cells grading mode needs by the rule of the module's docstring (tags not read)."""
    trees = code_trees(cells) if trees is None else trees
    found = exercises(cells, trees) if found is None else found
    start = {e.solution for e in found} | {e.check_cell for e in found}
    start |= {i for i, t in enumerate(trees) if is_setup(t)}
    return closure(trees, start) if found else set()


def tagged(cells: list) -> set[int]:
    return {i for i, c in enumerate(cells)
            if c.get("cell_type") == "code" and GRADING_TAG in c.get("metadata", {}).get("tags", [])}


def lesson_plan(lesson: str, cells: list) -> LessonPlan:
    trees = code_trees(cells)  # parsing is most of the cost: once per cell
    found = exercises(cells, trees)
    return LessonPlan(lesson, cells, found, rule_cells(cells, found, trees) | tagged(cells))
