"""The grading process's limits: nothing left running, nothing written outside its scratch folder.

Jobs here are a cell or two with no lesson around them, so each costs one short process.
"""

from __future__ import annotations

import json
import os
import time

import psutil
import pytest

from mlpar.course.__main__ import main
from mlpar.course.grading import sandbox


def _job(*sources):
    return {"lesson": "none", "seed": 1,
            "cells": [{"kind": "solution", "exercises": ["x"], "source": s} for s in sources]}


# This process's graders start their tokens with this, so that a grader another test runs
# beside this one (the other xdist worker's) does not count here.
PREFIX = f"w{os.getpid()}-"


@pytest.fixture(autouse=True)
def _own_tokens(monkeypatch):
    monkeypatch.setenv(sandbox.TOKEN_PREFIX_VARIABLE, PREFIX)


def _graded_processes() -> set[int]:
    """Processes carrying a token of this test process's graders in their environment."""
    found = set()
    for proc in psutil.process_iter(["pid"]):
        try:
            token = proc.environ().get(sandbox.TOKEN_VARIABLE)
            if token and token.startswith(PREFIX) and proc.status() != psutil.STATUS_ZOMBIE:
                found.add(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (its children, theirs, ...)."""
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def _running(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (found without their environment)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


@pytest.fixture(params=["bwrap", "none"])
def isolation(request, monkeypatch):
    """Each test twice: in the bubblewrap sandbox (skipped where it cannot run) and without it."""
    monkeypatch.setenv(sandbox.SANDBOX_VARIABLE, request.param)
    if request.param == "bwrap":
        try:
            sandbox.isolation()
        except sandbox.SandboxUnavailable as exc:
            pytest.skip(str(exc))
    return request.param


ESCAPES = """\
import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)  # no step limit: the notebook's limit ends this run
import os, subprocess, sys, threading, time
import psutil
from joblib import Parallel, delayed
# leaves the process group, keeps the token
subprocess.Popen(["sleep", "{mark}1"], start_new_session=True)
if {clean}:  # leaves the group and drops its environment: only a PID namespace catches it
    subprocess.Popen(["sleep", "{mark}2"], start_new_session=True, env={{}})
    if os.fork() == 0:
        os.setsid()
        os.execve("/bin/sleep", ["sleep", "{mark}3"], {{}})
work = lambda: Parallel(n_jobs=2)(delayed(time.sleep)(300) for _ in range(2))
threading.Thread(target=work, daemon=True).start()
workers = 0
while True:  # and swallows whatever else would end it
    try:
        if workers < 2:  # say when the pool's workers run (the test's timeout is short)
            workers = sum("loky" in " ".join(p.cmdline()) for p in psutil.Process().children(recursive=True))
            if workers >= 2:
                print("WORKERS RUNNING", flush=True)
        time.sleep(0.05)
    except BaseException:
        pass"""


def test_a_fork_bomb_of_workers_and_escaped_children_are_all_gone_when_the_run_returns(isolation):
    # issue 36: no waiting after run_job returns; what it started must already be gone
    mark = f"300.{os.getpid()}{int(time.time() * 1000) % 10**6}"
    before = _graded_processes()
    outcome = sandbox.run_job(_job(ESCAPES.format(mark=mark, clean=isolation == "bwrap")),
                              timeout=4, memory_mb=3072)
    assert "WORKERS RUNNING" in outcome.output, outcome.output  # what must be gone was there
    assert outcome.timed_out and not outcome.finished
    assert outcome.isolation == ("bwrap" if isolation == "bwrap" else "process group")
    assert _graded_processes() - before == set()
    assert _running(mark) == []


def test_address_space_limit_turns_a_huge_allocation_into_memory_error():
    outcome = sandbox.run_job(_job("import numpy\nhog = numpy.ones(2**33)"), timeout=60, memory_mb=1024)
    (error,) = [e for e in outcome.events if e["event"] == "solution_error"]
    assert error["memory"] and "MemoryError" in error["message"]


def test_grader_exit_codes(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "absent"), "--out", str(tmp_path / "g.csv")]) == 2
    assert "expected a folder of notebooks" in capsys.readouterr().err
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv"), "--memory", "10"]) == 2
    (tmp_path / "bad.ipynb").write_text("{")
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 0  # graded: an error row
    assert "not valid JSON" in (tmp_path / "g.csv").read_text()


def test_grading_on_a_dask_cluster(tmp_path):
    from mlpar.cluster.dask_cluster import dask_client
    from mlpar.course.grading import grade

    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"mlpar": {"lesson": "00_index"}},
          "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "def usable_threads(affinity, quota):\n    return 1"}]}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ann.ipynb").write_text(json.dumps(nb))
    with dask_client(n_workers=1, processes=False) as client:
        rows = grade.grade(tmp_path / "sub", tmp_path / "g.csv", scheduler=client.scheduler.address,
                           options=grade.Options(timeout=120, memory_mb=3072, seed=3),
                           echo=lambda *_: None)
    by_exercise = {r["exercise"]: r for r in rows}
    assert by_exercise["usable_threads"]["passed"] == 0  # 1 is not the answer for 8 cores
    assert "returned 1, expected" in by_exercise["usable_threads"]["message"]
    assert "missing_solution" in by_exercise["parallel_sum_of_squares"]["flags"]


def test_limits_include_a_process_count_for_a_non_root_user():
    import subprocess
    import sys

    # In a child: the limits are for good. os.getuid is faked: as root the kernel ignores NPROC.
    script = """
