"""How a student's function works, not only what it returns: the checks' structural tools.

Where an exercise is about *how* something is computed (on several threads, with two
accumulators, tile by tile, without a Python loop), the result alone cannot tell a right
answer from a shortcut. These helpers look at the function itself, never at a stopwatch:

* ``prange_loops``: numba's own record of the parallel loops it compiled from ``prange``;
* ``source_tree`` / ``calls`` / ``loops``: the function's syntax tree (``ast``);
* ``Recorder``: an ndarray subclass that notes every matrix product and every Python-level
  walk over its rows, so a check can see what a function did with its inputs.
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
        obj.log = log if log is not None else {"products": [], "walks": 0}
        return obj

    def __array_finalize__(self, obj):
        self.log = getattr(obj, "log", {"products": [], "walks": 0})

    def _note_product(self, operands):
        self.log["products"].append(tuple(np.shape(o) for o in operands))

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
