"""Binder's environment is the tested one: environment.yml installs through constraints.txt.

environment.yml asks conda for Python and pip only; its pip section constrains every package
with ``-c constraints.txt`` (the pins CI installs with) and lists the runtime dependencies and
the ``lab`` extra of pyproject.toml, no test tools. The install matrix's ``binder`` target
(scripts/check_installs.py) installs exactly that section and runs lesson 01 in it.
"""

import re
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
TEST_TOOLS = {"pytest", "nbval", "ruff", "hypothesis", "psutil", "coverage"}


def constraint_lines():
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            yield Requirement(line)


def pins_for(python_full: str) -> dict[str, str]:
    """name -> pinned version for an interpreter of this full version (markers evaluated)."""
    env = {"python_version": ".".join(python_full.split(".")[:2]), "python_full_version": python_full}
    pins = {}
    for req in constraint_lines():
        if req.marker is None or req.marker.evaluate(env):
            name = canonical(req.name)
            assert name not in pins, f"{name} pinned twice for Python {python_full}"
            pins[name] = str(req.specifier).removeprefix("==")
    return pins


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def environment_yml():
    text = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    conda = re.findall(r"^  - ([^\s:]+)\s*$", text, re.M)
    pip = re.findall(r"^    - (.+?)\s*$", text, re.M)
    return conda, pip


def project():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def names(specs) -> set[str]:
    return {canonical(Requirement(s).name) for s in specs}


def test_conda_gives_python_and_pip_only():
    conda, _ = environment_yml()
    assert conda == ["python=3.11", "pip"], conda


def test_binder_pip_section_is_constrained_by_constraints_txt():
    _, pip = environment_yml()
    assert pip[0] == "-c constraints.txt", "the pip section must install through constraints.txt"
    requirements = [Requirement(line) for line in pip[1:]]
    assert all(not r.specifier and r.marker is None for r in requirements), "pins live in constraints.txt"
    assert all(not r.extras for r in requirements), "no extras (dask[...] pulls bokeh, pandas, ...)"


def test_binder_installs_the_runtime_and_lab_dependencies_and_no_test_tools():
    _, pip = environment_yml()
    listed = names(pip[1:])
    meta = project()
    wanted = names(meta["dependencies"]) | names(meta["optional-dependencies"]["lab"])
    assert listed == wanted, f"environment.yml vs pyproject: {sorted(listed ^ wanted)}"
    assert not listed & TEST_TOOLS
    assert not names(meta["optional-dependencies"]["lab"]) & TEST_TOOLS


def test_binder_and_ci_get_the_same_pins():
    # Binder's Python (conda-forge's newest 3.11) and CI's (3.11.7) fall on the same markers,
    # and every package Binder asks for is pinned there.
    _, pip = environment_yml()
    binder, ci = pins_for("3.11.14"), pins_for("3.11.7")
    assert binder == ci
    missing = [n for n in names(pip[1:]) if n not in binder]
    assert missing == [], f"not pinned in constraints.txt: {missing}"


def test_every_interpreter_gets_exactly_one_pin_per_package():
    # Including Debian 12's 3.11.2, which must not get a release that needs 3.11.5.
    versions = ["3.10.13", "3.11.2", "3.11.7", "3.12.1", "3.13.0"]
    every = {canonical(r.name) for r in constraint_lines()}
    pins = {version: pins_for(version) for version in versions}  # each parses the whole file
    for version in versions:
        assert set(pins[version]) <= every
    assert pins["3.11.2"]["soupsieve"] != pins["3.11.7"]["soupsieve"]
    for direct in names(project()["dependencies"]) | {"jupyterlab", "ipykernel", "nbval", "pytest"}:
        for version in versions:
            assert direct in pins[version], (direct, version)


def test_patch_level_markers_use_python_full_version():
    # python_version compares "3.11" only: a pin that needs 3.11.5 must say python_full_version.
    for req in constraint_lines():
        if req.marker is not None:
            for version in re.findall(r'python_version\s*[<>=!]+\s*"([\d.]+)"', str(req.marker)):
                assert version.count(".") == 1, f"{req}: use python_full_version for {version}"
    Marker('python_full_version >= "3.11.5"')  # the syntax itself parses


def test_postbuild_installs_without_deps():
    assert "pip install --no-deps -e ." in (ROOT / "postBuild").read_text()
