"""The CUDA software stack under lesson 10: which numba, numba-cuda and numpy work together.

The GPU path breaks in ways that have nothing to do with the kernels:

* numba's own ``numba.cuda`` target is deprecated; NVIDIA's ``numba-cuda`` package replaces it
  (once installed, ``import numba.cuda`` loads it instead). Without it the GPU path still runs
  on the built-in target, but that target gets no fixes for new GPUs and drivers.
* ``numba-cuda`` registers its own version of ``np.row_stack`` when it is first imported, and
  numpy 2.5 removed ``np.row_stack``: with that pair the first kernel launch dies with an
  ``AttributeError`` deep inside numba, long after the real cause.

This module finds those combinations from the installed versions alone. It imports neither
numpy nor numba (only the standard library), so Colab's set-up cell can run it *before* numpy
is imported and still change numpy's version. ``mlpar.gpu.cuda_kernels`` calls
:func:`require_usable` before it imports ``numba.cuda`` and so refuses a broken pair with a
message saying what to install.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

# numpy 2.5 removed np.row_stack (deprecated in 2.0), which numba-cuda overloads at import.
NUMPY_WITHOUT_ROW_STACK = (2, 5)
NUMPY_PIN = "numpy<2.5"
BACKENDS = ("gpu", "simulator")


def installed(distribution: str) -> str | None:
    """The installed version of a distribution ("numba-cuda"), or None when it is absent."""
    if not isinstance(distribution, str) or not distribution:
        raise TypeError(f"distribution: expected a package name (str), got {distribution!r}")
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def release(version) -> tuple[int, ...]:
    """The leading numbers of a version string: "2.5.0rc1" → (2, 5, 0); "" → ()."""
    if not isinstance(version, str):
        raise TypeError(f"version: expected a version string such as '2.4.6', got "
                        f"{type(version).__name__}")
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack: ``fatal`` problems stop the CUDA path from working."""

    fatal: bool
    text: str
    fix: str

    def __str__(self) -> str:
        return f"{'error' if self.fatal else 'note'}: {self.text}; fix: {self.fix}"


@dataclass(frozen=True)
class Stack:
    """The installed versions that decide whether the CUDA path works (None: not installed)."""

    numba: str | None
    numba_cuda: str | None
    numpy: str | None

    def problems(self, backend: str) -> list[Problem]:
        """What stops (``fatal``) or weakens the ``backend`` path ("gpu" or "simulator")."""
        if backend not in BACKENDS:
            raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
        found = []
        if self.numba is None:
            found.append(Problem(True, "numba is not installed", "pip install numba"))
        numpy_too_new = (self.numpy is not None
                         and release(self.numpy)[:2] >= NUMPY_WITHOUT_ROW_STACK)
        if self.numba_cuda is not None and numpy_too_new:
            text = (f"numba-cuda {self.numba_cuda} overloads np.row_stack, which numpy "
                    f"{self.numpy} removed: the first kernel launch would die with an "
                    "AttributeError")
            if backend == "simulator":
                text += " on a GPU (the simulator does not compile for the GPU target)"
            found.append(Problem(backend == "gpu", text,
                                 f'pip install "{NUMPY_PIN}", then restart the kernel'))
        if backend == "gpu" and self.numba is not None and self.numba_cuda is None:
            found.append(Problem(False, f"numba {self.numba} runs kernels on its built-in CUDA "
                                        "target, which is deprecated in favour of the "
                                        "numba-cuda package",
                                 f'pip install "numba-cuda[{cuda_extra(driver_cuda_major())}]"'))
        return found

    def __repr__(self) -> str:
        return (f"Stack(numba {self.numba or 'missing'}, numba-cuda "
                f"{self.numba_cuda or 'not installed'}, numpy {self.numpy or 'missing'})")


def current() -> Stack:
    """The versions installed in this environment (read from package metadata, not imported)."""
    return Stack(installed("numba"), installed("numba-cuda"), installed("numpy"))


