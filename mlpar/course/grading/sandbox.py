"""One submission, one process, isolated by the operating system; nothing left behind.

``run_job`` starts :mod:`mlpar.course.grading.runner` with ``python -I -B`` (no current folder
or user site on ``sys.path``, no ``PYTHON*`` variables, no bytecode written; only the folder the
grader's own mlpar came from is added, :func:`module_command`), under an
address-space limit (``RLIMIT_AS``, set by the runner before it reads any student code), a
file-size limit and a wall-clock timeout (a quarter of it for each solution cell and each
check). Its events come back on a pipe only the grader reads (:mod:`~.channel`), never a file.

**With bubblewrap** (``bwrap``, the sandbox Flatpak uses; :func:`isolation` says whether it works
here), the runner lives in its own PID, network, IPC and UTS namespaces and its own session:

* the whole filesystem is mounted read-only (the course's install, the submissions, the
  outputs, HOME), with the instructor's notebooks, the submissions folder, the output folders
  and the grader's HOME hidden under empty folders (unless Python itself lives there);
* the only writable places are a fresh ``/tmp`` (its HOME, TMPDIR and working folder),
  ``/dev/shm`` and nothing else, each in memory with a size cap (:data:`SCRATCH_BYTES`), gone
  when the run ends: there is no scratch folder on disk to clean up or to fill;
* no network (only a loopback of its own), no ``/proc`` of the grader (its environment and
  command line are out of sight);
* every process the submission starts, ``setsid`` or not, is in the namespace, and dies with
  it: when the runner is done (or killed at the timeout), the namespace's first process is
  killed, the kernel kills the rest, and ``run_job`` returns only after ``bwrap`` has reaped
  them all (a deterministic wait, no polling). ``--die-with-parent`` ends the namespace if the
  grader itself is killed (SIGKILL included).

**Without it** (not installed, or user namespaces disabled; or ``MLPAR_GRADING_SANDBOX=none``),
grading goes on with the older protections, and :func:`isolation` and every row's outcome say
so: a new session (process group) in a scratch folder on disk that is its HOME and TMPDIR;
when it ends, the group is killed and so is every process still carrying the run's token in its
environment, until a pass finds none; then the scratch folder is removed (read-only folders a
submission left are made writable first). A process that left the group *and* dropped its
environment escapes this, and the submission can read and write whatever the grader's user can:
run it as an unprivileged user, and install bubblewrap (docs/grading.md says how).

``MLPAR_GRADING_SANDBOX=bwrap`` refuses to grade without the sandbox.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from mlpar.core import cleanup
from mlpar.course.grading import channel

TOKEN_VARIABLE = "MLPAR_GRADING_TOKEN"
# Tokens start with this variable's value where it is set (letters, digits, "-" and "_", at most
# 32): the tests count the processes of their own grader by it, while another test's grader may
# run beside it. The random part that follows keeps each run's token its own.
TOKEN_PREFIX_VARIABLE = "MLPAR_GRADING_TOKEN_PREFIX"
SANDBOX_VARIABLE = "MLPAR_GRADING_SANDBOX"  # "none": never use bwrap; "bwrap": require it
FILE_LIMIT_BYTES = 256 * 2**20  # no single file the submission writes grows past this
SCRATCH_BYTES = 512 * 2**20     # the sandbox's /tmp (and /dev/shm), in memory, at most
# One solution cell or one check may take this share of the notebook's time: a loop in one
# exercise fails that exercise, and the exercises after it are still graded.
STEP_SHARE = 0.25
_OUTPUT_TAIL = 4000
# The grading process sees only these of the grader's environment variables (plus its own).
_PASSED_ON = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "NUMBA_DISABLE_JIT", "NUMBA_ENABLE_CUDASIM",
              "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MLPAR_HARDWARE",
              "CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV")
_INSIDE = "/tmp/work"  # the runner's HOME, TMPDIR and working folder inside the sandbox

_RUNNING: dict[str, subprocess.Popen] = {}  # token -> every grading process now running
_RUNNING_LOCK = threading.Lock()
# Set by stop_all: a job whose process starts afterwards is ended at once. Checked and set
# under _RUNNING_LOCK, so a process is either in _RUNNING when stop_all looks, or sees the flag.
_STOPPING = threading.Event()
_HIDDEN: list[str] = []  # folders the sandbox shows empty (see hide())


class SandboxUnavailable(RuntimeError):
    """``MLPAR_GRADING_SANDBOX=bwrap`` and bubblewrap cannot run here."""


def hide(*folders) -> None:
    """Show these folders empty inside the sandbox (the submissions, the outputs, the lessons)."""
    for folder in folders:
        if folder is not None:
            path = os.path.realpath(folder)
            if os.path.isdir(path) and path not in _HIDDEN:
                _HIDDEN.append(path)


@functools.lru_cache(maxsize=1)
def _bwrap_works() -> tuple[bool, str]:
    tool = shutil.which("bwrap")
    if not tool:
        return False, "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run([tool, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                                "--unshare-pid", "--unshare-net", "--die-with-parent", "--", "true"],
                               capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap cannot start ({exc})"
    if probe.returncode != 0:
        why = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"bwrap cannot make namespaces here ({why[-1] if why else probe.returncode})"
    return True, tool


def isolation() -> tuple[str, str]:
    """``("bwrap", path)`` when submissions run in the sandbox, else ``("process group", why not)``."""
    wanted = os.environ.get(SANDBOX_VARIABLE, "").strip().lower()
    if wanted == "none":
        return "process group", f"{SANDBOX_VARIABLE}=none"
    works, detail = _bwrap_works()
    if works:
        return "bwrap", detail
    if wanted == "bwrap":
        raise SandboxUnavailable(f"{SANDBOX_VARIABLE}=bwrap but {detail}")
    return "process group", detail


def stop_all() -> None:
    """Kill every grading process this process started and all they started (Ctrl-C, SIGTERM),
    and every one a job thread starts from now on, until ``allow_jobs``.

    Without the second half, a Ctrl-C that lands while a job thread is between starting its
    process and registering it would miss that process, and the grader would wait for it (up
    to the job's timeout) before it could exit.
    """
    with _RUNNING_LOCK:
        _STOPPING.set()
        running = dict(_RUNNING)
    for token, proc in running.items():
        _end(proc, token)


def allow_jobs() -> None:
    """Let jobs run again after ``stop_all`` (a new ``grade`` in the same process)."""
    _STOPPING.clear()


@dataclass
class Outcome:
    events: list[dict] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    output: str = ""       # the tail of what the process printed
    isolation: str = ""    # "bwrap" or "process group"
    bad_lines: int = 0     # lines of its channel that were no valid event (forged, flooded, cut)

    @property
    def finished(self) -> bool:
        return any(e.get("event") == "done" for e in self.events)

    def last_started(self) -> str | None:
        started = [e["exercise"] for e in self.events if e.get("event") == "start"]
        return started[-1] if started else None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def token_prefix() -> str:
    """The start of every token this grader gives: ``TOKEN_PREFIX_VARIABLE``'s value if it is a
    short plain name, else nothing."""
    prefix = os.environ.get(TOKEN_PREFIX_VARIABLE, "")
    return prefix if re.fullmatch(r"[A-Za-z0-9_-]{1,32}", prefix) else ""


def _sweep(token: str) -> list[int]:
    """Kill every process of this user whose environment carries ``token``, until none is left."""
    import psutil

    killed = []
    for _ in range(50):  # a pass can miss a process forked while it ran: go on until one finds none
        found = []
        for proc in psutil.process_iter(["pid"]):
            if proc.pid == os.getpid():
                continue
            try:
                if proc.environ().get(TOKEN_VARIABLE) == token and proc.status() != psutil.STATUS_ZOMBIE:
                    proc.kill()
                    found.append(proc)
            except (psutil.Error, OSError):
                continue
        if not found:
            break
        psutil.wait_procs(found, timeout=5)
        killed += [p.pid for p in found]
    return killed


def _end(proc: subprocess.Popen, token: str) -> None:
    """Kill the run and everything it started; return once they are gone."""
    if getattr(proc, "mlpar_bwrap", False):
        import psutil

        try:  # bwrap's child is the namespace's first process: killing it ends the namespace
            for child in psutil.Process(proc.pid).children():
                child.kill()
        except psutil.Error:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return
    members = _group_members(proc.pid)
    _kill_group(proc.pid)
    gone = _sweep(token)
    _release_shared_memory(proc, members + gone)


def _group_members(pgid: int) -> list[int]:
    """The pids of process group ``pgid`` now (the run and what it started without setsid)."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid:
                found.append(p.pid)
        except OSError:  # exited meanwhile
            continue
    return found


def _release_shared_memory(proc: subprocess.Popen, pids: list[int]) -> None:
    """Remove the /dev/shm entries (loky's semaphores, joblib's folders) of a killed run.

    The runner leaves with ``os._exit`` and its group is killed, so neither its exit handlers
    nor loky's resource tracker (killed in the same group) unlink what its pools made: nine
    semaphores per run that used a joblib pool, until the next pool's tidy-up. In the sandbox
    ``/dev/shm`` is the run's own and goes with it; here the grader removes them itself, once
    every owner is gone (a killed process that is not yet reaped still counts as alive).
    """
    import psutil

    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # cannot happen after SIGKILL; never block grading on it
        return
    others = []
    for pid in set(pids) - {proc.pid}:
        try:
            others.append(psutil.Process(pid))
        except psutil.Error:
            continue
    psutil.wait_procs(others, timeout=5)
    cleanup.remove_stale_shm(owners={proc.pid, *pids})


EXTRA_PROCESSES = 512  # processes a submission may add to its user's (a fork bomb stops there)


def process_limit() -> int:
    """``RLIMIT_NPROC`` for a run: this user's processes now plus :data:`EXTRA_PROCESSES`
    (0: none; the kernel does not apply it to root). Counted here, where every process of the
    user is visible (inside the sandbox only its own are)."""
    if os.getuid() == 0:
        return 0
    import psutil

    uid = os.getuid()
    mine = sum(1 for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid)
    return mine + EXTRA_PROCESSES


def _needed_paths() -> list[str]:
    """What the runner must still see: Python, its libraries and mlpar."""
    import mlpar

    found = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                           os.path.dirname(os.path.realpath(sys.executable)),
                                           os.path.dirname(os.path.dirname(mlpar.__file__)),
                                           # through a symbolic link (a folder that links the
                                           # clone's files, as the docs test makes): its target
                                           os.path.dirname(os.path.dirname(os.path.realpath(
                                               mlpar.__file__))))}
    found |= {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}
    return sorted(found)


