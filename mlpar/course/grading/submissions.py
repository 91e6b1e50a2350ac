"""Finding the students and lessons in a folder of submissions, and reading each file safely.

Two layouts are accepted (both may be mixed):

* one folder per student: ``alice/01_loops_to_threads.ipynb`` (deeper folders are fine; the
  student is the first folder under SUBMISSIONS);
* one flat folder, as learning-management systems export it; the student is what the file name
  holds before the lesson's name, with the LMS's ids and words taken off:
  ``alice_12345_67890_01_loops_to_threads.ipynb`` (Canvas; ``_late_`` too),
  ``Alice Smith_12345_assignsubmission_file_01_loops_to_threads.ipynb`` (Moodle),
  ``Lab 1_alice_attempt_2024-01-01-10-00-00_01_loops_to_threads.ipynb`` (Blackboard).
  A name with nothing before the lesson (``Copy of 01_loops_to_threads (1).ipynb``) is graded
  under its file name.

The lesson comes from the notebook's metadata (``metadata.mlpar.lesson``, written into the
student edition), else from the file name: a lesson's name (``01_loops_to_threads``, any case,
spaces or hyphens for underscores), else its number followed by ``_``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 64 * 2**20  # a notebook bigger than this is refused, not parsed


@dataclass
class Submission:
    path: Path
    student: str
    lesson: str | None = None       # the lesson's file stem, once identified
    sha256: str = ""
    notebook: dict | None = None    # parsed JSON, once read and found to be a notebook
    error: str | None = None        # why it cannot be graded


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


def student_from_flat_name(name: str, lessons: list[str]) -> str:
    """The student named in a flat LMS export's file name (the file's stem if none is)."""
    stem = Path(name).stem
    _, at = lesson_in_name(stem, lessons)
    head = stem[:at] if at > 0 else ""
    head = re.sub(r"^\s*copy of\s*", "", head, flags=re.I)  # Colab's and Drive's copies
    head = re.sub(r"_attempt_[0-9\-]+_?$", "_", head, flags=re.I)  # Blackboard
    previous = None
    while head != previous:  # ids and LMS words at the end, in any order
        previous = head
        head = re.sub(r"[_\s\-]+[0-9]+[_\s\-]*$", "", head)
        head = _LMS_WORDS.sub("", head)
        head = re.sub(r"[_\s\-]+$", "", head)
    head = re.sub(r"^.*?_(?=[^_]+$)", "", head) if re.search(r"_attempt", stem, re.I) else head
    return head.strip() or stem


def find(folder: Path, lessons: list[str]) -> list[Submission]:
    """Every ``.ipynb`` under ``folder``, with its student, in a stable order."""
    folder = Path(folder)
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):  # .ipynb_checkpoints and the like
            continue
        if len(relative.parts) > 1:
            student = relative.parts[0]
        else:
            student = student_from_flat_name(path.name, lessons)
        found.append(Submission(path, student))
    return found


def read(sub: Submission, lessons: list[str], max_bytes: int = MAX_BYTES) -> Submission:
    """Fill in sha256, notebook and lesson, or ``error`` saying why the file cannot be graded."""
    size = sub.path.stat().st_size
    if size > max_bytes:
        with open(sub.path, "rb") as f:
            digest = hashlib.sha256()
            for block in iter(lambda: f.read(2**20), b""):
                digest.update(block)
        sub.sha256 = digest.hexdigest()
        sub.error = (f"{sub.path.name}: the file is {size / 2**20:.0f} MB, over the "
                     f"{max_bytes / 2**20:.0f} MB limit; clear its outputs and submit it again")
        sub.lesson = lesson_in_name(sub.path.name, lessons)[0]
        return sub
    data = sub.path.read_bytes()
    sub.sha256 = hashlib.sha256(data).hexdigest()
    sub.error = _notebook_problem(sub, data)
    meta = (sub.notebook or {}).get("metadata", {})
    tagged = meta.get("mlpar", {}).get("lesson") if isinstance(meta.get("mlpar"), dict) else None
    sub.lesson = tagged if tagged in lessons else lesson_in_name(sub.path.name, lessons)[0]
    if sub.error is None and sub.lesson is None:
        sub.error = (f"{sub.path.name}: matches no lesson of this course (no mlpar lesson in its "
                     f"metadata, and its name contains none of {', '.join(lessons)})")
    return sub


def _notebook_problem(sub: Submission, data: bytes) -> str | None:
    name = sub.path.name
    if not data.strip():
        return f"{name}: the file is empty"
    try:
        nb = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return f"{name}: not a notebook (not UTF-8 text)"
    except ValueError as exc:
        return f"{name}: not valid JSON ({exc})"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        major = nb.get("nbformat") if isinstance(nb, dict) else None
        if major is not None and major < 4:
            return (f"{name}: nbformat {major} is not supported; open it in Jupyter and save it "
                    "again (it is converted to nbformat 4)")
        return f"{name}: not a Jupyter notebook (no list of cells)"
    if nb.get("nbformat") != 4:
        return f"{name}: nbformat {nb.get('nbformat')} is not supported; expected 4"
    if not all(isinstance(c, dict) and "cell_type" in c for c in nb["cells"]):
        return f"{name}: not a Jupyter notebook (a cell without a cell_type)"
    sub.notebook = nb
    return None
