import pytest

from mlpar.exercises import parallelism_kinds as ex


def test_reference_answers_pass(capsys):
    ex.check_kind_of_parallelism(ex.KIND_EXAMPLES.get)
    ex.check_usable_threads(lambda a, q: a if q is None else max(1, min(a, int(q))))
    ex.check_role(ex.ROLES.get)
    assert capsys.readouterr().out.count("passed") == 3


def test_wrong_answers_fail_with_a_hint():
    with pytest.raises(AssertionError, match="Ask: is it one instruction"):
        ex.check_kind_of_parallelism(lambda example: "SIMD")
    with pytest.raises(AssertionError, match=r"usable_threads\(8, 1.5\) returned 2, expected 1"):
        ex.check_usable_threads(lambda a, q: a if q is None else min(a, round(q)))
    with pytest.raises(AssertionError, match="A task says what to achieve"):
        ex.check_role(lambda term: "method")


def test_unfinished_exercise_says_not_done_yet():
    def unfinished(*args):
        raise NotImplementedError

    with pytest.raises(AssertionError, match="not done yet"):
        ex.check_role(unfinished)
