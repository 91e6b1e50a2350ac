"""Shared-memory entries that process pools leave behind when their process is killed.

joblib's loky pool makes a folder ``/dev/shm/joblib_memmapping_folder_<pid>_…`` for every
``Parallel`` call (where large arrays would be memory-mapped) and named semaphores
``/dev/shm/sem.loky-<pid>-…``; it removes them when the process exits normally. A Jupyter
kernel that is killed (the Stop-and-restart button, a test runner shutting kernels down with
``now=True``) never gets to, and ``/dev/shm`` is RAM, often only 64 MB in a container.

``remove_stale_shm()`` deletes the entries whose owning process ``<pid>`` no longer exists;
the functions that start loky pools call it first, so each run tidies up after the last one
instead of the leftovers growing without bound.

    >>> stale_shm_entries()     # what a killed kernel left behind
    >>> remove_stale_shm()      # how many entries were removed
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

SHM = Path("/dev/shm")
# The owner's pid is part of the name: joblib's folders and loky's semaphores.
_OWNED = re.compile(r"^(?:joblib_memmapping_folder_(\d+)_|sem\.loky-(\d+)-)")


def owner_pid(name: str) -> int | None:
    """The pid in a joblib/loky ``/dev/shm`` entry name, or None for other entries."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a /dev/shm entry name (str), got {type(name).__name__}")
    match = _OWNED.match(name)
    return int(match.group(1) or match.group(2)) if match else None


def _alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie (exited, not yet reaped by its parent) counts as
    gone: in a container whose first process never reaps orphans, it stays a zombie for ever."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc (macOS): the signal's answer stands
        return True


def stale_shm_entries(root: str | os.PathLike = SHM, *, owners=None) -> list[Path]:
    """joblib/loky entries in ``root`` owned by this user whose process has exited.

    ``owners``: only entries made by these pids (a finished run's processes), or every dead
    owner's when None.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root: expected a path (str or pathlib.Path), got {type(root).__name__}")
    owners = _pids("owners", owners)
    root = Path(root)
    try:
        names = sorted(os.listdir(root))
    except OSError:  # no /dev/shm (macOS, Windows): nothing to tidy
        return []
    stale = []
    for name in names:
        pid = owner_pid(name)
        if pid is None or (owners is not None and pid not in owners) or _alive(pid):
            continue
        path = root / name
        try:
            if path.lstat().st_uid == os.getuid():
                stale.append(path)
        except OSError:  # removed meanwhile
            pass
    return stale


def _pids(name: str, pids) -> frozenset[int] | None:
    if pids is None:
        return None
    if isinstance(pids, (str, bytes)) or not hasattr(pids, "__iter__"):
        raise TypeError(f"{name}: expected a collection of process ids, got {type(pids).__name__}")
    pids = list(pids)
    if not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in pids):
        raise ValueError(f"{name}: expected positive integer process ids, got {pids[:5]!r}")
    return frozenset(pids)


def remove_stale_shm(root: str | os.PathLike = SHM, *, owners=None) -> int:
    """Delete the entries ``stale_shm_entries`` finds; returns how many went.

    A process that leaves with ``os._exit`` or is killed with its whole process group never
    unlinks loky's semaphores (its exit handlers do not run, and loky's resource tracker, which
    would have, dies in the same group): whoever killed it calls this with ``owners`` = the
    pids it killed, so one run's leftovers go at once, not at the next pool's start.
    """
    removed = 0
    for path in stale_shm_entries(root, owners=owners):  # checks root and owners
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed += 1
        except OSError:  # another process tidied it first
            pass
    return removed


def own_empty_shm_folders(root: str | os.PathLike = SHM) -> list[Path]:
    """This process's joblib memmapping folders in ``root`` that hold nothing any more.

    joblib empties a ``Parallel`` call's folder when the call ends but removes the folder
    itself only at interpreter exit, which a kernel shut down by a test runner never reaches.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root: expected a path (str or pathlib.Path), got {type(root).__name__}")
    root = Path(root)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    found = []
    for name in names:
        path = root / name
        if name.startswith("joblib_memmapping_folder_") and owner_pid(name) == os.getpid():
            try:
                if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                    found.append(path)
            except OSError:  # removed meanwhile
                pass
    return found


def release_pools(root: str | os.PathLike = SHM) -> int:
    """Stop joblib's reusable loky workers and remove this process's emptied memmapping
    folders (and any entries of processes that have exited); returns how many entries went.

    Call it when a lesson is done with joblib, never while a ``Parallel`` call is running:
    a kernel that is then killed leaves nothing behind in ``/dev/shm``.
    """
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    removed = remove_stale_shm(root)
    for path in own_empty_shm_folders(root):
        try:
            path.rmdir()
            removed += 1
        except OSError:  # not empty after all, or gone
            pass
    return removed


#: Helper processes that stay alive on purpose and are not workers: multiprocessing's
#: resource tracker (one per interpreter, until it exits) and joblib's idle loky workers.
RESOURCE_TRACKER = "resource_tracker"
LOKY = "loky"


def child_processes(*, ignore: tuple[str, ...] = (RESOURCE_TRACKER,)) -> set[int]:
    """pids of this process's descendants whose command line contains none of ``ignore``."""
    import psutil  # a dependency of dask.distributed, so always installed with mlpar

    found = set()
    for p in psutil.Process().children(recursive=True):
        try:
            line = " ".join(p.cmdline())
        except psutil.Error:  # exited meanwhile
            continue
        if not any(word in line for word in ignore):
            found.add(p.pid)
    return found