# Runs a module as ``python -m`` would, after appending the folder this grader imported mlpar
# from to the module path; argv: folder, module, the module's own arguments.
_BOOT = ("import runpy, sys\n"
         "home = sys.argv.pop(1)\n"
         "sys.path.count(home) or sys.path.append(home)\n"
         "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n")


def module_command(python: str, module: str, args: list[str]) -> list[str]:
    """``python -I -B -m module *args`` that finds the mlpar this grader runs.

    Isolated mode (-I) ignores PYTHONPATH and the working folder, so a course used from a clone
    that was never installed (``PYTHONPATH=.``, or ``python -m mlpar.course grade`` from the
    clone's root) had every submission crash with "No module named 'mlpar'"; found on the GPU
    machine, where mlpar came from PYTHONPATH. The folder is appended, not put first: an
    installed mlpar and the standard library keep their places.
    """
    import mlpar

    home = os.path.dirname(os.path.dirname(os.path.abspath(mlpar.__file__)))
    return [python, "-I", "-B", "-c", _BOOT, home, module, *args]


def _bwrap_command(tool: str, python: list[str]) -> list[str]:
    needed = _needed_paths()
    command = [tool, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
               "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp",
               "--size", str(SCRATCH_BYTES), "--tmpfs", "/dev/shm"]
    for path in needed:  # Python or the course installed under /tmp: shown again, read-only
        if path.startswith(("/tmp/", "/dev/shm/")) and os.path.isdir(path):
            command += ["--ro-bind", path, path]
    home = os.path.realpath(os.path.expanduser("~"))
    for folder in [*_HIDDEN, home]:
        inside = any(n == folder or n.startswith(folder.rstrip("/") + "/") for n in needed)
        if os.path.isdir(folder) and folder != "/" and not inside:
            command += ["--tmpfs", folder, "--remount-ro", folder]
    command += ["--dir", _INSIDE, "--chdir", _INSIDE, "--", *python]
    return command