import os, resource
os.getuid = lambda: 4242  # a user with no process running yet
from mlpar.course.grading.runner import limit
from mlpar.course.grading.sandbox import EXTRA_PROCESSES, process_limit
assert process_limit() == EXTRA_PROCESSES
limit(2**33, 2**28, process_limit())
assert resource.getrlimit(resource.RLIMIT_NPROC) == (EXTRA_PROCESSES, EXTRA_PROCESSES)
assert resource.getrlimit(resource.RLIMIT_AS) == (2**33, 2**33)
assert resource.getrlimit(resource.RLIMIT_FSIZE) == (2**28, 2**28)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_a_system_that_refuses_an_address_space_limit_is_graded_with_the_other_limits():
    import subprocess
    import sys

    # macOS answers setrlimit(RLIMIT_AS) with EINVAL (CPython: ValueError); faked here, in a child
    script = """
import resource
real = resource.setrlimit
def refuse(which, limits):
    if which == resource.RLIMIT_AS:
        raise ValueError("current limit exceeds maximum limit")
    real(which, limits)
resource.setrlimit = refuse
from mlpar.course.grading.runner import limit
limit(2**33, 2**28)
assert resource.getrlimit(resource.RLIMIT_FSIZE) == (2**28, 2**28)
assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_on_macos_the_output_says_memory_is_not_limited(tmp_path, monkeypatch, capsys):
    import sys

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.ipynb").write_text("{")  # an error row: nothing is run
    monkeypatch.setattr(sys, "platform", "darwin")
    assert main(["grade", str(tmp_path / "sub"), "--out", str(tmp_path / "g.csv")]) == 0
    assert "--memory is not enforced here (macOS" in capsys.readouterr().out


def test_native_windows_is_refused_with_the_way_to_grade_there(tmp_path, monkeypatch, capsys):
    monkeypatch.delattr("os.killpg")  # what native Windows lacks (with the resource module)
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 2
    assert "WSL 2" in capsys.readouterr().err and not (tmp_path / "g.csv").exists()


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL", "SIGINT, blocked by its parent",
                                 "SIGINT, ignored by its parent"])
def test_stopping_the_grader_stops_grading_at_once_and_leaves_nothing_running(tmp_path, how, monkeypatch):
    import signal
    import subprocess
    import sys

    # A signal mask and an ignored signal both survive exec: a grader started while its parent
    # had Ctrl-C blocked or ignored (this test runner's worker ignored it now and then, after
    # some earlier test) must still obey it.
    blocked = how.endswith("blocked by its parent")
    ignored = how.endswith("ignored by its parent")
    how = how.split(",")[0]

    if how == "SIGKILL":  # nothing can be caught: the sandbox's --die-with-parent must do it
        monkeypatch.setenv(sandbox.SANDBOX_VARIABLE, "bwrap")
        try:
            sandbox.isolation()
        except sandbox.SandboxUnavailable as exc:
            pytest.skip(str(exc))
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"mlpar": {"lesson": "00_index"}},
          "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "def usable_threads(affinity, quota):\n    return 1\n\n"
                               "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                               "while True:\n    pass"}]}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ann.ipynb").write_text(json.dumps(nb))
    before = _graded_processes()
    (tmp_path / "tmp").mkdir()  # a SIGKILLed grader cannot remove its own log folder: keep it here
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) if blocked \
        else None
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if ignored else None
    try:
        grader = subprocess.Popen([sys.executable, "-m", "mlpar.course", "grade", str(tmp_path / "sub"),
                                   "--out", str(tmp_path / "g.csv"), "--timeout", "300"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, TMPDIR=str(tmp_path / "tmp")))
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
    deadline = time.monotonic() + 60
    # until this grader's own grading process runs (another test's, on the other xdist
    # worker, would have the signal sent while this grader is still starting)
    while time.monotonic() < deadline and not _graded_processes() & _descendants(grader.pid):
        time.sleep(0.2)
    grader.send_signal(getattr(signal, how))
    try:
        out, err = grader.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        status = [line for line in open(f"/proc/{grader.pid}/status").read().splitlines()
                  if line.startswith(("SigBlk", "SigIgn", "SigCgt"))] if os.path.exists(
                      f"/proc/{grader.pid}/status") else []
        grader.send_signal(signal.SIGUSR1)  # the grader prints every thread's stack
        time.sleep(2)
        grader.kill()
        out, err = grader.communicate()
        pytest.fail(f"the grader did not stop within 60 s of {how}; this process's SIGINT "
                    f"handler {signal.getsignal(signal.SIGINT)!r}, the grader's {status}; its "
                    f"threads:\n{err[-8000:]}")
    if how == "SIGKILL":
        assert grader.returncode == -signal.SIGKILL
        deadline = time.monotonic() + 10  # the kernel's parent-death signal is not synchronous
        while time.monotonic() < deadline and _graded_processes() - before:
            time.sleep(0.1)
    else:
        assert grader.returncode == 130 and "--resume" in err
    assert _graded_processes() - before == set()
    assert (tmp_path / "g.csv").read_text().startswith("student,lesson,exercise")
    if how != "SIGKILL":
        assert os.listdir(tmp_path / "tmp") == []


def test_a_function_that_never_returns_fails_its_check_and_grading_goes_on():
    check = {"kind": "check", "module": "mlpar.exercises.l00_index", "check": "check_usable_threads",
             "argument": "usable_threads"}
    job = {"lesson": "00_index", "seed": 1, "cells": [
        {"kind": "solution", "exercises": ["first"],
         "source": "def usable_threads(affinity, quota):\n    while True:\n        pass"},
        dict(check, exercise="first"),
        {"kind": "solution", "exercises": ["second"],
         "source": "def usable_threads(affinity, quota):\n    return 1"},
        dict(check, exercise="second")]}
    outcome = sandbox.run_job(job, timeout=6, memory_mb=2048)
    assert outcome.finished and not outcome.timed_out
    first, second = [e for e in outcome.events if e["event"] == "check"]
    assert not first["passed"] and first["flags"] == ["timeout"]
    assert "called by the check, ran past the 1.5 s limit of one step" in first["message"]
    assert not second["passed"] and "returned 1, expected" in second["message"]


def _scratch_left() -> set[str]:
    import tempfile

    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("mlpar-grade-")}


def test_home_tmp_and_cwd_are_one_scratch_folder_removed_afterwards(isolation):
    left = _scratch_left()
    outcome = sandbox.run_job(_job("""\
