"""Argument checks shared by every public mlpar function.

Each check raises ``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind, wrong
value) with a message that names the argument, says what was expected and what arrived:

    >>> positive_int("n_threads", 0)
    Traceback (most recent call last):
    ...
    ValueError: n_threads: expected a positive integer, got 0

They return the (converted) value so a function can write ``n = positive_int("n", n)``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def integer(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (Python or numpy, not bool) within ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__} {_describe(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: expected an integer <= {maximum}, got {value}")
    return value


def positive_int(name: str, value) -> int:
    """An integer >= 1 (sizes, thread and worker counts, repeats)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name}: expected a positive integer, got {type(value).__name__} {_describe(value)}"
        )
    if value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value}")
    return int(value)


def number(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number in an interval; ``low_open`` excludes the lower end."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {_describe(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    interval = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name}: expected a number in {interval}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name}: expected a number in {interval}, got {value}")
    return value


def positive(name: str, value) -> float:
    """A finite number > 0 (step sizes, costs, C, gamma)."""
    return number(name, value, low=0.0, low_open=True)


def non_negative(name: str, value) -> float:
    """A finite number >= 0 (latencies, delays)."""
    return number(name, value, low=0.0)


def choice(name: str, value, options: Iterable[str]):
    """One of a fixed set of names (engines, kernels, backends)."""
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, options))}, got {value!r}")
    return value


def array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    dtype=None,
    finite: bool = False,
    contiguous: bool = False,
    min_size: int = 0,
) -> np.ndarray:
    """A numpy array with the given number of dimensions and dtype.

    ``dtype`` may be a numpy dtype or a tuple of them; the array is *not* converted, because a
    silent copy would hide the very memory traffic the lessons measure.
    """
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(value).__name__}")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got {value.ndim}-D shape {value.shape}")
    if dtype is not None:
        allowed = tuple(np.dtype(d) for d in (dtype if isinstance(dtype, tuple) else (dtype,)))
        if value.dtype not in allowed:
            names = " or ".join(str(d) for d in allowed)
            raise TypeError(
                f"{name}: expected dtype {names}, got {value.dtype}; convert with .astype({allowed[0]})"
            )
    if value.size < min_size:
        raise ValueError(f"{name}: expected at least {min_size} elements, got {value.size}")
    if contiguous and not value.flags.c_contiguous:
        raise ValueError(
            f"{name}: expected a C-contiguous array, got a strided view; pass np.ascontiguousarray(x)"
        )
    if finite and value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return value


def same_shape(name_a: str, a: np.ndarray, name_b: str, b: np.ndarray) -> None:
    """Two arrays that must line up element by element."""
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected shape {a.shape} to match {name_a}, got {b.shape}")


def same_length(name_a: str, a, name_b: str, b) -> None:
    """Two sequences (e.g. X and y) that must have the same number of rows."""
    if len(a) != len(b):
        raise ValueError(f"{name_b}: expected {len(a)} rows to match {name_a}, got {len(b)}")


def seed(name: str, value) -> int:
    """A seed for ``numpy.random.default_rng``: a non-negative integer."""
    return integer(name, value, minimum=0)


def callable_(name: str, value):
    """Something that can be called (a kernel, a student's solution)."""
    if not callable(value):
        raise TypeError(f"{name}: expected a function, got {type(value).__name__} {_describe(value)}")
    return value