def require_usable(backend: str) -> list[Problem]:
    """Raise ``RuntimeError`` naming the fix when ``backend`` cannot work; else the notes."""
    problems = current().problems(backend)
    fatal = [p for p in problems if p.fatal]
    if fatal:
        raise RuntimeError("the CUDA software stack cannot run kernels here: "
                           + "; ".join(f"{p.text} ({p.fix})" for p in fatal))
    return problems


def driver_cuda_major(smi_output: str | None = None) -> int | None:
    """The CUDA major version the NVIDIA driver supports ("CUDA Version: 12.4" → 12).

    Reads ``nvidia-smi``'s banner (or ``smi_output`` when given); None without a driver.
    """
    if smi_output is None:
        smi = shutil.which("nvidia-smi")
        if smi is None:
            return None
        try:
            smi_output = subprocess.run([smi], capture_output=True, text=True,
                                        timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return None
    if not isinstance(smi_output, str):
        raise TypeError(f"smi_output: expected nvidia-smi's text or None, got "
                        f"{type(smi_output).__name__}")
    match = re.search(r"CUDA Version:\s*(\d+)", smi_output)
    return int(match.group(1)) if match else None


def cuda_extra(major: int | None = None) -> str:
    """numba-cuda's install extra for a driver's CUDA major version: "cu12" or "cu13".

    ``None`` (driver unknown) picks "cu12", which Colab's drivers support today.
    """
    if major is not None and (isinstance(major, bool) or not isinstance(major, int)):
        raise TypeError(f"major: expected an int or None, got {type(major).__name__}")
    if major is not None and major < 1:
        raise ValueError(f"major: expected a CUDA major version such as 12, got {major}")
    return "cu13" if major is not None and major >= 13 else "cu12"


def colab_requirements(major: int | None = None) -> list[str]:
    """What lesson 10 installs on a GPU runtime: numpy below 2.5 and numba-cuda for the driver."""
    return [NUMPY_PIN, f"numba-cuda[{cuda_extra(major)}]"]


def colab_setup(*, run=subprocess.run, on_colab: bool | None = None) -> str:
    """On a Colab GPU runtime, install a working numba-cuda/numpy pair; say what happened.

    Does nothing off Colab, or on a runtime without a GPU (the simulator needs neither
    package). ``run`` is ``subprocess.run`` (tests pass a fake); ``on_colab`` defaults to
    whether ``google.colab`` is imported. Returns one line for the set-up cell to print.
    """
    if not callable(run):
        raise TypeError(f"run: expected a function like subprocess.run, got {type(run).__name__}")
    if on_colab is not None and not isinstance(on_colab, bool):
        raise TypeError(f"on_colab: expected True, False or None, got {type(on_colab).__name__}")
    if not (("google.colab" in sys.modules) if on_colab is None else on_colab):
        return "not on Colab: nothing installed"
    major = driver_cuda_major()
    if major is None:
        return ("Colab runtime without a GPU: the lesson runs on numba's CUDA simulator "
                "(Runtime > Change runtime type > T4 GPU to run it on a GPU)")
    wanted = colab_requirements(major)
    done = run([sys.executable, "-m", "pip", "install", "-q", *wanted],
               capture_output=True, text=True)
    if getattr(done, "returncode", 1) != 0:
        tail = (getattr(done, "stderr", "") or "").strip().splitlines()[-1:]
        return (f"could not install {' and '.join(wanted)} ({' '.join(tail) or 'pip failed'}): "
                "the GPU path may not work; install them by hand, restart the session and run "
                "this cell again, or switch to a CPU runtime to use the simulator")
    # A numpy imported before pip ran stays in memory until the session restarts.
    loaded = getattr(sys.modules.get("numpy"), "__version__", None)
    if loaded is not None and loaded != installed("numpy"):
        return (f"installed {' and '.join(wanted)}, but numpy {loaded} is already loaded: "
                "restart the session (Runtime > Restart session) and run the notebook again")
    problems = [p for p in current().problems("gpu") if p.fatal]
    if problems:
        return "installed, but the stack still cannot work: " + "; ".join(map(str, problems))
    return f"installed {' and '.join(wanted)} for the GPU (driver CUDA {major})"
