"""Finding the students and lessons in a folder of submissions, and reading each file safely.

Two layouts are accepted (both may be mixed):

* one folder per student: ``alice/01_loops_to_threads.ipynb`` (deeper folders are fine; the
  student is the first folder under SUBMISSIONS, read by :func:`~.identity.of_folder`);
* one flat folder, as learning-management systems export it; the student comes from the LMS's
  part of the file name (:mod:`~mlpar.course.grading.identity`: Canvas, Moodle, Blackboard ids),
  else from what the name holds before the lesson's name (``carol - 01 Loops to Threads.ipynb``).
  A name with nothing before the lesson (``Copy of 01_loops_to_threads (1).ipynb``) is graded
  under its file name.

Every file under SUBMISSIONS gets rows: a notebook (``.ipynb`` in any case, and
``.ipynb.json`` as Safari saves it) is graded; anything else (another kind of file, a symbolic
link, a FIFO or device, a folder nested past :data:`MAX_DEPTH`) gets one ``error`` row saying
what it is. Hidden files and folders (``.ipynb_checkpoints``, ``__MACOSX``) are skipped.

Reading never blocks or grows without bound: only regular files are opened (``O_NOFOLLOW``,
``O_NONBLOCK``, then ``fstat``), at most :data:`MAX_BYTES` are read whatever the file claims,
and the JSON must be a notebook of the right shape (:func:`notebook_problem`, a strict schema;
deep nesting is an error, not a crash). What is kept of a notebook is its cells' type, id, tags
and source: outputs are dropped as soon as the file is read.

The lesson comes from the notebook's metadata (``metadata.mlpar.lesson``, written into the
student edition), else from the file name: a lesson's name (``01_loops_to_threads``, any case,
spaces or hyphens for underscores), else its number followed by ``_``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from mlpar.course.grading import identity
from mlpar.course.grading.csv_safety import normal_name

MAX_BYTES = 64 * 2**20   # a notebook bigger than this is refused, not parsed
MAX_DEPTH = 8            # folders below SUBMISSIONS that are searched
MAX_FILES = 100_000      # entries looked at, at most (a zip bomb of empty files)
MAX_CELLS = 5_000
_HASHED_AT_MOST = 4 * MAX_BYTES  # a refused file's sha256 covers this much and its size
_CELL_TYPES = {"code", "markdown", "raw"}


@dataclass
class Submission:
    path: Path
    student: str
    lesson: str | None = None       # the lesson's file stem, once identified
    sha256: str = ""
    notebook: dict | None = None    # the cells (and lesson) kept of the file, once read
    error: str | None = None        # why it cannot be graded

    @property
    def name(self) -> str:
        """The file's name as text (a Windows zip's bytes read as cp1252)."""
        return identity.decoded(self.path.name)


def _normal(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", text.lower())


def lesson_in_name(name: str, lessons: list[str]) -> tuple[str | None, int]:
    """The lesson a file name mentions and where its mention starts (``None, -1``: none)."""
    normal = _normal(name)
    for lesson in sorted(lessons, key=len, reverse=True):
        at = normal.find(lesson.lower())
        if at >= 0:
            return lesson, at
    numbers = {lesson[:2]: lesson for lesson in lessons}
    for match in re.finditer(r"(?<![0-9])([0-9]{2})_", normal):
        if match.group(1) in numbers:
            return numbers[match.group(1)], match.start()
    return None, -1


_LMS_WORDS = re.compile(r"(_(late|attempt|assignsubmission|file|onlinetext|submission))+_?$", re.I)


def _stem(name: str) -> str:
    lower = name.lower()
    for suffix in (".ipynb.json", ".ipynb"):
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def student_from_flat_name(name: str, lessons: list[str]) -> str:
    """The student a flat export's file name stands for (the LMS's ids first; see the module)."""
    name = identity.decoded(name)
    lms = identity.from_lms(name)
    lesson, _ = lesson_in_name(name, lessons)
    # the LMS's part must end before the lesson's name: ``frank_77_01_loops…`` is no Canvas id
    if lms and (lesson is None or lesson_in_name(lms[1], lessons)[0] == lesson):
        return lms[0]
    stem = _stem(name)
    _, at = lesson_in_name(stem, lessons)
    head = stem[:at] if at > 0 else ""
    head = re.sub(r"^\s*copy of\s*", "", head, flags=re.I)  # Colab's and Drive's copies
    previous = None
    while head != previous:  # ids and LMS words at the end, in any order
        previous = head
        head = re.sub(r"[_\s\-]+[0-9]+[_\s\-]*$", "", head)
        head = _LMS_WORDS.sub("", head)
        head = re.sub(r"[_\s\-]+$", "", head)
    return normal_name(head) or normal_name(stem)


def is_notebook_name(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(".ipynb") or lower.endswith(".ipynb.json")


def find(folder: Path, lessons: list[str]) -> list[Submission]:
    """Every file under ``folder`` (see the module), with its student, in a stable order.

    Symbolic links are not followed; a file that is not a notebook gets its ``error`` now.
    """
    folder = Path(folder)
    found: list[Submission] = []
    seen = 0

    def student_of(relative: Path) -> str:
        if len(relative.parts) > 1:
            return identity.of_folder(relative.parts[0])
        return student_from_flat_name(relative.name, lessons)

    def walk(directory: Path, depth: int) -> None:
        nonlocal seen
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            relative = directory.relative_to(folder)
            found.append(Submission(directory, student_of(relative / "x"),
                                    error=f"{relative}: cannot be listed ({exc.strerror})"))
            return
        for entry in entries:
            seen += 1
            if seen > MAX_FILES:
                return
            if entry.name.startswith(".") or entry.name == "__MACOSX":
                continue
            path = Path(entry.path)
            relative = path.relative_to(folder)
            sub = Submission(path, student_of(relative))
            shown = identity.decoded(str(relative))
            if entry.is_dir(follow_symlinks=False):
                if is_notebook_name(entry.name):  # a folder where a notebook should be
                    sub.error = f"{shown}: a folder named like a notebook, not a notebook"
                    found.append(sub)
                elif depth < MAX_DEPTH:
                    walk(path, depth + 1)
                else:
                    sub.error = f"{shown}: a folder nested deeper than {MAX_DEPTH} levels was not searched"
                    found.append(sub)
                continue
            if entry.is_symlink():
                sub.error = (f"{shown}: a symbolic link, not a file; links are not followed "
                             "(hand in the notebook itself)")
            elif not entry.is_file(follow_symlinks=False):
                sub.error = f"{shown}: not a regular file (a FIFO, socket or device); nothing was read"
            elif not is_notebook_name(entry.name):
                sub.error = f"{shown}: not a notebook (only .ipynb files are graded)"
            found.append(sub)

    walk(folder, 0)
    if seen > MAX_FILES:
        found.append(Submission(folder, "?", error=f"{folder}: more than {MAX_FILES} files; the rest "
                                "were not looked at"))
    return found


def _read_bounded(path: Path, max_bytes: int) -> tuple[bytes | None, str, int, str | None]:
    """``(data or None if too big, sha256, size, error)`` of a regular file, never blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return None, "", 0, f"cannot be opened ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "", 0, "not a regular file (a FIFO, socket or device); nothing was read"
        digest, size, kept = hashlib.sha256(), 0, []
        while size < _HASHED_AT_MOST:
            block = os.read(fd, 2**20)
            if not block:
                break
            digest.update(block)
            size += len(block)
            if size <= max_bytes:
                kept.append(block)
        if size >= _HASHED_AT_MOST:
            digest.update(f"|{info.st_size}".encode())
            size = max(size, info.st_size)
        return (b"".join(kept) if size <= max_bytes else None), digest.hexdigest(), size, None
    finally:
        os.close(fd)


