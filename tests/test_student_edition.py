"""The student edition really withholds the answers, and grading notices."""

import subprocess
import sys

import nbformat

from mlpar import course
from mlpar.student_edition import build


def test_student_edition_of_lesson_01_fails_at_its_check_cells(tmp_path):
    written = build(tmp_path)
    assert [p.name for p in written] == [p.name for p in course.lesson_paths()]
    assert (tmp_path / "data" / "MANIFEST.tsv").is_file()
    lesson = tmp_path / "notebooks" / "01_loops_to_threads.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    checks = [i for i, c in enumerate(nb.cells) if ".check_" in c.source and c.cell_type == "code"]

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-q",
         f"--rootdir={tmp_path}", str(lesson)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 1, report[-3000:]
    failed = [line for line in report.splitlines() if line.startswith("FAILED")]
    assert len(failed) == len(checks), report[-3000:]
    assert report.count("not done yet; replace `raise NotImplementedError`") >= len(checks)
