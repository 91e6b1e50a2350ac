"""Run the unit tests and strict nbval of lessons 00-03 on machines a student might have.

    python scripts/hostile_envs.py                      # every environment, the full selection
    python scripts/hostile_envs.py one-cpu tiny-shm     # some of them
    python scripts/hostile_envs.py --list               # the environments and how each is made
    python scripts/hostile_envs.py --select tests/core notebooks/00_index.ipynb one-cpu

Each environment runs one ``pytest`` (unit tests and strict nbval together) in a changed world:

* ``one-cpu``: ``taskset -c 0`` with ``NUMBA_NUM_THREADS=1``: one core by affinity and numba's
  pool set to one thread, as on a 1-core Binder.
* ``cpu-quota``: a cgroup (v1 ``cpu`` or v2 ``cpu.max``) granting half the cores' CPU time,
  which the affinity mask does not show. Needs a writable cgroup tree (root in a container);
  otherwise reported as not possible here, with the reason.
* ``numba-one-thread``: ``NUMBA_NUM_THREADS=1``.
* ``no-tbb``, ``no-tbb-no-openmp``: numba's TBB layer (and OpenMP) made unimportable through a
  ``sitecustomize`` on ``PYTHONPATH``, as on wheels or slim images that lack the libraries.
* ``tiny-shm``: a 64 MB ``/dev/shm`` (Docker's default); ``readonly-shm``: one nobody can write
  (the closest to none that keeps the path). Both in a private mount namespace (``unshare``).
* ``no-cache-info``: ``MLPAR_HARDWARE=llc=unknown``, the reader's view of a machine whose
  ``/sys/devices/system/cpu`` says nothing; ``sysfs-cpu-hidden``: that folder really emptied
  (a tmpfs mounted over it, private mount namespace); ``big-cache``: ``MLPAR_HARDWARE=llc=480MiB``,
  the virtual machine of issue 24.
* ``readonly-home``: ``HOME`` a folder no one can write (a read-only tmpfs under ``unshare``
  when run as root, whom file modes do not stop; ``chmod 555`` otherwise).
* ``odd-path``: the committed tree (``git archive HEAD``) extracted under a path with spaces
  and non-ASCII characters, and run from there.

Each environment passes, fails (the last lines of pytest's output say why) or is reported as
not possible on this machine, with the reason. Exit status 1 when any environment failed.
The default selection is the whole of ``tests`` and lessons 00-03 (the README's test command
plus the lessons): 5-10 minutes per environment on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ["notebooks/00_index.ipynb", "notebooks/01_loops_to_threads.ipynb",
           "notebooks/02_linear_algebra.ipynb", "notebooks/03_model_selection.ipynb"]
DEFAULT_SELECTION = ["tests", *LESSONS]
ODD_FOLDER = "mlpar cours é ü ß"


class NotPossible(Exception):
    """This machine cannot make the environment (no tool, no permission): a reason, not a failure."""


class World:
    """How to run a command in one environment: a command prefix, environment variables, a
    working directory, and what to undo afterwards."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.prefix: list[str] = []
        self.env: dict[str, str] = {}
        self.cwd = ROOT
        self.undo: list = []
        self.note = ""


def _unshare(world: World, *mounts: str) -> None:
    """Run in a private mount namespace after ``mounts`` (shell commands); root-in-namespace
    (``-r``) when not root, so no privilege is needed where user namespaces are allowed."""
    if not shutil.which("unshare"):
        raise NotPossible("no unshare command (util-linux)")
    flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    probe = subprocess.run(["unshare", *flags, "sh", "-c", "; ".join(mounts) or "true"],
                           capture_output=True, text=True)
    if probe.returncode:
        raise NotPossible(f"a private mount namespace is not allowed here: {probe.stderr.strip()}")
    world.prefix += ["unshare", *flags, "sh", "-c", " && ".join([*mounts, 'exec "$@"']), "sh"]


def one_cpu(world: World) -> None:
    if not shutil.which("taskset"):
        raise NotPossible("no taskset command (util-linux)")
    world.prefix += ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    world.env["NUMBA_NUM_THREADS"] = "1"


def cpu_quota(world: World) -> None:
    cores = len(os.sched_getaffinity(0))
    quota = max(0.5, cores / 2)  # below the core count, and visible only through the quota
    period = 100_000
    v1, v2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
    group = None
    try:
        if (v1 / "cpu.cfs_quota_us").exists():
            group = v1 / f"mlpar_hostile_{os.getpid()}"
            group.mkdir()
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(int(quota * period)))
        elif (v2 / "cgroup.controllers").exists():
            group = v2 / f"mlpar_hostile_{os.getpid()}"
            group.mkdir()
            (group / "cpu.max").write_text(f"{int(quota * period)} {period}")
        else:
            raise NotPossible("no cgroup cpu controller mounted at /sys/fs/cgroup")
    except OSError as err:
        if group is not None and group.exists():
            group.rmdir()
        raise NotPossible(f"cannot create a cgroup with a CPU quota here ({err.strerror}: "
                          f"{err.filename}); run as root in a container, or use systemd-run "
                          "--scope -p CPUQuota=50%") from None
    world.undo.append(lambda: _remove_group(group))
    world.prefix += ["sh", "-c", f'echo $$ > "{group}/cgroup.procs" && exec "$@"', "sh"]
    world.note = f"{quota:g} {'core' if quota == 1 else 'cores'}'{'s' if quota == 1 else ''} worth " \
                 f"of CPU time on {cores} cores"


