"""The structural tools look at what a function does: Python steps counted under a tracer
(loops written out, in helpers, in comprehensions, behind map() or np.vectorize), walks over an
array's rows, and the calls named in the source of the code that ran. No clock is read."""

import math
import sys

import numpy as np
import pytest

from mlpar.exercises import call, structure


def vectorised(X):
    return np.exp(-(X**2).sum(axis=1))


def loop(X):
    out = np.empty(len(X))
    for i in range(len(X)):
        out[i] = math.exp(-float((X[i] ** 2).sum()))
    return out


def _one(row):
    return math.exp(-float((row**2).sum()))


def loop_in_helper(X):
    return _helper(X)


def _helper(X):
    return np.array([_one(r) for r in X])


def comprehension(X):
    return np.array([math.exp(-s) for s in (X**2).sum(axis=1)])


def by_map(X):
    return np.fromiter(map(_one, X), float)


def by_vectorize(X):
    return np.vectorize(math.exp)(-(X**2).sum(axis=1))


def while_loop(X):
    out, i = [], 0
    while i < len(X):
        out.append(_one(X[i]))
        i += 1
    return np.array(out)


def _run(func, n):
    X = structure.Recorder(np.random.default_rng(0).normal(size=(n, 3)))
    counter = structure.StepCounter()
    call("f", counter.run, func, X)
    return counter, X.log


def _expect(func):
    structure.expect_vectorised("f", lambda: _run(func, 4), lambda: _run(func, 40),
                                small="4 rows", large="40 rows", extra_items=36)


def test_vectorised_code_does_the_same_python_work_at_any_size():
    small, _ = _run(vectorised, 4)
    large, _ = _run(vectorised, 400)
    assert small.steps == large.steps > 0
    assert small.calls == 0 and small.hidden_loops() == []
    _expect(vectorised)


@pytest.mark.parametrize("func, message", [
    (loop, "once per row"), (loop_in_helper, "once per row"), (comprehension, "once per row"),
    (while_loop, "once per row"), (by_map, "calls fromiter, map"),
    (by_vectorize, "calls vectorize")])
def test_loops_are_seen_wherever_they_hide(func, message):
    with pytest.raises(AssertionError, match=f"^f: .*{message}"):
        _expect(func)


def test_steps_grow_with_the_rows_for_loops_in_helpers():
    small, _ = _run(loop_in_helper, 4)
    large, _ = _run(loop_in_helper, 40)
    assert large.steps - small.steps >= 36 and large.calls - small.calls == 36


def test_library_frames_are_not_the_students():
    # numpy's own Python lines (np.linalg.norm, np.vectorize's machinery) are not counted.
    small, _ = _run(lambda X: np.linalg.norm(X, axis=1), 4)
    large, _ = _run(lambda X: np.linalg.norm(X, axis=1), 400)
    assert small.steps == large.steps


def test_the_tracer_in_place_before_is_restored_even_on_error():
    def tracer(frame, event, arg):
        return None

    sys.settrace(tracer)
    try:
        with pytest.raises(ZeroDivisionError):
            structure.StepCounter().run(lambda: 1 / 0)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)


def test_a_walk_over_rows_counts_even_without_a_python_loop():
    X = structure.Recorder(np.ones((5, 2)))
    list(map(float, X[:, 0]))
    X.tolist()
    assert X.log["walks"] >= 2


def test_python_work_returns_the_result_and_the_counter():
    result, counter = structure.python_work(loop, np.ones((3, 2)))
    np.testing.assert_allclose(result, np.exp(-2.0) * np.ones(3))
    assert counter.lines >= 3


def test_the_source_of_code_that_cannot_be_read_is_skipped():
    counter = structure.StepCounter()
    namespace = {}
    exec("def f(x):\n    return [v for v in x]\n", namespace)  # no file: no source to read
    counter.run(namespace["f"], range(3))
    assert counter.hidden_loops() == []


def loop_on_a_new_thread(X):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(loop, np.asarray(X)).result()


def test_a_loop_handed_to_a_new_thread_still_counts():
    with pytest.raises(AssertionError, match="once per row"):
        _expect(loop_on_a_new_thread)


def test_the_thread_tracer_is_restored():
    import threading

    structure.StepCounter().run(vectorised, np.ones((2, 2)))
    assert threading.gettrace() is None


# ---- Where the work ran (issue 35: the work each task or thread performs) -------------------

def _pool_sum(rows, pool):
    return sum(pool.map(lambda r: sum(v * v for v in r), rows))


def _caller_sum(rows, pool):
    done = [sum(v * v for v in r) for r in rows]  # the caller does the work ...
    return sum(pool.map(lambda d: d, done))       # ... the pool only hands values back


@pytest.mark.parametrize("func, on_pool", [(_pool_sum, True), (_caller_sum, False)])
def test_work_by_thread_tells_the_pool_s_work_from_the_caller_s(func, on_pool):
    from concurrent.futures import ThreadPoolExecutor

    rows = [list(range(200))] * 4
    with ThreadPoolExecutor(2) as pool:
        result, counter = structure.python_work(func, rows, pool)
    assert result == 4 * sum(v * v for v in range(200))
    caller, others = counter.work_by_thread()
    assert (sum(others) > 10 * caller) is on_pool, (caller, others)


def test_a_recorder_notes_the_thread_of_each_product():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    me = threading.get_ident()
    X = structure.Recorder(np.ones((4, 3)))
    X @ X.T
    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: X[:2] @ X[:2].T).result()
    assert len(X.log["products"]) == 2 and structure.products_off(X.log, me) == 1


def test_a_library_on_pythonpath_is_library_work_not_the_students(tmp_path, monkeypatch):
    # numpy carried on PYTHONPATH (the GPU machine) or installed with pip --user lies outside
    # the interpreter's folders; its Python lines were counted as the student's
    package = tmp_path / "carried" / "mlpar_test_library"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def total(xs):\n    s = 0\n    for x in xs:\n"
                                         "        s += x\n    return s\n")
    monkeypatch.syspath_prepend(str(tmp_path / "carried"))
    import mlpar_test_library

    def uses_it(X):
        return mlpar_test_library.total(range(len(X)))

    for libraries, counted in [((), True), (("mlpar_test_library",), False)]:
        monkeypatch.setattr(structure, "LIBRARIES", libraries)
        counter, _ = _run(uses_it, 40)
        assert (counter.lines > 40) == counted and (counter.calls > 0) == counted
