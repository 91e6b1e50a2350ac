"""Keeping a grade about what the student wrote: a static scan and a run-time snapshot.

``scan`` reads a solution cell before it runs and names every line that reaches for the
grading machinery: assigning to (or deleting) an attribute of an imported module, ``setattr``
or ``delattr`` on one, ``vars(module)[...] =``, and any use of ``sys.modules``, ``builtins``,
``__builtins__``, ``importlib``, ``__import__``, ``__code__``, ``__globals__``, frames
(``inspect.stack``, ``f_locals``, ``f_back``), ``os._exit``, ``sys.exit``, ``exit()``/``quit()``,
``signal.raise_signal``, ``ctypes``, ``gc.get_referrers`` (and its kin), process escapes
(``os.fork``, ``os.setsid``, ``subprocess``), shell commands (``!cmd``, ``%%bash``); and reading
the instructor's answers (``mlpar.course``, ``NOTEBOOKS``, a ``.ipynb`` path, a check module's
``*_model``/``reference*``). Calls are recognised through aliases (``import os as _os``). The
cell still runs as written; the grader flags it ``tampering``.

``Snapshot`` is taken in the grading process after the official set-up cells and before the
first line of student code. Before each check, ``restore`` puts back every module attribute
that student code replaced or deleted (``math.isclose``, ``numpy.allclose``, a check's helper)
and every function of ``mlpar`` whose code or defaults were swapped, and returns what it
found. A check whose own module was altered fails (:func:`check_altered`).
"""

from __future__ import annotations

import ast
import sys
import types

from mlpar.course.grading.plan import bindings

# Names whose mere use in a solution cell reaches for the machinery of the run itself.
_FORBIDDEN_NAMES = {"builtins", "__builtins__", "importlib", "__import__", "ctypes"}
_FORBIDDEN_ATTRIBUTES = {"__code__", "__globals__", "__defaults__", "__kwdefaults__", "__dict__",
                         "__builtins__", "_getframe", "f_globals", "f_back", "f_locals", "tb_frame",
                         "gi_frame", "cr_frame", "ag_frame", "_implementation"}
_FORBIDDEN_CALLS = {("os", "_exit"), ("sys", "exit"), ("os", "kill"), ("os", "killpg"),
                    ("os", "abort"), ("os", "fork"), ("gc", "get_referrers"), ("gc", "get_objects"),
                    ("gc", "get_referents"), ("inspect", "stack"), ("inspect", "currentframe"),
                    ("inspect", "getouterframes"), ("inspect", "trace"), ("signal", "raise_signal"),
                    ("os", "system"), ("os", "popen"), ("subprocess", "Popen"), ("subprocess", "run"),
                    ("os", "setsid"), ("os", "execve"), ("os", "execv")}
# Where the instructor's answers are: reading them from a solution is flagged, not only refused
_INSTRUCTOR_NAMES = {"NOTEBOOKS", "lesson_paths", "read_notebook"}
_REFERENCE_SUFFIXES = ("_model", "_reference", "reference_")


