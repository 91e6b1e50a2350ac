"""Install the course as a new user would, on every interpreter found here, and run lesson 01.

    python scripts/check_installs.py                 # every target whose interpreter exists
    python scripts/check_installs.py py3.10 debian   # some of them
    python scripts/check_installs.py --list          # targets and the interpreter each uses

Targets:

* ``py3.10``, ``py3.11``, ``py3.12``, ``py3.13``: pyenv's interpreters (``$(pyenv root)/versions``)
  and ``debian``: the system ``/usr/bin/python3`` (3.11.2 on Debian 12). Each runs
  ``make install PYTHON=<it> VENV=<temp>`` (the README's path, constraints included), then
  lesson 01 under strict nbval.
* ``binder``: the pip section of ``environment.yml`` on Python 3.11, then ``postBuild``'s
  command; reports the environment's size and executes lesson 01 (Binder has no test tools).
* ``wheel``: builds a wheel, installs it (not editable) and loads every data set from a folder
  outside the clone.
* ``ipywidgets7``: Python 3.12 (Colab's) with ipywidgets 7, lesson 01 under strict nbval.

Each target gets a fresh virtual environment in a temporary folder that is removed afterwards.
Exit status 0 when every target that ran passed; a missing interpreter is reported, not failed.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSON = "notebooks/01_loops_to_threads.ipynb"
SITE_PACKAGES_GLOB = "lib/python3*/site-packages"


def pyenv_python(minor: str) -> str | None:
    """Newest pyenv interpreter of a minor version ("3.12"), or None."""
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        root = done.stdout.strip() or root
    found = glob.glob(f"{root}/versions/{minor}.*/bin/python{minor}")
    found.sort(key=lambda p: [int(x) for x in re.findall(r"\d+", Path(p).parts[-3])])
    return found[-1] if found else None


def debian_python() -> str | None:
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else None


INTERPRETERS = {
    "py3.10": lambda: pyenv_python("3.10"),
    "py3.11": lambda: pyenv_python("3.11"),
    "py3.12": lambda: pyenv_python("3.12"),
    "py3.13": lambda: pyenv_python("3.13"),
    "debian": debian_python,
    "binder": lambda: pyenv_python("3.11") or debian_python(),
    "wheel": lambda: pyenv_python("3.11") or sys.executable,
    "ipywidgets7": lambda: pyenv_python("3.12"),
}
DEFAULT = ["py3.10", "py3.12", "py3.13", "debian", "binder", "wheel", "ipywidgets7"]


def sh(cmd: list, cwd: Path = ROOT, env: dict | None = None, timeout: int = 1800):
    print("  $", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def must(done: subprocess.CompletedProcess, what: str) -> None:
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")


def version_of(python: str) -> str:
    done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "?"


def clean_env() -> dict:
    """The caller's environment minus anything that would leak its own venv into the new one."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "/.venv/" not in p)
    return env


def nbval(venv: Path) -> str:
    """Strict nbval on lesson 01 with the venv's pytest; returns pytest's closing line."""
    done = sh([venv / "bin/python", "-m", "pytest", LESSON, "-q", "-p", "no:cacheprovider"], env=clean_env())
    must(done, "strict nbval on lesson 01")
    return done.stdout.strip().splitlines()[-1]


def make_install(python: str, venv: Path) -> None:
    must(sh(["make", "-s", "install", f"PYTHON={python}", f"VENV={venv}"], env=clean_env()), "make install")


def check_interpreter(python: str, tmp: Path) -> dict:
    venv = tmp / "venv"
    make_install(python, venv)
    return {"lesson 01 strict nbval": nbval(venv)}


def environment_pip_lines() -> list[str]:
    """The pip section of environment.yml, one requirement or option per line."""
    lines, inside = [], False
    for raw in (ROOT / "environment.yml").read_text().splitlines():
        text = raw.split(" #", 1)[0].rstrip()
        if re.match(r"^\s*-\s*pip:\s*$", text):
            inside = True
            continue
        if inside:
            item = re.match(r"^\s{4,}-\s*(.+)$", text)
            if not item:
                break
            lines.append(item.group(1).strip())
    return lines


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def check_binder(python: str, tmp: Path) -> dict:
    venv = tmp / "venv"
    must(sh([python, "-m", "venv", venv]), "venv")
    pip = [venv / "bin/python", "-m", "pip", "install", "-q"]
    must(sh(pip + ["--upgrade", "pip>=23"], env=clean_env()), "pip upgrade")
    args = []
    for line in environment_pip_lines():  # pip resolves -c/-r paths from the working directory
        args += line.split(None, 1) if line.startswith("-") else [line]
    must(sh(pip + args, env=clean_env()), "pip install of environment.yml's pip section")
    postbuild = [line for line in (ROOT / "postBuild").read_text().splitlines() if "pip install" in line]
    for line in postbuild:
        must(sh(["bash", "-c", f"source {venv}/bin/activate && {line}"], env=clean_env()), "postBuild")
    site = next(venv.glob(SITE_PACKAGES_GLOB))
    test_tools = [name for name in ("pytest", "nbval", "ruff", "hypothesis") if (site / name).exists()]
    copy = tmp / "lesson"
    copy.mkdir()
    shutil.copy(ROOT / LESSON, copy)
    start = time.perf_counter()
    must(sh([venv / "bin/python", "-m", "mlpar.course", "run", copy / Path(LESSON).name], env=clean_env()),
         "executing lesson 01")
    return {"site-packages MB": round(size_mb(site)), "test tools installed": test_tools or "none",
            "lesson 01 executed in s": round(time.perf_counter() - start, 1)}


