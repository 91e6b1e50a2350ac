"""The package's architecture, read from its source with ``ast``: layers only import downwards.

Layers, lowest first: core → cpu, gpu (one machine) → cluster → algorithms → exercises,
claims, benchmarks, course → bench (the command line). A module may import from its own subpackage and
from any layer below; never from a layer above. No import cycle between modules, and no private
name (``_x``) imported from another module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mlpar"

LAYER = {
    "core": 0,
    "cpu": 1, "gpu": 1,
    "cluster": 2,
    "algorithms": 3,
    "exercises": 4, "claims": 4, "benchmarks": 4, "course": 4,
    "bench": 5,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> list[tuple[str, list[str], int]]:
    """Every ``mlpar`` import in a file, module level or inside functions: (module, names, line)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "mlpar" or node.module.startswith("mlpar."):
                found.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append(("." * node.level + (node.module or ""), [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("mlpar")]
    return found


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    return LAYER.get(parts[1]) if len(parts) > 1 else None


def targets(module: str, names: list[str], known: dict[str, Path]) -> list[str]:
    """The mlpar modules an import statement loads: ``from mlpar.core import timing`` → core.timing."""
    out = []
    for name in names:
        full = f"{module}.{name}"
        out.append(full if full in known else module)
    return out or [module]


ALL = modules()


def test_the_layers_cover_every_subpackage():
    tops = {name.split(".")[1] for name in ALL if "." in name}
    assert tops <= set(LAYER), f"subpackages without a layer: {sorted(tops - set(LAYER))}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_imports_go_down_only(name):
    here = layer_of(name)
    for module, names, line in imports(ALL[name]):
        assert not module.startswith("."), f"{name}:{line}: relative import {module}; use mlpar.<layer>"
        for target in targets(module, names, ALL):
            there = layer_of(target)
            if here is None or there is None:
                continue
            assert there <= here, (
                f"{name}:{line} imports {target}: layer {target.split('.')[1]} is above "
                f"{name.split('.')[1]}"
            )


@pytest.mark.parametrize("name", sorted(ALL))
def test_no_private_names_from_other_modules(name):
    for module, names, line in imports(ALL[name]):
        # dunder names (__version__) are public by convention, not private
        private = [n for n in names if n.startswith("_") and not n.endswith("__")
                   and f"{module}.{n}" not in ALL]
        assert not private, f"{name}:{line} imports private {private} from {module}"


def test_no_import_cycles():
    graph = {
        name: {t for module, names, _ in imports(path) for t in targets(module, names, ALL)
               if t in ALL and t != name}
        for name, path in ALL.items()
    }
    # a package's __init__ is imported with its modules; only edges between modules count
    done, stack = set(), []

    def visit(node):
        if node in stack:
            cycle = stack[stack.index(node):] + [node]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if node in done:
            return
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        stack.pop()
        done.add(node)

    for name in sorted(graph):
        visit(name)


def test_the_checker_catches_an_upward_import(tmp_path):
    # the rule itself must be able to fail: an upward edge, as the walker sees it
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from mlpar.algorithms.svm import smo\n", encoding="utf-8")
    (module, names, _), = imports(bad)
    assert [layer_of(t) for t in targets(module, names, ALL)] == [LAYER["algorithms"]]
    assert layer_of("mlpar.core.validation") < LAYER["algorithms"]