def _root(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def scan(source: str, modules: set[str]) -> list[str]:
    """What in ``source`` touches the grading machinery, one finding per line (empty: nothing).

    ``modules``: names bound to imported modules in the lesson (``np``, ``math``, ``exercises``);
    the cell's own imports and aliases of those names (``ex = exercises``) are added.
    """
    from mlpar.course.grading.plan import parse

    tree = parse(source)
    if tree is None:
        return []
    modules = set(modules) | set(bindings(tree).imports)
    for node in ast.walk(tree):  # aliases: ex = exercises
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                and node.value.id in modules):
            modules |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    imports = bindings(tree).imports  # alias -> what it is bound to: `import os as _os`
    found = []

    def note(node, what):
        found.append(f"line {getattr(node, 'lineno', '?')}: {what}")

    def real(name: str) -> str:
        return imports.get(name, name)

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            base = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
            if isinstance(target, ast.Attribute) and _root(target) in modules:
                note(node, f"assigns to {ast.unparse(target)}, an attribute of an imported module")
            elif (isinstance(target, ast.Subscript) and isinstance(base, ast.Call)
                  and isinstance(base.func, ast.Name) and base.func.id in {"vars", "globals"}):
                note(node, f"writes into {ast.unparse(base)}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                    a.name for a in node.names]:
                if name.split(".")[0] in _FORBIDDEN_NAMES:
                    note(node, f"imports {name}")
        if isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES:
            note(node, f"uses {node.id}")
        elif isinstance(node, ast.Attribute):
            if node.attr in _FORBIDDEN_ATTRIBUTES:
                note(node, f"uses {ast.unparse(node)}")
            elif node.attr == "modules" and _root(node) == "sys":
                note(node, "uses sys.modules")
            elif isinstance(node.value, ast.Name) and (real(node.value.id), node.attr) in _FORBIDDEN_CALLS:
                note(node, f"uses {node.value.id}.{node.attr}")
            elif node.attr in _INSTRUCTOR_NAMES or (
                    _root(node) in modules and node.attr.endswith(_REFERENCE_SUFFIXES[:2])
                    or node.attr.startswith(_REFERENCE_SUFFIXES[2])):
                note(node, f"reads the instructor's answers ({ast.unparse(node)})")
            elif node.attr == "course" and _root(node) == "mlpar":
                note(node, "uses mlpar.course (the grader and the instructor's notebooks)")
            elif (node.attr in {"system", "getoutput"} and isinstance(node.value, ast.Call)
                  and isinstance(node.value.func, ast.Name) and node.value.func.id == "get_ipython"):
                note(node, "runs a shell command (! or get_ipython().system)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in {"setattr", "delattr"} and node.args:
                first = node.args[0]
                if not isinstance(first, ast.Name) or first.id in modules:
                    note(node, f"calls {name} on {ast.unparse(first)}")
            elif name in {"exit", "quit"}:
                note(node, f"calls {name}()")
            elif tuple(real(name).rsplit(".", 1)) in _FORBIDDEN_CALLS:
                note(node, f"calls {real(name)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "run_cell_magic" and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in {"bash", "sh", "script", "system", "perl", "ruby"}):
            note(node, f"runs a shell cell (%%{node.args[0].value})")
        if isinstance(node, ast.Name) and node.id in _INSTRUCTOR_NAMES:
            note(node, f"reads the instructor's notebooks ({node.id})")
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mlpar.course")) or (
                isinstance(node, ast.Import) and any(a.name.startswith("mlpar.course") for a in node.names)):
            note(node, "imports mlpar.course (the grader and the instructor's notebooks)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ".ipynb" in node.value:
            note(node, "names a notebook file (the instructor's answers are not to be read)")
    return sorted(set(found), key=lambda s: (int(s.split()[1].rstrip(":")) if s.split()[1][0].isdigit()
                                             else 0, s))


# --- at run time, inside the grading process ---------------------------------------------------

_FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")
_MISSING = object()


def _ours(name: str) -> bool:
    return name == "mlpar" or name.startswith("mlpar.")


class Snapshot:
    """Module namespaces (by identity) and ``mlpar``'s function code, to restore before a check."""

    def __init__(self):
        self.modules: dict[str, tuple[types.ModuleType, dict]] = {}
        self.functions: dict[int, tuple[object, str, tuple]] = {}
        self.classes: dict[int, tuple[type, str, dict]] = {}
        for name, module in list(sys.modules.items()):
            if isinstance(module, types.ModuleType):
                self.modules[name] = (module, dict(vars(module)))
                if _ours(name):
                    self._remember_code(name, module)

    def _remember_code(self, name, module):
        for attr, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType):
                self.functions[id(value)] = (value, f"{name}.{attr}",
                                             tuple(getattr(value, p) for p in _FUNCTION_PARTS))
            elif isinstance(value, type) and value.__module__ == name:
                self.classes[id(value)] = (value, f"{name}.{attr}", dict(vars(value)))
                for key, member in vars(value).items():
                    if isinstance(member, types.FunctionType):
                        self.functions[id(member)] = (member, f"{name}.{attr}.{key}",
                                                      tuple(getattr(member, p) for p in _FUNCTION_PARTS))

    def restore(self) -> list[str]:
        """Put back what student code changed; return ``"what changed"`` lines (empty: nothing)."""
        changed = []
        for name, (module, before) in self.modules.items():
            if sys.modules.get(name) is not module:
                changed.append(f"sys.modules[{name!r}] replaced")
                sys.modules[name] = module
            now = vars(module)
            for attr, old in before.items():
                new = now.get(attr, _MISSING)
                if new is old or (attr.startswith("__") and attr.endswith("__")):
                    continue
                if _checks_own_data(name, old, new):
                    setattr(module, attr, old)  # a check's own log or cache (it rebinds it itself)
                elif _watched(name, old, new):
                    changed.append(f"{name}.{attr} {'deleted' if new is _MISSING else 'replaced'}")
                    setattr(module, attr, old)
        for function, label, parts in self.functions.values():
            if tuple(getattr(function, p) for p in _FUNCTION_PARTS) != parts:
                changed.append(f"{label}: its code or defaults were swapped")
                for part, value in zip(_FUNCTION_PARTS, parts):
                    setattr(function, part, value)
        for cls, label, before in self.classes.values():
            now = dict(vars(cls))
            for key in set(before) | set(now):
                old, new = before.get(key, _MISSING), now.get(key, _MISSING)
                if key in {"__dict__", "__weakref__", "__doc__"} or new is old:
                    continue
                if not any(callable(v) or isinstance(v, (staticmethod, classmethod, property))
                           for v in (old, new) if v is not _MISSING):
                    continue  # data a check keeps on its own classes (a log of calls)
                changed.append(f"{label}.{key} changed")
                if key in before:
                    setattr(cls, key, before[key])
                else:
                    delattr(cls, key)
        return changed


def _checks_own_data(module: str, old, new) -> bool:
    """Data (no function, class or module) of a check module: put back without a finding."""
    if not module.startswith("mlpar.exercises") or new is _MISSING:
        return False
    return not any(callable(v) or isinstance(v, (type, types.ModuleType)) for v in (old, new))


def _watched(module: str, old, new) -> bool:
    """A change worth restoring: in ``mlpar``, ``builtins``, ``math``, or of a callable or module.

    Libraries keep plain data in their modules' globals (caches, counters, lazily filled
    settings) and change it as they run; those are left alone.
    """
    if _ours(module) or module in {"builtins", "math", "operator", "functools"}:
        return True
    return any(callable(v) or isinstance(v, types.ModuleType) for v in (old, new) if v is not _MISSING)


def check_altered(changes: list[str], check_module: str) -> list[str]:
    """The changes that swapped the code of a check's function (its own or a shared helper's).

    A rebound module attribute (``exercises.check_x = ...``) is put back and harmless: the grader
    calls the check it imported itself. Code swapped inside a function object it holds is not.
    """
    return [c for c in changes if c.startswith("mlpar.exercises") and "code or defaults" in c]
