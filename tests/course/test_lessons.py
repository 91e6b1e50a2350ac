import re

import nbformat
import pytest

from mlpar.course import lessons as course
from mlpar.course.__main__ import main
from mlpar.course.student_edition import PLACEHOLDER, strip_solutions, student_notebook

LESSONS = course.lesson_paths()


def test_navigation_index_and_readme_are_up_to_date():
    stale = course.navigate(write=False)
    assert stale == [], f"run `make nav`: stale {[str(p) for p in stale]}"


def test_navigation_is_idempotent(tmp_path):
    for path in LESSONS:
        (tmp_path / path.name).write_text(path.read_text())
    readme = tmp_path / "README.md"
    readme.write_text(f"x\n{course.README_BEGIN}\n{course.README_END}\ny\n")
    first = course.navigate(folder=tmp_path, readme=readme)
    assert readme in first
    assert course.navigate(folder=tmp_path, readme=readme) == []


def test_links_between_notebooks_resolve():
    link = re.compile(r"\]\(([^)\s]+\.ipynb)(#[^)]*)?\)")
    for path in LESSONS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                continue
            for target, _ in link.findall(cell.source):
                if target.startswith("http"):
                    # Students' Colab links open the published student edition, never the solutions.
                    prefix = f"https://colab.research.google.com/github/{course.REPOSITORY}/blob/main/"
                    assert target.startswith(prefix + course.STUDENT_FOLDER + "/"), target
                    assert (course.ROOT / target[len(prefix):]).exists(), target
                else:
                    assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_index_lists_every_lesson():
    index = nbformat.read(LESSONS[0], as_version=4)
    table = next(c.source for c in index.cells if c.source.startswith(course.INDEX_MARKER))
    for path in LESSONS[1:]:
        assert f"({path.name})" in table


def test_read_lesson_rejects_a_bad_title(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lesson")])
    with pytest.raises(ValueError, match="must start with '# NN · Title'"):
        course.read_lesson(tmp_path / "07_x.ipynb", nb)


def test_strip_solutions_keeps_signature_and_indentation():
    src = "def f(x):\n    # BEGIN SOLUTION\n    y = x + 1\n    return y\n    # END SOLUTION\n\nprint(1)"
    assert strip_solutions(src) == f"def f(x):\n    {PLACEHOLDER}\n\nprint(1)"
    with pytest.raises(ValueError, match="without a matching"):
        strip_solutions("# BEGIN SOLUTION\nx = 1")


def test_student_notebook_clears_solution_and_check_outputs():
    nb = nbformat.read(LESSONS[1], as_version=4)
    student = student_notebook(nb)
    solutions = [i for i, c in enumerate(nb.cells) if "# BEGIN SOLUTION" in c.source]
    assert len(solutions) >= 2
    for i in solutions:
        assert "# BEGIN SOLUTION" not in student.cells[i].source
        assert PLACEHOLDER in student.cells[i].source
        assert student.cells[i].outputs == [] and student.cells[i + 1].outputs == []
    assert nb.cells[solutions[0] + 1].outputs, "the instructor copy keeps its outputs"


def test_cli_nav_check_passes():
    assert main(["nav", "--check"]) == 0


def test_navigate_refuses_a_folder_without_lessons(tmp_path):
    readme = tmp_path / "README.md"
    text = f"x\n{course.README_BEGIN}\n| 00 | kept |\n{course.README_END}\n"
    readme.write_text(text)
    (tmp_path / "empty").mkdir()
    for write in (True, False):
        with pytest.raises(ValueError, match="folder: expected lesson notebooks"):
            course.navigate(write=write, folder=tmp_path / "empty", readme=readme)
    assert readme.read_text() == text, "the README's lesson map must survive"


def test_student_links_point_at_the_student_edition():
    lesson = course.lesson_paths()[1]
    assert course.colab_url(lesson).endswith(f"/blob/main/student/{lesson.name}")
    assert course.binder_url(lesson).endswith(f"urlpath=lab/tree/student/{lesson.name}")
    readme = (course.ROOT / "README.md").read_text()
    assert course.binder_url(course.lesson_paths()[0]) in readme
    assert course.colab_url(course.lesson_paths()[0]) in readme
