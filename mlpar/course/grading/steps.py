"""One step's time limit, shared by the grading process and the checker process.

A step is one solution cell or one check; it gets a share of the notebook's time. Its own module
so that the runner and the checker, which each run the other's steps, import it without
importing each other.
"""

from __future__ import annotations

import contextlib


class StepTimeout(BaseException):
    """A solution cell or a check ran past its share of the time (not an ``Exception``, so the
    checks' ``call`` does not turn it into a wrong answer)."""


@contextlib.contextmanager
def step_limit(seconds: float | None):
    """Raise :class:`StepTimeout` in this (main) thread after ``seconds`` (None: no limit)."""
    import signal

    if not seconds:
        yield
        return

    def expire(signum, frame):
        raise StepTimeout(f"ran past the {seconds:g} s limit of one step")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def first_line(text, limit: int = 300) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters (for a row's message)."""
    line = next((x.strip() for x in str(text).splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def memory_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` or anything in its chain of causes is a ``MemoryError``."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
