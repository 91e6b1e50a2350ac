"""The student edition really withholds the answers, is published up to date, and grading notices."""

import shutil
import subprocess
import sys

import nbformat
import pytest

from mlpar.course import lessons as course
from mlpar.course.__main__ import main
from mlpar.course.student_edition import PLACEHOLDER, build, check_target, stale


def test_published_student_edition_is_up_to_date(tmp_path):
    # Regenerate into a temporary folder and compare every file's content with student/.
    build(tmp_path / "fresh")
    fresh = {p.name: p.read_text() for p in (tmp_path / "fresh").iterdir()}
    published = {p.name: p.read_text() for p in course.STUDENT.iterdir() if p.is_file()}
    assert sorted(published) == sorted(fresh), "run `make student`"
    differ = [name for name in fresh if fresh[name] != published[name]]
    assert differ == [], f"student/ is out of date for {differ}: run `make student`"
    assert stale(course.STUDENT) == []


def test_published_edition_has_no_solutions():
    for path in course.lesson_paths(course.STUDENT):
        text = path.read_text()
        assert "# BEGIN SOLUTION" not in text and "# END SOLUTION" not in text, path.name
    nb = nbformat.read(course.STUDENT / "01_loops_to_threads.ipynb", as_version=4)
    assert any(PLACEHOLDER in cell.source for cell in nb.cells)


@pytest.mark.parametrize("where", [".", "notebooks", "notebooks/sub", "notebooks/.."])
def test_refuses_a_target_equal_to_inside_or_around_the_instructor_notebooks(where, capsys):
    before = {p: p.read_bytes() for p in course.lesson_paths()}
    target = course.ROOT / where
    with pytest.raises(ValueError, match="outdir: expected a folder outside"):
        check_target(target)
    assert main(["student", str(target)]) == 2
    assert "refused" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in course.lesson_paths()} == before
    assert not (course.NOTEBOOKS / "sub").exists()


def test_refuses_to_overwrite_a_notebook_with_solutions(tmp_path):
    shutil.copy(course.lesson_paths()[1], tmp_path)
    with pytest.raises(ValueError, match="still has solutions"):
        build(tmp_path)


def test_check_reports_a_stale_edition(tmp_path):
    build(tmp_path)
    assert main(["student", str(tmp_path), "--check"]) == 0
    (tmp_path / "00_index.ipynb").write_text("{}")
    (tmp_path / "99_gone.ipynb").write_text("{}")
    assert stale(tmp_path) == ["00_index.ipynb", "99_gone.ipynb"]
    assert main(["student", str(tmp_path), "--check"]) == 1
    build(tmp_path)
    assert stale(tmp_path) == [] and not (tmp_path / "99_gone.ipynb").exists()


def test_student_edition_of_lesson_01_fails_at_its_check_cells(tmp_path):
    written = build(tmp_path / "student")
    assert [p.name for p in written] == [p.name for p in course.lesson_paths()]
    lesson = tmp_path / "student" / "01_loops_to_threads.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    assert 'os.chdir("/content/mlpar/student")' in nb.cells[2].source  # Colab opens this folder
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


def test_each_student_notebook_names_its_lesson_for_the_grader(tmp_path):
    import mlpar

    for path in build(tmp_path / "student"):
        meta = nbformat.read(path, as_version=4).metadata["mlpar"]
        assert meta == {"lesson": path.stem, "edition": "student", "version": mlpar.__version__}