import os, tempfile
open("here.txt", "w").write("x")
open(os.path.expanduser("~/home.txt"), "w").write("x")
tempfile.mkstemp()
os.makedirs("trap/inner")
open("trap/inner/big", "wb").write(b"x" * 1000)
os.chmod("trap/inner", 0o500)
os.chmod("trap", 0o500)  # folders the grader must make writable again to remove them
print("places", os.getcwd(), os.environ["HOME"], tempfile.gettempdir(), flush=True)"""),
        timeout=60, memory_mb=2048)
    assert outcome.finished, outcome.output
    cwd, home, tmp = outcome.output.split("places")[1].split()[:3]
    assert cwd == home == tmp
    assert _scratch_left() <= left
    if isolation == "bwrap":
        assert cwd == "/tmp/work"  # in memory, inside the sandbox only


def test_in_the_sandbox_nothing_outside_its_scratch_can_be_written_or_seen(isolation, tmp_path):
    if isolation != "bwrap":
        pytest.skip("without the sandbox a submission can write whatever the grader's user can")
    import mlpar.exercises
    from mlpar.course.lessons import NOTEBOOKS

    canary = tmp_path / "canary.txt"
    canary.write_text("before")
    installed = mlpar.exercises.__file__
    home_canary = os.path.expanduser(f"~/.mlpar-canary-{os.getpid()}")
    sandbox.hide(tmp_path, NOTEBOOKS)
    source = f"""\
