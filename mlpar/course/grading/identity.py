"""Who handed a file in: the student key of a submission, from the LMS's own ids where it has them.

A learning-management system names each file of an export after the student who uploaded it,
then the file name the student chose. Only the first part is the system's; the student's own
file name is never used to say who they are (a student may name their upload ``alice_…``):

* Canvas: ``login[_late]_USERID_SUBMISSIONID_<file>``      -> ``login (USERID)``
* Moodle: ``Full Name_USERID_assignsubmission_file_<file>`` -> ``Full Name (USERID)``
  (also the folder Moodle makes per student, without ``<file>``)
* Blackboard: ``<assignment>_USERNAME_attempt_YYYY-MM-DD-HH-MM-SS[_<file>]`` -> ``USERNAME``

Two students with the same name keep their ids, so they stay two students. Anything else (a
folder per student, a file name with no LMS pattern) is the name as written, normalised (NFC,
whitespace: :func:`~mlpar.course.grading.csv_safety.normal_name`), so ``Zoë`` typed on macOS
and on Windows, or ``kim`` and ``kim ``, are one student.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata

from mlpar.course.grading.csv_safety import normal_name

_CANVAS = re.compile(r"^(?P<name>[^_]+?)_(?:late_)?(?P<id>[0-9]+)_[0-9]+_(?P<rest>.+)$", re.I)
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>[0-9]+)_assignsubmission_(?:file|onlinetext)_?(?P<rest>.*)$",
                     re.I)
_BLACKBOARD = re.compile(r"^(?:.*_)?(?P<name>[^_]+)_attempt_[0-9]{4}(?:-[0-9]{2}){5}_?(?P<rest>.*)$", re.I)


def decoded(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (a zip made on Windows) read as cp1252."""
    if not any(0xDC80 <= ord(c) <= 0xDCFF for c in name):
        return name
    raw = os.fsencode(name)
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def from_lms(name: str) -> tuple[str, str] | None:
    """``(student, the rest of the name)`` when ``name`` follows an LMS's pattern, else None."""
    name = decoded(name)
    match = _MOODLE.match(name)
    if match:
        return f"{normal_name(match['name'])} ({match['id']})", match["rest"]
    match = _BLACKBOARD.match(name)
    if match:
        return normal_name(match["name"]), match["rest"]
    match = _CANVAS.match(name)
    if match:
        return f"{normal_name(match['name'])} ({match['id']})", match["rest"]
    return None


def of_folder(name: str) -> str:
    """The student a top-level folder of SUBMISSIONS stands for."""
    found = from_lms(name)
    return found[0] if found else normal_name(decoded(name))


def file_stem(student: str, limit: int = 48) -> str:
    """A file name for ``student``'s feedback: readable ASCII, short, and unique per student.

    The readable part drops accents and anything but letters, digits, ``.``, ``_`` and ``-``;
    a hash of the whole key follows, so ``李娜`` and ``王伟``, or ``=2+5`` and ``+2+5``, never
    share a file.
    """
    ascii_text = unicodedata.normalize("NFKD", student).encode("ascii", "ignore").decode()
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_text).strip("._-")[:limit] or "student"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable}-{digest}"
