"""One submission, one process: limits, a scratch folder, and nothing left behind.

``run_job`` starts :mod:`mlpar.course.grading.runner` in a new session (its own process group)
with ``python -I -B`` (no current folder or user site on ``sys.path``, no ``PYTHON*``
variables, no bytecode written beside the installed modules), in a fresh scratch folder that
is also its ``HOME`` and ``TMPDIR``, under an address-space limit (``RLIMIT_AS``, set by the
runner before it reads any student code), a file-size limit and a wall-clock timeout (a
quarter of it for each solution cell and each check). When the runner is done, past its time,
or dead, the whole group is killed, and so is every process still carrying this run's token
in its environment (a worker that started its own session), before the scratch folder is
removed. The outcome says which limit, if any, was hit.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_VARIABLE = "MLPAR_GRADING_TOKEN"
FILE_LIMIT_BYTES = 256 * 2**20  # no single file the submission writes grows past this
# One solution cell or one check may take this share of the notebook's time: a loop in one
# exercise fails that exercise, and the exercises after it are still graded.
STEP_SHARE = 0.25
_OUTPUT_TAIL = 4000
# The grading process sees only these of the grader's environment variables (plus its own).
_PASSED_ON = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "NUMBA_DISABLE_JIT", "NUMBA_ENABLE_CUDASIM",
              "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MLPAR_HARDWARE",
              "CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV")


_RUNNING: dict[str, int] = {}  # token -> process group of every grading process now running
_RUNNING_LOCK = threading.Lock()


def stop_all() -> None:
    """Kill every grading process this process started and all they started (Ctrl-C)."""
    with _RUNNING_LOCK:
        running = dict(_RUNNING)
    for token, pgid in running.items():
        _kill_group(pgid)
        _sweep(token)


@dataclass
class Outcome:
    events: list[dict] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    output: str = ""  # the tail of what the process printed

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


def _sweep(token: str) -> list[int]:
    """Kill every process of this user whose environment carries ``token``; return their ids."""
    import psutil

    killed = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(TOKEN_VARIABLE) == token:
                proc.kill()
                killed.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    if killed:
        psutil.wait_procs([psutil.Process(p) for p in killed if psutil.pid_exists(p)], timeout=5)
    return killed


def run_job(job: dict, *, timeout: float, memory_mb: int, python: str | None = None) -> Outcome:
    """Run ``job`` in a sandboxed process; the :class:`Outcome` has its events and how it ended."""
    token = uuid.uuid4().hex
    root = Path(tempfile.mkdtemp(prefix="mlpar-grade-"))
    scratch = root / "work"
    scratch.mkdir()
    results = root / "results.jsonl"
    results.touch()
    env = {k: os.environ[k] for k in _PASSED_ON if k in os.environ}
    env.update(HOME=str(scratch), TMPDIR=str(scratch), MPLBACKEND="Agg", MPLCONFIGDIR=str(scratch),
               IPYTHONDIR=str(scratch / ".ipython"), JOBLIB_TEMP_FOLDER=str(scratch),
               PYTHONDONTWRITEBYTECODE="1", TQDM_DISABLE="1",
               NUMBA_CACHE_DIR=str(scratch / ".numba"), **{TOKEN_VARIABLE: token})
    job = dict(job, memory_mb=memory_mb, step_timeout=timeout * STEP_SHARE)
    outcome = Outcome()
    log = open(root / "output.txt", "w+b")  # noqa: SIM115  (closed in finally)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [python or sys.executable, "-I", "-B", "-m", "mlpar.course.grading.runner", str(results),
             str(memory_mb * 2**20), str(FILE_LIMIT_BYTES)],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=scratch, env=env,
            start_new_session=True, close_fds=True)
        with _RUNNING_LOCK:
            _RUNNING[token] = proc.pid
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except BrokenPipeError:  # the runner died before reading its job
            pass
        try:
            outcome.returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
            _kill_group(proc.pid)
            outcome.returncode = proc.wait()
        _kill_group(proc.pid)  # workers the submission started and left running
        _sweep(token)
        outcome.seconds = time.monotonic() - started
        for line in results.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                outcome.events.append(event)
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - _OUTPUT_TAIL))
        outcome.output = log.read().decode("utf-8", errors="replace")
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(token, None)
        log.close()
        shutil.rmtree(root, ignore_errors=True)
    return outcome