import os, socket, subprocess
tried = {{}}
for path in [{str(canary)!r}, {installed!r}, {home_canary!r}]:
    try:
        with open(path, "a") as f:
            f.write("damage")
        tried[path] = "written"
    except OSError as exc:
        tried[path] = type(exc).__name__
print("TRIED", tried, flush=True)
print("SEES", os.path.exists({str(canary)!r}), os.listdir({str(NOTEBOOKS)!r}), flush=True)
print("FIRST", open("/proc/1/cmdline", "rb").read().split(bytes(1))[0].decode(), flush=True)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("NETWORK yes", flush=True)
except OSError:
    print("NETWORK no", flush=True)
subprocess.run("echo shell >> {home_canary}", shell=True)
get_ipython().system("echo bang >> {home_canary}")"""
    outcome = sandbox.run_job(_job(source), timeout=60, memory_mb=2048)
    assert outcome.finished, outcome.output
    assert "written" not in outcome.output.split("TRIED")[1].splitlines()[0], outcome.output
    assert "SEES False []" in outcome.output and "NETWORK no" in outcome.output, outcome.output
    assert "bwrap" in outcome.output.split("FIRST")[1].splitlines()[0]  # its own /proc, not the grader's
    assert canary.read_text() == "before" and not os.path.exists(home_canary)
    assert "damage" not in open(installed).read()


def test_a_job_that_starts_after_a_stop_is_ended_at_once():
    # Ctrl-C can land while a job thread is between starting its process and registering it;
    # stop_all then finds nothing to kill. The job must still end at once, not after its timeout.
    sandbox.stop_all()
    try:
        start = time.monotonic()
        outcome = sandbox.run_job(_job("while True:\n    pass"), timeout=120, memory_mb=1024)
        assert time.monotonic() - start < 15  # its own step timeout would end it after 30 s
        assert not outcome.finished and not outcome.timed_out
    finally:
        sandbox.allow_jobs()
    outcome = sandbox.run_job(_job("x = 1"), timeout=60, memory_mb=1024)
    assert outcome.finished  # allowed again: a later grade() in this process runs normally


def test_the_runner_finds_the_graders_mlpar_where_it_is_not_installed(tmp_path):
    """A course used from a clone that was never installed (PYTHONPATH=., as on the GPU
    machine) had every submission crash: isolated mode (-I) ignores PYTHONPATH. -S here hides
    site-packages, so no installed or editable mlpar is found: only the folder the command adds."""
    import subprocess
    import sys

    module = "mlpar.course.grading.csv_safety"  # imports nothing outside the standard library
    bare = [sys.executable, "-I", "-S", "-B", "-m", module]
    found = sandbox.module_command(sys.executable, module, ["an argument"])
    found.insert(1, "-S")
    for command, ok in [(bare, False), (found, True)]:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={})
        assert (done.returncode == 0) == ok, done.stderr
        assert ("No module named 'mlpar'" in done.stderr) == (not ok), done.stderr


def test_tokens_carry_the_prefix_only_when_it_is_a_short_plain_name(monkeypatch):
    for value, expected in [("w12-", "w12-"), ("ok_1", "ok_1"), ("", ""), ("a b", ""),
                            ("x" * 33, ""), ("../x", "")]:
        monkeypatch.setenv(sandbox.TOKEN_PREFIX_VARIABLE, value)
        assert sandbox.token_prefix() == expected, value
    monkeypatch.setenv(sandbox.TOKEN_PREFIX_VARIABLE, PREFIX)
    outcome = sandbox.run_job(_job(f"import os\nprint('TOKEN', os.environ['{sandbox.TOKEN_VARIABLE}'])"),
                              timeout=60, memory_mb=1024)
    assert f"TOKEN {PREFIX}" in outcome.output, outcome.output
