"""What the grading process tells the grader: events on a pipe, read with bounds, checked field by field.

The runner writes one JSON object per line to a pipe the grader made (:func:`open_pipe`); no
file, so no other run (and nothing left behind) can reach it. The grader reads it in a thread
(:class:`Reader`): at most :data:`MAX_BYTES` in all and :data:`MAX_LINE` per line, the rest
drained and dropped, so a submission that floods the pipe costs it its own events, never the
grader's memory. :func:`event` accepts a line only if it is one of the runner's events with
every field of the right type and size (a strict schema: a string where a number belongs, a
line nested 100 000 deep, an unknown event are dropped and counted, never a crash).
"""

from __future__ import annotations

import json
import os
import select
import threading

MAX_BYTES = 4 * 2**20
MAX_LINE = 64 * 1024
_TEXT = 2000  # characters kept of a message
_LIST = 50    # items kept of a list of strings


def open_pipe() -> tuple[int, int]:
    """``(read end, write end)``; only the write end is passed to the grading process."""
    read, write = os.pipe()
    os.set_inheritable(read, False)
    return read, write


class Reader:
    """Collect the lines of a pipe in a thread, with bounds; :meth:`lines` once it is closed."""

    def __init__(self, fd: int):
        self._fd = fd
        self._chunks: list[bytes] = []
        self._size = 0
        self.dropped = 0
        self._stop = threading.Event()
        self.closed = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.2)
            if not ready:
                continue
            try:
                block = os.read(self._fd, 65536)
            except OSError:
                return
            if not block:
                return
            if self._size + len(block) <= MAX_BYTES:
                self._chunks.append(block)
                self._size += len(block)
            else:
                self.dropped += len(block)

    def close(self, wait: float = 2.0) -> None:
        """Read until end of file (every writer gone) or ``wait`` seconds, then stop."""
        self._thread.join(wait)
        self._stop.set()
        self._thread.join()
        if not self.closed:
            self.closed = True
            os.close(self._fd)

    def lines(self) -> list[str]:
        data = b"".join(self._chunks)
        return [line.decode("utf-8", "replace") for line in data.split(b"\n")
                if line.strip() and len(line) <= MAX_LINE]


def _text(value, limit: int = _TEXT) -> str | None:
    if not isinstance(value, str):
        return None
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _texts(value) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [_text(v) for v in value[:_LIST]]


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and abs(value) < 1e9 else None


# event -> field -> (parser, required)
_SCHEMA = {
    "start": {"exercise": (_text, True), "stage": (_text, True)},
    "solution_error": {"exercises": (_texts, True), "message": (_text, True),
                       "memory": (lambda v: v if isinstance(v, bool) else None, False)},
    "check": {"exercise": (_text, True), "passed": (lambda v: v if isinstance(v, bool) else None, True),
              "message": (_text, True), "flags": (_texts, True), "detail": (_texts, False),
              "seconds": (_number, False), "observed": (lambda v: v if isinstance(v, bool) else None, False)},
    "done": {"seconds": (_number, False), "cell_errors": (_texts, False)},
    "handed_over": {"exercise": (_text, True)},
}


def event(line: str) -> dict | None:
    """The event a line holds, every field parsed (see the module), or None if it holds none."""
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(raw, dict) or raw.get("event") not in _SCHEMA:
        return None
    out = {"event": raw["event"]}
    for name, (parse, required) in _SCHEMA[raw["event"]].items():
        if name not in raw:
            if required:
                return None
            continue
        value = parse(raw[name])
        if value is None:
            return None
        out[name] = value
    return out


def events(lines: list[str]) -> tuple[list[dict], int]:
    """The valid events of ``lines`` and how many lines were not one."""
    found = [event(line) for line in lines]
    return [e for e in found if e is not None], sum(e is None for e in found)