def run_job(job: dict, *, timeout: float, memory_mb: int, python: str | None = None) -> Outcome:
    """Run ``job`` in a sandboxed process; the :class:`Outcome` has its events and how it ended."""
    how, _ = isolation()
    token = token_prefix() + uuid.uuid4().hex
    root = Path(tempfile.mkdtemp(prefix="mlpar-grade-"))  # the output log; the scratch without bwrap
    value_checks = [c for c in job["cells"] if c["kind"] == "check" and not c.get("observing")]
    # runner -> grader (events); checker -> runner (calls); runner -> checker (answers);
    # checker -> grader (the value checks' verdicts)
    pipes = [channel.open_pipe() for _ in range(4 if value_checks else 1)]
    events_r, events_w = pipes[0]
    ours = [events_r]  # read ends the grader keeps
    theirs_runner, theirs_checker = [events_w], []
    if value_checks:
        (calls_r, calls_w), (answers_r, answers_w), (verdicts_r, verdicts_w) = pipes[1:]
        ours.append(verdicts_r)
        theirs_runner += [calls_r, answers_w]
        theirs_checker += [calls_w, answers_r, verdicts_w]
        job = dict(job, channel={"requests": calls_r, "answers": answers_w})
    if how == "bwrap":
        scratch = _INSIDE
    else:
        scratch = str(root / "work")
        os.mkdir(scratch)
    env = {k: os.environ[k] for k in _PASSED_ON if k in os.environ}
    env.update(HOME=scratch, TMPDIR=scratch, MPLBACKEND="Agg", MPLCONFIGDIR=scratch,
               IPYTHONDIR=f"{scratch}/.ipython", JOBLIB_TEMP_FOLDER=scratch,
               PYTHONDONTWRITEBYTECODE="1", TQDM_DISABLE="1",
               NUMBA_CACHE_DIR=f"{scratch}/.numba", **{TOKEN_VARIABLE: token})
    job = dict(job, memory_mb=memory_mb, step_timeout=timeout * STEP_SHARE)
    outcome = Outcome(isolation=how)
    python = python or sys.executable
    python_command = module_command(python, "mlpar.course.grading.runner",
                                    [str(events_w), str(memory_mb * 2**20), str(FILE_LIMIT_BYTES),
                                     str(process_limit())])
    command = _bwrap_command(isolation()[1], python_command) if how == "bwrap" else python_command
    log = open(root / "output.txt", "w+b")  # noqa: SIM115  (closed in finally)
    readers: list[channel.Reader] = []
    checker = None
    started = time.monotonic()
    try:
        if value_checks:
            checker = _start_checker(python, job, value_checks, theirs_checker, timeout, memory_mb, root)
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                cwd=scratch if how != "bwrap" else "/", env=env,
                                start_new_session=True, close_fds=True, pass_fds=tuple(theirs_runner))
        proc.mlpar_bwrap = how == "bwrap"
        for fd in theirs_runner + theirs_checker:  # only the two processes hold these ends now
            os.close(fd)
        theirs_runner, theirs_checker = [], []
        readers = [channel.Reader(fd) for fd in ours]
        ours = []
        with _RUNNING_LOCK:
            _RUNNING[token] = proc
            stopping = _STOPPING.is_set()
        if stopping:  # stop_all ran while this process started: it would not have seen it
            _end(proc, token)
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):  # the runner died before reading its job
            pass
        try:
            outcome.returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
        _end(proc, token)  # workers the submission started and left running
        if outcome.returncode is None:
            outcome.returncode = proc.wait()
        if how == "bwrap" and outcome.returncode is not None and outcome.returncode > 128:
            outcome.returncode = 128 - outcome.returncode  # bwrap exits 128 + N for a signal N
        if checker is not None:  # it ends when the runner's pipe closes, or is ended now
            try:
                checker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                checker.kill()
                checker.wait()
        outcome.seconds = time.monotonic() - started
        for reader in readers:
            reader.close(wait=1.0)
        outcome.events, outcome.bad_lines = _merge(readers, value_checks)
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - _OUTPUT_TAIL))
        outcome.output = log.read().decode("utf-8", errors="replace")
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(token, None)
        if checker is not None and checker.poll() is None:
            checker.kill()
            checker.wait()
        for fd in ours + theirs_runner + theirs_checker:
            os.close(fd)
        for reader in readers:
            if not reader.closed:
                reader.close(wait=0)
        log.close()
        _remove(root)
    return outcome


