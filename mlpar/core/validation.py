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


def describe(value) -> str:
    """A short description of a value for an error message: type, shape and dtype of arrays."""
    return _describe(value)


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


def positive_int(name: str, value, *, maximum: int | None = None) -> int:
    """An integer >= 1 (sizes, thread and worker counts, repeats), at most ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name}: expected a positive integer, got {type(value).__name__} {_describe(value)}"
        )
    if value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: expected a positive integer <= {maximum:,}, got {value:,}")
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


def text(name: str, value) -> str:
    """A ``str`` (a label, a name used in messages)."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a str, got {type(value).__name__} {_describe(value)}")
    return value


def choice(name: str, value, options: Iterable[str]):
    """One of a fixed set of names (engines, kernels, backends)."""
    options = tuple(options)
    expected = ", ".join(map(repr, options))
    if all(isinstance(o, str) for o in options) and not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {expected}, got {type(value).__name__} "
                        f"{_describe(value)}")
    try:
        known = value in options
    except (TypeError, ValueError):  # unhashable or array-like values
        known = False
    if not known:
        raise ValueError(f"{name}: expected one of {expected}, got {_describe(value)}")
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
    numeric: bool = False,
) -> np.ndarray:
    """A numpy array with the given number of dimensions and dtype.

    ``dtype`` may be a numpy dtype or a tuple of them; the array is *not* converted, because a
    silent copy would hide the very memory traffic the lessons measure.
    """
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(value).__name__}")
    if 0 in value.strides and value.nbytes > memory_bytes() // 2:
        real_array(name, value)  # a broadcast view bigger than memory: refuse before any copy
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got {value.ndim}-D shape {value.shape}")
    if dtype is not None:
        allowed = tuple(np.dtype(d) for d in (dtype if isinstance(dtype, tuple) else (dtype,)))
        if value.dtype not in allowed:
            names = " or ".join(str(d) for d in allowed)
            raise TypeError(
                f"{name}: expected dtype {names}, got {value.dtype}; convert with .astype({allowed[0]})"
            )
    if numeric and value.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a numeric array, got dtype {value.dtype}")
    if value.size < min_size:
        raise ValueError(f"{name}: expected at least {min_size} elements, got {value.size}")
    if contiguous and not value.flags.c_contiguous:
        layout = "a Fortran-ordered (column-major) array" if value.flags.f_contiguous else (
            "a strided view")
        raise ValueError(
            f"{name}: expected a C-contiguous array, got {layout}; pass np.ascontiguousarray(x)"
        )
    if finite and value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return value


def finite_data(name: str, value) -> np.ndarray:
    """Training data without NaN or infinity; the message names the first bad position.

    Called by every trainer before it starts a thread, process or worker, so bad data is
    reported as bad data (``X: NaN at row 17, column 3``), not later as a diverging step size.
    Accepts numpy arrays and scipy sparse matrices (only the stored values can be bad).
    """
    data = getattr(value, "data", None) if hasattr(value, "tocsr") else value
    arr = np.asarray(data)
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return value
    bad = ~np.isfinite(arr)
    if not bad.any():
        return value
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    what = "NaN" if np.isnan(arr[first]) else "infinity"
    if hasattr(value, "tocsr"):
        csr = value.tocsr()
        k = int(np.flatnonzero(~np.isfinite(csr.data))[0])
        row = int(np.searchsorted(csr.indptr, k, side="right") - 1)
        where = f"row {row}, column {int(csr.indices[k])}"
    elif len(first) == 1:
        where = f"position {first[0]}"
    elif len(first) == 2:
        where = f"row {first[0]}, column {first[1]}"
    else:
        where = f"index {first}"
    count = int(bad.sum())
    more = f" ({count} bad values in all)" if count > 1 else ""
    raise ValueError(f"{name}: {what} at {where}{more}; clean or drop it before training")


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


def flag(name: str, value) -> bool:
    """``True`` or ``False`` (a Python or numpy bool), never merely truthy: ``"no"`` is truthy."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {_describe(value)}")
    return bool(value)


def real_array(name: str, value: np.ndarray) -> np.ndarray:
    """Refuse a broadcast (zero-stride) view: its virtual size is not backed by memory.

    ``np.broadcast_to(x, (10**12,))`` costs 8 bytes but claims 8 TB; code that copies,
    pickles or memory-maps it tries to write all 8 TB.
    """
    if value.size > 1 and 0 in value.strides:
        raise ValueError(
            f"{name}: expected an array backed by memory, got a broadcast view of shape "
            f"{value.shape} (a zero stride); pass np.ascontiguousarray(x) if you mean a copy"
        )
    return value


def finite_loss(losses, step_name: str, step_size: float, *, growth: float = 1e6) -> float:
    """Stop a trainer whose latest loss is NaN/inf or ``growth`` times its first one.

    Called each time a trainer records a loss (``losses`` is the list so far): a diverging run
    means a step size too large, and a silent ``inf`` in a plot teaches nothing. The message
    names the step size to change and the step where the loss left the rails.
    """
    loss, start = float(losses[-1]), float(losses[0])
    if np.isfinite(loss) and not (np.isfinite(start) and loss > growth * max(start, 1e-12)):
        return loss
    what = "is not finite" if not np.isfinite(loss) else f"grew {growth:.0e}-fold from {start:.6g}"
    raise ValueError(
        f"{step_name}: training diverged with {step_name}={step_size:g}: the loss {what} "
        f"(loss {loss:.6g} after {len(losses) - 1} steps); try a smaller {step_name}"
    )


def path(name: str, value):
    """A file-system path: ``str`` or ``os.PathLike`` (returned as ``pathlib.Path``)."""
    import os
    from pathlib import Path

    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a path (str or pathlib.Path), got "
                        f"{type(value).__name__} {_describe(value)}")
    return Path(value)


def memory_bytes() -> int:
    """Physical memory of this machine in bytes (16 GB where the system does not say)."""
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 * 2**30


def output(name: str, value, **checks) -> np.ndarray:
    """An array a function will write into: ``array(...)`` checks, writeable, memory of its own.

    A read-only array (a broadcast view, a read-only memmap) cannot take results, and a
    zero-stride one would have every element written to the same address.
    """
    value = array(name, value, **checks)
    if not value.flags.writeable:
        raise ValueError(f"{name}: expected a writeable array, got a read-only one; pass a copy")
    return real_array(name, value)