def read(sub: Submission, lessons: list[str], max_bytes: int = MAX_BYTES) -> Submission:
    """Fill in sha256, notebook and lesson, or ``error`` saying why the file cannot be graded."""
    name = sub.name
    if sub.error is None:
        data, sub.sha256, size, problem = _read_bounded(sub.path, max_bytes)
        if problem:
            sub.error = f"{name}: {problem}"
        elif data is None:
            sub.error = (f"{name}: the file is {size / 2**20:.0f} MB, over the "
                         f"{max_bytes / 2**20:.0f} MB limit; clear its outputs and submit it again")
        else:
            sub.error = _parse(sub, data)
    if not sub.sha256:  # an error row still needs a key for --resume
        sub.sha256 = hashlib.sha256(("unreadable:" + name).encode("utf-8", "replace")).hexdigest()
    tagged = (sub.notebook or {}).get("lesson")
    sub.lesson = tagged if tagged in lessons else lesson_in_name(name, lessons)[0]
    if sub.error is None and sub.lesson is None:
        sub.error = (f"{name}: matches no lesson of this course (no mlpar lesson in its "
                     f"metadata, and its name contains none of {', '.join(lessons)})")
    return sub


def _parse(sub: Submission, data: bytes) -> str | None:
    name = sub.name
    if not data.strip():
        return f"{name}: the file is empty"
    try:
        nb = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return f"{name}: not a notebook (not UTF-8 text)"
    except RecursionError:
        return f"{name}: not a notebook (JSON nested too deeply to read)"
    except MemoryError:
        return f"{name}: not a notebook (too big to read as JSON)"
    except ValueError as exc:
        return f"{name}: not valid JSON ({str(exc)[:120]})"
    del data
    problem, kept = notebook_problem(nb)
    if problem:
        return f"{name}: {problem}"
    sub.notebook = kept
    return None


