"""Checks for the graded exercises, one module per lesson (``lNN_<lesson>.py``).

A check calls the student's function on fresh inputs, compares with a reference, and either
prints one short pass line or raises ``AssertionError`` naming the exercise, the case and what
was wrong (got vs expected, and a likely cause where one is common: a missing 1/n, transposed
shapes). A check never crashes on a half-written answer: ``None`` (the student edition's
placeholder returns nothing), a list, the wrong shape or dtype, NaN, or an exception raised
inside the student's function all end in that same ``AssertionError``.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable

import numpy as np

GRADING_SEED_VARIABLE = "MLPAR_GRADING_SEED"


def case_seed(base: int) -> int:
    """The seed of a check's test inputs: ``base``, shifted by the grader's seed of this run.

    In a lesson the cases are the same every time (``base``). The grader sets
    ``MLPAR_GRADING_SEED`` to a number it draws per run, so an answer that hard-codes the
    visible cases fails there. Use it only where a correct answer does not depend on the
    particular inputs.
    """
    import os

    extra = os.environ.get(GRADING_SEED_VARIABLE, "")
    try:
        shift = int(extra) if extra.strip() else 0
    except ValueError:
        shift = 0
    return (int(base) + 1_000_003 * shift) % 2**32


def fmt(value) -> str:
    """A number or array as a student reads it: ``0.25``, not ``np.float64(0.25)``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, threshold=8, separator=", ")
    return repr(value)


def call(exercise: str, func: Callable, *args, **kwargs):
    """Call the student's function; any failure inside it becomes a clear ``AssertionError``."""
    if not callable(func):
        raise AssertionError(f"{exercise}: expected a function, got {type(func).__name__}")
    try:
        return func(*args, **kwargs)
    except NotImplementedError:
        raise AssertionError(
            f"{exercise}: not done yet; replace `raise NotImplementedError` with your solution"
        ) from None
    except AssertionError:
        raise
    except Exception as exc:  # noqa: BLE001  (any bug in the student's code is reported, not raised)
        raise AssertionError(
            f"{exercise}: your function raised {type(exc).__name__}: {exc}"
        ) from exc


def call_refusing(exercise: str, func, refused: dict, *args, why: str = ""):
    """``call(exercise, func, *args)``, refusing an answer that calls one of ``refused``
    (``{function: what it is}``) however it reached it (``checks.f``, an alias, a ``getattr``,
    a helper, a thread): a profiler watches every Python call the answer makes, so the refusal
    looks at what the code does, not at how it is spelled. For an exercise that asks the student
    to build what the library or the check already has (issue 35). ``why`` says what to do
    instead."""
    codes = {f.__code__: f"{what} ({f.__module__}.{f.__qualname__})" for f, what in refused.items()}
    hit = []

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            hit.append(codes[frame.f_code])  # noted, not raised: the answer runs to its end

    previous, previous_threads = sys.getprofile(), threading.getprofile()
    sys.setprofile(watch)
    threading.setprofile(watch)
    try:
        result = call(exercise, func, *args)
    except AssertionError:
        if not hit:
            raise
        result = None
    finally:
        sys.setprofile(previous)
        threading.setprofile(previous_threads)
    if hit:
        raise AssertionError(
            f"{exercise}: your answer calls {hit[0]}; the exercise asks you to write that "
            "computation yourself, not to call it" + (f". {why}" if why else ""))
    return result


