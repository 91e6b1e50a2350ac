"""Checks for the graded exercises, one module per lesson topic.

A check calls the student's function on fresh inputs, compares with a reference, and either
prints one short pass line or raises ``AssertionError`` saying what is wrong and, where it can,
what to look at. A solution that still raises ``NotImplementedError`` (the student edition's
placeholder) fails with "not done yet" rather than a traceback into the check itself.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def call(exercise: str, func: Callable, *args, **kwargs):
    """Call the student's function; turn the unfinished placeholder into a clear failure."""
    if not callable(func):
        raise AssertionError(f"{exercise}: expected a function, got {type(func).__name__}")
    try:
        return func(*args, **kwargs)
    except NotImplementedError:
        raise AssertionError(
            f"{exercise}: not done yet; replace `raise NotImplementedError` with your solution"
        ) from None


def expect_close(exercise: str, got, expected, *, what: str, rtol=1e-7, atol=0.0) -> None:
    """Fail unless ``got`` matches ``expected`` in shape and values."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise AssertionError(f"{exercise}: {what} has shape {got.shape}, expected {expected.shape}")
    if not np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=False):
        bad = np.argwhere(~np.isclose(got, expected, rtol=rtol, atol=atol))
        first = tuple(int(i) for i in bad[0]) if bad.size else ()
        raise AssertionError(
            f"{exercise}: {what} differs from the reference in {len(bad)} place(s); "
            f"first at index {first}: got {got[first]!r}, expected {expected[first]!r}"
        )


def passed(exercise: str, detail: str = "") -> None:
    """Print the one line a student sees when the check passes."""
    print(f"✓ {exercise} passed" + (f": {detail}" if detail else ""))
