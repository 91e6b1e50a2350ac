"""Plain data across a process boundary: numbers, strings, lists, tuples, dicts and arrays.

A value check (:mod:`~mlpar.course.grading.checker`) calls the student's function in another
process. Its arguments and its result cross as *data only*: each value is encoded as a tagged
JSON value, and decoded into a new object of a built-in type (``int``, ``float``, ``bool``,
``complex``, ``str``, ``None``, ``list``, ``tuple``, ``dict``) or a fresh ``numpy.ndarray`` or
numpy scalar of a standard dtype (bool, integers, floats, complex). Nothing with methods of
the student's survives: an ``int`` subclass whose ``!=`` is always False arrives as the
``int`` it holds; an object with ``__array__``, ``__float__`` or ``__eq__`` arrives as nothing.

:func:`encode` with ``strict=True`` (the checker's arguments) refuses anything but exactly those
types (:class:`NotPlain`: that check is then run where the function lives); with
``strict=False`` (the student's result) subclasses are turned into their base values and
anything else is refused with a message for the student. :func:`decode` trusts nothing: tags,
dtypes, shapes and sizes are checked, and depth and size are bounded.

Frames are a 4-byte length and a JSON body, read with a deadline (:func:`receive`).
"""

from __future__ import annotations

import base64
import json
import numbers
import os
import select
import struct
import time

import numpy as np

MAX_FRAME = 256 * 2**20
MAX_DEPTH = 32
MAX_ITEMS = 1_000_000
_KINDS = "biufc"  # bool, signed, unsigned, float, complex: nothing with objects or bytes


class NotPlain(TypeError):
    """A value that is not plain data (see the module)."""


class ChannelClosed(EOFError):
    """The other process is gone (or sent something that is not a frame)."""


def _dtype_ok(dtype: np.dtype) -> bool:
    return (dtype.kind in _KINDS and dtype.fields is None and dtype.subdtype is None
            and dtype.itemsize <= 16 and dtype.isnative)