def check_wheel(python: str, tmp: Path) -> dict:
    start = time.perf_counter()
    dist = tmp / "dist"
    must(sh([python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, "."], env=clean_env()),
         "building the wheel")
    wheel = next(dist.glob("mlpar-*.whl"))
    venv = tmp / "venv"
    must(sh([python, "-m", "venv", venv]), "venv")
    install = [venv / "bin/python", "-m", "pip", "install", "-q", "-c", "constraints.txt", wheel]
    must(sh(install, env=clean_env()), "installing the wheel")
    outside = tmp / "elsewhere"
    outside.mkdir()
    probe = (
        "import mlpar, pathlib; from mlpar.core import data; "
        "from mlpar.algorithms.distributed import house_prices; "
        f"assert not pathlib.Path(mlpar.__file__).is_relative_to({str(ROOT)!r}), mlpar.__file__; "
        "names = sorted(data.manifest()); [data.verify(n) for n in names]; X, y = house_prices.load(); "
        "print(len(names), 'data sets verified;', 'house_prices', X.shape)"
    )
    done = sh([venv / "bin/python", "-c", probe], cwd=outside, env=clean_env())
    must(done, "loading the data sets from the installed wheel")
    return {"wheel": wheel.name, "loaded": done.stdout.strip(),
            "seconds": round(time.perf_counter() - start, 1)}


def check_ipywidgets7(python: str, tmp: Path) -> dict:
    # constraints.txt pins ipywidgets 8 and its front-end packages; drop those pins only.
    widget_pins = re.compile(r"^(ipywidgets|widgetsnbextension|jupyterlab[_-]widgets)==", re.I)
    pins = (ROOT / "constraints.txt").read_text().splitlines()
    kept = [line for line in pins if not widget_pins.match(line)]
    constraints = tmp / "constraints-ipywidgets7.txt"
    constraints.write_text("\n".join(kept) + "\n")
    venv = tmp / "venv"
    must(sh([python, "-m", "venv", venv]), "venv")
    pip = [venv / "bin/python", "-m", "pip", "install", "-q"]
    must(sh(pip + ["--upgrade", "pip>=23"], env=clean_env()), "pip upgrade")
    must(sh(pip + ["-c", constraints, "-e", ".[lab,dev]", "ipywidgets>=7.6,<8"], env=clean_env()), "install")
    probe = "import ipywidgets; print(ipywidgets.__version__)"
    version = sh([venv / "bin/python", "-c", probe]).stdout.strip()
    return {"ipywidgets": version, "lesson 01 strict nbval": nbval(venv)}


CHECKS = {"binder": check_binder, "wheel": check_wheel, "ipywidgets7": check_ipywidgets7}


def run_target(name: str) -> dict:
    python = INTERPRETERS[name]()
    if python is None:
        return {"target": name, "result": "skipped: interpreter not found"}
    row = {"target": name, "python": f"{python} ({version_of(python)})"}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"mlpar-{name}-") as tmp:
        try:
            row.update(CHECKS.get(name, check_interpreter)(python, Path(tmp)))
            row["result"] = "passed"
        except (RuntimeError, subprocess.TimeoutExpired, StopIteration) as exc:
            row["result"] = "FAILED"
            row["error"] = str(exc)
    row["minutes"] = round((time.perf_counter() - start) / 60, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*",
                        help=f"some of {', '.join(INTERPRETERS)} (default: {' '.join(DEFAULT)})")
    parser.add_argument("--list", action="store_true", help="show targets and interpreters, run nothing")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)
    targets = args.targets or DEFAULT
    unknown = sorted(set(targets) - set(INTERPRETERS))
    if unknown:
        parser.error(f"unknown targets {unknown}; expected some of {list(INTERPRETERS)}")
    if args.list:
        for name in INTERPRETERS:
            print(f"{name:12} {INTERPRETERS[name]() or 'not found'}")
        return 0
    rows = []
    for name in targets:
        print(f"== {name}", flush=True)
        rows.append(run_target(name))
        print(json.dumps(rows[-1], indent=2), flush=True)
    print("\n== summary")
    for row in rows:
        print(f"{row['target']:12} {row.get('python', ''):45} {row['result']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 1 if any(row["result"] == "FAILED" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