def as_array(exercise: str, got, *, what: str, shape=None, ndim=None, finite: bool = True) -> np.ndarray:
    """``got`` as a float array, or an ``AssertionError`` saying why it cannot be one."""
    if got is None:
        raise AssertionError(f"{exercise}: {what} is None; did the function forget to `return`?")
    try:
        arr = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise AssertionError(
            f"{exercise}: {what} should be numbers, got {type(got).__name__}") from None
    if ndim is not None and arr.ndim != ndim:
        raise AssertionError(f"{exercise}: {what} should be {ndim}-D, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        hint = ""
        if arr.ndim == 2 and arr.shape == tuple(shape)[::-1]:
            hint = " (transposed?)"
        raise AssertionError(
            f"{exercise}: {what} has shape {arr.shape}, expected {tuple(shape)}{hint}")
    if finite and not np.all(np.isfinite(arr)):
        raise AssertionError(f"{exercise}: {what} contains NaN or infinity")
    return arr


def expect_close(exercise: str, got, expected, *, what: str, rtol=1e-7, atol=0.0,
                 n: int | None = None) -> None:
    """Fail unless ``got`` matches ``expected`` in shape and values.

    ``n``: the number of samples or workers in the case; a result off by exactly that factor
    is reported as "looks like a missing 1/n" (or an extra one).
    """
    expected = np.asarray(expected, dtype=float)
    # NaN is not rejected up front: where it appears, the mismatch report below points at it
    got = as_array(exercise, got, what=what, shape=expected.shape, finite=False)
    if np.allclose(got, expected, rtol=rtol, atol=atol):
        return
    hint = ""
    if n and n > 1:
        if np.allclose(got, expected * n, rtol=rtol, atol=atol):
            hint = f"; it is {n}× too large: looks like a missing 1/n"
        elif np.allclose(got * n, expected, rtol=rtol, atol=atol):
            hint = f"; it is {n}× too small: looks like an extra 1/n"
    if expected.ndim == 0:
        raise AssertionError(
            f"{exercise}: {what} is {fmt(float(got))}, expected {fmt(float(expected))}{hint}")
    bad = np.argwhere(~np.isclose(got, expected, rtol=rtol, atol=atol))
    first = tuple(int(i) for i in bad[0])
    raise AssertionError(
        f"{exercise}: {what} differs from the reference in {len(bad)} place(s); "
        f"first at index {first}: got {fmt(got[first])}, expected {fmt(expected[first])}{hint}"
    )


def expect(exercise: str, condition: bool, message: str) -> None:
    """Fail with ``exercise: message`` unless ``condition`` holds."""
    if not condition:
        raise AssertionError(f"{exercise}: {message}")


def passed(exercise: str, detail: str = "") -> None:
    """Print the one line a student sees when the check passes."""
    print(f"✓ {exercise} passed" + (f": {detail}" if detail else ""))


def close_enough(a: float, b: float) -> bool:
    """Equal as a model's answer computed another way may be: 1e-9 relative, 1e-12 absolute."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def grade_prediction(name: str, func, cases, model, misreadings, *, what: str,
                     names: tuple[str, ...]) -> None:
    """Grade a prediction function against the lesson's model, exactly.

    ``cases``: tuples of arguments; ``model(*case)``: the right answer; ``misreadings``:
    ``(wrong_model, why)`` pairs, each a way to misread the model, recognised by its value and
    refused with ``why``. Any other wrong value is refused with the expected one. ``names``:
    the arguments' names, to say which case failed.
    """
    got, labels = [], []
    for case in cases:
        inputs = ", ".join(f"{k}={fmt(v)}" for k, v in zip(names, case, strict=True))
        value = call(name, func, *case)
        got.append(float(as_array(name, value, what=f"{what} for {inputs}", shape=())))
        labels.append(inputs)
    wrong = [i for i, case in enumerate(cases) if not close_enough(got[i], model(*case))]
    if not wrong:
        return
    first = wrong[0]
    head = (f"{name}: for {labels[first]} got {fmt(got[first])}, expected "
            f"{fmt(model(*cases[first]))}")
    # A misreading is recognised only when it explains every case, not one by coincidence.
    for misread, why in misreadings:
        if all(close_enough(g, misread(*case)) for g, case in zip(got, cases, strict=True)):
            raise AssertionError(f"{head}: {why}")
    if len(set(got)) == 1 and len(cases) > 1:
        raise AssertionError(f"{head}: your prediction does not change with the inputs; "
                             "compute it from the arguments")
    raise AssertionError(head)


def number(got) -> float | None:
    """``got`` as a float when it is one real number (not a bool), else None."""
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, float, np.integer, np.floating)):
        return None
    return float(got)


def refuse_unless_close(name: str, where: str, got, expected: float, misreadings, hint: str, *,
                        rel_tol: float, abs_tol: float = 0.0, show_type: bool = False) -> None:
    """Fail unless ``got`` is one number close to ``expected``; say which misreading it is.

    ``where``: the case, as the message reads it (``"for a single row"``, ``"m = 8:"``);
    ``misreadings``: ``(wrong value, why)`` pairs for this case; ``hint`` when none matches.
    ``show_type``: name the type of an answer that is not a number.
    """
    value = number(got)
    if value is not None and math.isclose(value, expected, rel_tol=rel_tol, abs_tol=abs_tol):
        return
    shown = fmt(got) if value is not None or not show_type else f"{type(got).__name__} {fmt(got)}"
    message = f"{name}: {where} you returned {shown}, expected {fmt(expected)}."
    if got is None:
        message += " Did the function forget to `return`?"
    elif value is None:
        message += " Return one number."
    else:
        for wrong, why in misreadings:
            if math.isclose(value, wrong, rel_tol=rel_tol, abs_tol=abs_tol):
                message += f" {why}"
                break
        else:
            message += f" {hint}"
    raise AssertionError(message)