def encode(value, *, strict: bool, depth: int = 0):
    """``value`` as tagged JSON data (see the module)."""
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deeply")
    exact = type(value)
    if value is None:
        return {"n": None}
    if isinstance(value, (bool, np.bool_)) and (not strict or exact in (bool, np.bool_)):
        return {"b": bool(value)} if isinstance(value, bool) else {"g": ["|b1", _b64(np.asarray(value))]}
    if isinstance(value, np.generic) and (not strict or exact.__module__ == "numpy"):
        array = np.asarray(value)
        if not _dtype_ok(array.dtype):
            raise NotPlain(f"a numpy {array.dtype} scalar")
        return {"g": [array.dtype.str, _b64(array)]}
    if isinstance(value, numbers.Integral) and (not strict or exact is int):
        return {"i": str(int.__index__(value) if isinstance(value, int) else int(value))}
    if isinstance(value, float) and (not strict or exact is float):
        return {"f": float.__float__(value)}
    if isinstance(value, complex) and (not strict or exact is complex):
        z = complex.__complex__(value)
        return {"c": [z.real, z.imag]}
    if isinstance(value, str) and (not strict or exact is str):
        return {"s": str.__str__(value)}
    if isinstance(value, np.ndarray) and (not strict or exact is np.ndarray):
        array = np.array(np.asarray(value).view(np.ndarray), order="C")  # keeps a 0-d shape
        if not _dtype_ok(array.dtype):
            raise NotPlain(f"an array of dtype {array.dtype}")
        if array.size > MAX_ITEMS * 16:
            raise NotPlain("an array too big to send")
        return {"a": [array.dtype.str, list(array.shape), _b64(array)]}
    if isinstance(value, (list, tuple)) and (not strict or exact in (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise NotPlain("a list too long to send")
        tag = "t" if isinstance(value, tuple) else "l"
        return {tag: [encode(v, strict=strict, depth=depth + 1) for v in list(value)]}
    if isinstance(value, dict) and (not strict or exact is dict):
        return {"d": [[encode(k, strict=strict, depth=depth + 1), encode(v, strict=strict, depth=depth + 1)]
                      for k, v in dict.items(value)]}
    raise NotPlain(f"a {exact.__name__}")


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(array.tobytes()).decode("ascii")


def decode(data, depth: int = 0):
    """A fresh plain value from :func:`encode`'s output; ``ValueError`` for anything else."""
    if depth > MAX_DEPTH or not isinstance(data, dict) or len(data) != 1:
        raise ValueError("not an encoded value")
    ((tag, body),) = data.items()
    if tag == "n" and body is None:
        return None
    if tag == "b" and isinstance(body, bool):
        return bool(body)
    if tag == "i" and isinstance(body, str) and len(body) <= 400 and body.lstrip("-").isdigit():
        return int(body)
    if tag == "f" and type(body) in (float, int):
        return float(body)
    if tag == "c" and isinstance(body, list) and len(body) == 2 and all(type(x) in (float, int)
                                                                         for x in body):
        return complex(float(body[0]), float(body[1]))
    if tag == "s" and isinstance(body, str):
        return str(body)
    if tag in ("l", "t") and isinstance(body, list):
        items = [decode(v, depth + 1) for v in body]
        return items if tag == "l" else tuple(items)
    if tag == "d" and isinstance(body, list):
        out = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError("not an encoded dict")
            key = decode(pair[0], depth + 1)
            if not isinstance(key, (int, float, str, bool, tuple, complex, type(None))):
                raise ValueError("a dict key that is not hashable plain data")
            out[key] = decode(pair[1], depth + 1)
        return out
    if tag == "g" and isinstance(body, list) and len(body) == 2:
        dtype, raw = _dtype(body[0]), _bytes(body[1])
        if len(raw) != dtype.itemsize:
            raise ValueError("a numpy scalar of the wrong size")
        return np.frombuffer(raw, dtype=dtype)[0].copy()
    if tag == "a" and isinstance(body, list) and len(body) == 3:
        dtype, shape, raw = _dtype(body[0]), body[1], _bytes(body[2])
        if (not isinstance(shape, list) or len(shape) > 32
                or not all(type(n) is int and 0 <= n for n in shape)):
            raise ValueError("an array with a bad shape")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dtype.itemsize != len(raw):
            raise ValueError("an array whose data does not fit its shape")
        return np.frombuffer(raw, dtype=dtype).reshape(tuple(shape)).copy()
    raise ValueError("not an encoded value")


def _dtype(text) -> np.dtype:
    if not isinstance(text, str) or len(text) > 8:
        raise ValueError("not a dtype")
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise ValueError("not a dtype") from None
    if not _dtype_ok(dtype):
        raise ValueError(f"dtype {dtype} is not plain data")
    return dtype


def _bytes(text) -> bytes:
    if not isinstance(text, str):
        raise ValueError("not base64")
    return base64.b64decode(text.encode("ascii"), validate=True)


# --- frames --------------------------------------------------------------------------------------

def send(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    if len(body) > MAX_FRAME:
        raise NotPlain("a message too big to send")
    data = struct.pack(">I", len(body)) + body
    while data:
        data = data[os.write(fd, data):]


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes:
    parts, got = [], 0
    while got < n:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            raise TimeoutError
        block = os.read(fd, min(n - got, 2**20))
        if not block:
            raise ChannelClosed
        parts.append(block)
        got += len(block)
    return b"".join(parts)


def receive(fd: int, timeout: float | None = None) -> dict:
    """The next frame's message; ``TimeoutError`` after ``timeout`` s, ``ChannelClosed`` at the end."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = struct.unpack(">I", _read_exactly(fd, 4, deadline))
    if size > MAX_FRAME:
        raise ChannelClosed
    try:
        message = json.loads(_read_exactly(fd, size, deadline))
    except (ValueError, RecursionError, MemoryError):
        raise ChannelClosed from None
    if not isinstance(message, dict):
        raise ChannelClosed
    return message
