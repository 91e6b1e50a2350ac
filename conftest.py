"""Project-wide pytest set-up, for unit tests and notebooks alike.

nbval opens ``--nbval-sanitize-with`` relative to the working directory; anchoring it to the
repository root lets an instructor run ``pytest notebooks/01_loops_to_threads.ipynb`` from any
folder of the repository and get the same strict comparison as CI.

The session as a whole is checked: after the last test or notebook, no child process of this
run may be left (a notebook kernel's workers included), and no ``/dev/shm`` entry created by a
process of this run (joblib's memmapping folders and loky's semaphores carry their owner's
pid). Other programs on the machine (parallel test runs of other checkouts) are ignored: only
pids seen in this run's process tree count.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil  # installed with dask.distributed, so wherever mlpar is
import pytest

from mlpar.core import cleanup


def pytest_configure(config):
    path = getattr(config.option, "nbval_sanitize_with", None)
    if path and not Path(path).is_absolute():
        config.option.nbval_sanitize_with = str(Path(config.rootpath) / path)
    _writable_matplotlib_config()
    _inline_figures()


def _writable_matplotlib_config() -> None:
    """Under a read-only HOME matplotlib warns on stderr that it cannot write its config folder,
    which fails strict nbval in the first cell that imports it: give it a temporary folder
    (notebook kernels inherit the variable). Found by scripts/hostile_envs.py readonly-home."""
    import tempfile

    if os.environ.get("MPLCONFIGDIR"):
        return
    folder = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "matplotlib"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder)  # access() trusts modes, not mounts
        probe.close()
    except OSError:
        import atexit
        import shutil

        os.environ["MPLCONFIGDIR"] = temporary = tempfile.mkdtemp(prefix="mlpar-matplotlib-")
        atexit.register(shutil.rmtree, temporary, ignore_errors=True)


def _inline_figures() -> None:
    """The committed outputs hold inline figures (image/png with a text/plain line). A backend
    named in the environment, such as MPLBACKEND=Agg on a headless machine, makes plt.show()
    in a notebook kernel display nothing, and strict nbval then fails every plotting cell:
    notebook kernels inherit the environment, so the variable is removed for them. Found on
    the GPU machine, whose set-up script exported MPLBACKEND=Agg."""
    os.environ.pop("MPLBACKEND", None)


# --- the session census ------------------------------------------------------------------------

_SESSION: dict = {}


def children() -> set[int]:
    """Child processes of this run, apart from multiprocessing's resource tracker."""
    return cleanup.child_processes()


def _shm() -> set[str]:
    try:
        return set(os.listdir(cleanup.SHM))
    except OSError:
        return set()


def _tree() -> set[int]:
    """pids of this process's descendants, looked up before and after every test and cell."""
    if _PROC_CHILDREN:
        return _tree_from_proc()
    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


# psutil finds children by reading the parent of every process on the machine (4 ms a call,
# twice per test: about 20 s of a `make test`); Linux lists each thread's children in
# /proc/PID/task/TID/children, so walking down from this process reads only its own tree.
# Kernels built without that file (and other systems) keep psutil's way.
_PROC_CHILDREN = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").is_file()


def _tree_from_proc() -> set[int]:
    found, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:  # exited meanwhile
            continue
        for tid in threads:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as listed:
                    kids = {int(k) for k in listed.read().split()}
            except OSError:
                continue
            todo += kids - found
            found |= kids
    return found


def pytest_sessionstart(session):
    _SESSION.update(shm=_shm(), children=children(), pids={os.getpid()} | _tree())


def pytest_runtest_logstart(nodeid, location):
    _SESSION.setdefault("pids", set()).update(_tree())
    # A new file: the previous notebook's kernel has been shut down. What it left in /dev/shm
    # is noted now, before the next lesson's first pool tidies up after dead processes and
    # hides it (a notebook run on its own would show it at the end).
    if location[0] != _SESSION.get("file"):
        _SESSION["file"] = location[0]
        _SESSION.setdefault("dead_owned", set()).update(_left_by_gone_processes())


def _left_by_gone_processes() -> set[str]:
    """/dev/shm entries new in this run whose owner, a process of this run, has exited."""
    found = set()
    for name in _shm() - _SESSION.get("shm", set()):
        pid = cleanup.owner_pid(name)
        if pid is not None and pid != os.getpid() and pid in _SESSION.get("pids", set()) \
                and not psutil.pid_exists(pid):
            found.add(name)
    return found


def pytest_runtest_logfinish(nodeid, location):
    _SESSION.setdefault("pids", set()).update(_tree())


def _shut_down_joblib_pool() -> None:
    # joblib keeps one loky pool alive between calls (that is what makes the second call
    # cheap) and removes it, with its /dev/shm folders, only when the interpreter exits: do
    # that now, so the census below sees what the tests really left behind.
    try:
        from joblib.externals.loky import reusable_executor
    except ImportError:
        return
    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.terminate(kill_workers=False) if hasattr(executor, "terminate") else (
            executor.shutdown(wait=True))


def session_leftovers(timeout: float = 10.0) -> list[str]:
    """Child processes and /dev/shm entries this run created and did not remove."""
    if "shm" not in _SESSION:
        return []
    _shut_down_joblib_pool()
    deadline = time.monotonic() + timeout
    while (left := children() - _SESSION["children"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    problems = [f"child process {pid} ({_name(pid)}) still running" for pid in sorted(left)]
    for name in sorted(_shm() - _SESSION["shm"]):
        pid = cleanup.owner_pid(name)
        if pid == os.getpid():
            # This process's own pool folders: joblib deletes them in its exit handler, after
            # this hook; only data still inside one would be a leak worth reporting now.
            path = cleanup.SHM / name
            if path.is_dir() and any(path.iterdir()):
                problems.append(f"/dev/shm/{name} still holds {len(list(path.iterdir()))} file(s)")
        elif pid in _SESSION["pids"]:
            problems.append(f"/dev/shm/{name} left by process {pid} of this run, now gone")
    for name in sorted(_SESSION.get("dead_owned", set()) - set(_shm())):
        problems.append(f"/dev/shm/{name} left by process {cleanup.owner_pid(name)} of this run "
                        "(removed later by another test's tidy-up)")
    return problems


def _name(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())[:120]
    except psutil.Error:
        return "gone"


def pytest_sessionfinish(session, exitstatus):
    problems = session_leftovers()
    if not problems:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = "this test session left behind:\n  " + "\n  ".join(problems[:40])
    if reporter is not None:
        reporter.write_sep("=", "left behind", red=True)
        reporter.write_line(text)
    else:
        print(text)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
