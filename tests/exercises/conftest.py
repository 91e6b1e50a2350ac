"""Fixtures shared by the exercise-check tests."""

from __future__ import annotations

import pytest


def checks_that_fail(cases: dict, wrong_one) -> dict:
    """Run every check of a lesson on its right answer, except ``wrong_one``'s on its wrong one.

    ``cases``: key -> (check, right answer, wrong answer). Returns key -> the failure's
    message, in the order of ``cases``: issue 25 asks that exactly ``{wrong_one: ...}`` come
    back, i.e. that each exercise is graded on its own.
    """
    failed = {}
    for key, (check, right, wrong) in cases.items():
        try:
            check(wrong if key == wrong_one else right)
        except AssertionError as err:
            failed[key] = str(err)
    return failed


@pytest.fixture
def graded_alone():
    """``checks_that_fail`` as a fixture (test modules load in importlib mode)."""
    return checks_that_fail