def _text(value) -> str | None:
    """A notebook string: a str or a list of str (joined); None if it is neither."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return "".join(value)
    return None


def notebook_problem(nb) -> tuple[str | None, dict | None]:
    """``(None, what is kept)`` for a notebook of the right shape, else ``(why not, None)``.

    Kept: ``{"lesson": …, "cells": [{"cell_type", "source", "id"?, "metadata": {"tags"?}}]}``,
    every value of the type the grader expects.
    """
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        major = nb.get("nbformat") if isinstance(nb, dict) else None
        if isinstance(major, int) and major < 4:
            return (f"nbformat {major} is not supported; open it in Jupyter and save it "
                    "again (it is converted to nbformat 4)"), None
        return "not a Jupyter notebook (no list of cells)", None
    if nb.get("nbformat") != 4:
        return f"nbformat {str(nb.get('nbformat'))[:20]} is not supported; expected 4", None
    meta = nb.get("metadata", {})
    if not isinstance(meta, dict):
        return "not a valid notebook (its metadata is not a mapping)", None
    mlpar = meta.get("mlpar")
    lesson = mlpar.get("lesson") if isinstance(mlpar, dict) else None
    if len(nb["cells"]) > MAX_CELLS:
        return f"not a valid notebook (more than {MAX_CELLS} cells)", None
    cells = []
    for k, c in enumerate(nb["cells"]):
        if not isinstance(c, dict) or "cell_type" not in c:
            return "not a Jupyter notebook (a cell without a cell_type)", None
        where = f"cell {k + 1}"
        if c["cell_type"] not in _CELL_TYPES:
            return f"not a valid notebook ({where} has an unknown cell_type)", None
        source = _text(c.get("source", ""))
        if source is None:
            return f"not a valid notebook ({where}: its source is not text)", None
        cell_meta = c.get("metadata", {})
        if not isinstance(cell_meta, dict):
            return f"not a valid notebook ({where}: its metadata is not a mapping)", None
        kept = {"cell_type": c["cell_type"], "source": source, "metadata": {}}
        if "id" in c:
            if not isinstance(c["id"], str) or len(c["id"]) > 64:
                return f"not a valid notebook ({where}: its id is not a short string)", None
            kept["id"] = c["id"]
        tags = cell_meta.get("tags")
        if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            kept["metadata"]["tags"] = tags
        cells.append(kept)
    return None, {"lesson": lesson if isinstance(lesson, str) else None, "cells": cells}


def digest(sub: Submission, max_bytes: int = MAX_BYTES) -> Submission:
    """Fill in only the sha256 (what ``--resume`` compares), holding nothing of the file."""
    _, sub.sha256, _, problem = _read_bounded(sub.path, 0)
    if problem:
        sub.error = f"{sub.name}: {problem}"
        sub.sha256 = hashlib.sha256(("unreadable:" + sub.name).encode("utf-8", "replace")).hexdigest()
    return sub
