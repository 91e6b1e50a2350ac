"""Mutants of the reference solutions that compute the same answer: not counted against a check.

Read by ``python -m mlpar.course.mutants`` and by ``tests/exercises/test_mutants.py``. A key is
``(lesson number, exercise, mutant key)`` as the tool prints it; the value says why the mutant
is equivalent (the same result for every input the exercise allows, or a difference below any
tolerance a right answer needs). A test fails when an entry no longer names a mutant of the
current solution, so the list cannot go stale.
"""

EQUIVALENT: dict[tuple[str, str, str], str] = {
}
