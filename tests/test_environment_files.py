"""constraints.txt (pip) and environment.yml (Binder) must pin the same versions."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names that differ from PyPI's
CONDA_TO_PYPI = {}


def pip_pins(python="3.11"):
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, _, marker = line.partition(";")
        name, version = spec.strip().split("==")
        if marker:
            op, wanted = re.search(r'python_version\s*([<>=]+)\s*"([\d.]+)"', marker).groups()
            have = tuple(map(int, python.split(".")))
            want = tuple(map(int, wanted.split(".")))
            if not {"<": have < want, ">=": have >= want, "==": have == want}[op]:
                continue
        pins[name.lower().replace("_", "-")] = version
    return pins


def conda_pins():
    text = (ROOT / "environment.yml").read_text()
    pins = {}
    for name, version in re.findall(r"^\s*-\s*([A-Za-z0-9_.-]+)=([\w.]+)\s*$", text, re.M):
        pins[CONDA_TO_PYPI.get(name, name).lower()] = version
    return pins


def test_environment_yml_agrees_with_constraints():
    conda = conda_pins()
    python = conda.pop("python")
    pip = pip_pins(python)
    assert len(conda) >= 15
    disagree = {n: (v, pip.get(n)) for n, v in conda.items() if pip.get(n) != v}
    assert disagree == {}, f"environment.yml vs constraints.txt: {disagree}"


def direct_dependencies():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    specs = project["dependencies"] + [spec for group in extras for spec in group]
    return {re.match(r"[A-Za-z0-9_-]+", s).group(0).lower() for s in specs}


def test_every_direct_dependency_is_pinned_in_both():
    conda, pip = conda_pins(), pip_pins()
    names = direct_dependencies() | {"distributed"}  # dask[distributed] brings distributed
    assert {"numpy", "numba", "dask", "nbval", "pytest"} <= names
    for name in names:
        assert name in pip, f"{name} is not pinned in constraints.txt"
        assert name in conda, f"{name} is not pinned in environment.yml"


def test_postbuild_installs_without_deps():
    assert "pip install --no-deps -e ." in (ROOT / "postBuild").read_text()