def _start_checker(python: str, job: dict, value_checks: list, fds: list, timeout: float,
                   memory_mb: int, root: Path) -> subprocess.Popen:
    """The process that judges the value checks (no student code runs in it; not sandboxed)."""
    env = {k: os.environ[k] for k in _PASSED_ON if k in os.environ}
    env.update(HOME=str(root), TMPDIR=str(root), MPLBACKEND="Agg", MPLCONFIGDIR=str(root),
               PYTHONDONTWRITEBYTECODE="1")
    checker = subprocess.Popen(module_command(python, "mlpar.course.grading.checker", list(map(str, fds))),
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=root, env=env, start_new_session=True, close_fds=True,
                               pass_fds=tuple(fds))
    checks = [{k: c[k] for k in ("exercise", "module", "check", "argument")} for c in value_checks]
    try:
        checker.stdin.write(json.dumps({"seed": job["seed"], "checks": checks, "timeout": timeout,
                                        "step_timeout": timeout * STEP_SHARE,
                                        "memory_mb": memory_mb}).encode())
        checker.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    return checker


def _merge(readers: list, value_checks: list) -> tuple[list[dict], int]:
    """The runner's events, in order, where the verdict of each value check is the checker's.

    A ``check`` event on the runner's pipe for a value check is not believed (the student's code
    can write there); it counts only if the checker handed that check back to the runner.
    Returns the events and how many lines were not believed.
    """
    runner, bad = channel.events(readers[0].lines())
    verdicts, bad_verdicts = channel.events(readers[1].lines()) if len(readers) > 1 else ([], 0)
    value = {c["exercise"] for c in value_checks}
    queue: dict[str, list[dict]] = {}
    for e in verdicts:
        if e["event"] in ("check", "handed_over"):
            queue.setdefault(e["exercise"], []).append(e)
    # Each start of a check is answered once: by the checker's verdict (a value check), or by
    # the first check event the runner writes after it (an observing check, or one handed
    # back). Check events anywhere else (written by a solution cell, repeated) are not believed.
    merged, waiting = [], None
    for e in runner:
        if e["event"] == "start":
            waiting = None
            merged.append(e)
            if e["stage"] != "check":
                continue
            answer = queue.get(e["exercise"], []).pop(0) if e["exercise"] in value and queue.get(
                e["exercise"]) else None
            if answer is not None and answer["event"] == "check":
                merged.append(answer)
            elif e["exercise"] not in value or answer is not None:  # observing, or handed back
                waiting = e["exercise"]
        elif e["event"] == "check":
            if e["exercise"] == waiting:
                merged.append(e)
                waiting = None
            else:
                bad += 1
        else:
            merged.append(e)
    return merged, bad + bad_verdicts


def _remove(root: Path) -> None:
    """Remove a scratch folder, even one whose folders a submission made read-only."""
    def writable(function, path, _):
        parent = os.path.dirname(path)
        for p in (parent, path):
            try:
                os.chmod(p, stat.S_IRWXU)
            except OSError:
                pass
        try:
            function(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=writable)
    if root.exists():
        for dirpath, dirnames, _ in os.walk(root):
            for d in dirnames:
                try:
                    os.chmod(os.path.join(dirpath, d), stat.S_IRWXU)
                except OSError:
                    pass
        shutil.rmtree(root, ignore_errors=True)