def _remove_group(group: Path) -> None:
    for _ in range(50):  # its processes may take a moment to exit
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _block_modules(world: World, modules: list[str]) -> None:
    folder = world.scratch / "blocked"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import sys\n\n\n"
        "class _Blocked:\n"
        f"    names = {modules!r}\n\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in self.names:\n"
        "            raise ImportError(f'{name} is blocked (hostile_envs.py)')\n\n\n"
        "sys.meta_path.insert(0, _Blocked())\n")
    world.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder),
                                                            world.env.get("PYTHONPATH")]))


def no_tbb(world: World) -> None:
    _block_modules(world, ["tbb", "numba.np.ufunc.tbbpool"])


def no_tbb_no_openmp(world: World) -> None:
    _block_modules(world, ["tbb", "numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"])


def tiny_shm(world: World) -> None:
    _unshare(world, "mount -t tmpfs -o size=64m tmpfs /dev/shm")


def readonly_shm(world: World) -> None:
    _unshare(world, "mount -t tmpfs -o ro,size=1m tmpfs /dev/shm")


def sysfs_cpu_hidden(world: World) -> None:
    _unshare(world, "mount -t tmpfs -o ro,size=1m tmpfs /sys/devices/system/cpu")


def readonly_home(world: World) -> None:
    home = world.scratch / "home"
    home.mkdir()
    if os.geteuid() == 0:  # file modes do not stop root: a read-only mount does
        _unshare(world, f"mount -t tmpfs -o ro,size=1m tmpfs '{home}'")
    else:
        home.chmod(0o555)
        world.undo.append(lambda: home.chmod(0o755))
    world.env["HOME"] = str(home)


def odd_path(world: World) -> None:
    target = world.scratch / ODD_FOLDER / "clone"
    target.mkdir(parents=True)
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True,
                                 check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise NotPossible(f"cannot export the committed tree with git archive: {err}") from None
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    world.cwd = target
    # notebook kernels import mlpar too: from the copy, not the editable install of ROOT
    world.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), world.env.get("PYTHONPATH")]))


def _variables(**values):
    def make(world: World) -> None:
        world.env.update(values)
    return make


ENVIRONMENTS = {
    "baseline": _variables(),
    "one-cpu": one_cpu,
    "cpu-quota": cpu_quota,
    "numba-one-thread": _variables(NUMBA_NUM_THREADS="1"),
    "no-tbb": no_tbb,
    "no-tbb-no-openmp": no_tbb_no_openmp,
    "tiny-shm": tiny_shm,
    "readonly-shm": readonly_shm,
    "no-cache-info": _variables(MLPAR_HARDWARE="llc=unknown"),
    "sysfs-cpu-hidden": sysfs_cpu_hidden,
    "big-cache": _variables(MLPAR_HARDWARE="llc=480MiB"),
    "readonly-home": readonly_home,
    "odd-path": odd_path,
}


def run_environment(name: str, selection: list[str], timeout: float = 3600.0) -> dict:
    """One environment: ``{"environment", "result": passed|failed|not possible, "seconds",
    "summary", "detail"}``."""
    if name not in ENVIRONMENTS:
        raise ValueError(f"name: expected one of {', '.join(ENVIRONMENTS)}, got {name!r}")
    with tempfile.TemporaryDirectory(prefix="mlpar-hostile-") as scratch:
        world = World(Path(scratch))
        try:
            ENVIRONMENTS[name](world)
        except NotPossible as why:
            return {"environment": name, "result": "not possible", "seconds": 0.0,
                    "summary": str(why), "detail": ""}
        env = {k: v for k, v in os.environ.items() if k != "MLPAR_HARDWARE"}  # the real machine
        env.update(world.env)
        command = [*world.prefix, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-o", "cache_dir=" + str(world.scratch / "cache"), *selection]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=world.cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as err:
            output, code = f"{err.stdout or ''}\ntimed out after {timeout:.0f} s", -1
        finally:
            for undo in world.undo:
                undo()
        lines = [line for line in output.splitlines() if line.strip()]
        summary = next((line.strip("= ") for line in reversed(lines)
                        if " passed" in line or " failed" in line or " error" in line),
                       lines[-1] if lines else f"exit status {code}")
        failures = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
        return {"environment": name, "result": "passed" if code == 0 else "failed",
                "seconds": time.perf_counter() - start, "note": world.note,
                "summary": summary, "detail": "\n".join(failures[:20] or lines[-15:])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("environments", nargs="*", help="names (default: all)")
    parser.add_argument("--select", nargs="+", default=DEFAULT_SELECTION,
                        help="pytest paths to run in each (default: tests and lessons 00-03)")
    parser.add_argument("--list", action="store_true", help="list the environments and stop")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.list:
        for name in ENVIRONMENTS:
            print(name)
        print("(how each is made: the module docstring, python -m pydoc scripts/hostile_envs.py)")
        return 0
    unknown = [n for n in args.environments if n not in ENVIRONMENTS]
    if unknown:
        parser.error(f"unknown environments {unknown}; --list shows them")
    rows = []
    for name in args.environments or list(ENVIRONMENTS):
        row = run_environment(name, args.select)
        rows.append(row)
        note = f" ({row['note']})" if row.get("note") else ""
        print(f"{name:<18} {row['result']:<13} {row['seconds']:6.0f} s  {row['summary']}{note}",
              flush=True)
        if row["result"] == "failed":
            print("    " + row["detail"].replace("\n", "\n    "), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return int(any(r["result"] == "failed" for r in rows))


if __name__ == "__main__":
    sys.exit(main())
