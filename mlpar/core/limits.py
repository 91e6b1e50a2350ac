"""How much of this machine one call may ask for: worker counts and array sizes.

Checked before anything is allocated or started, so a typo (``n_jobs=400``, ``n=10**12``)
is a clear ``ValueError`` instead of 400 processes or an out-of-memory kill:

    >>> workers("n_jobs", 400)        # on 2 cores
    Traceback (most recent call last):
    ...
    ValueError: n_jobs: expected at most 16 (8 per usable core, 2 cores here), got 400; ...

Kept apart from ``validation`` because it asks ``environment`` for the usable cores, and
``environment`` itself uses ``validation``.
"""

from __future__ import annotations

import numbers

from mlpar.core import validation
from mlpar.core.environment import usable_cores

# Worker, thread and process counts above this many times the usable cores are refused: past a
# few per core they only add start-up time and memory (each loky or Dask worker is a Python
# interpreter of ~100 MB), and a typo such as n_jobs=400 would start 400 processes.
WORKERS_PER_CORE = 8


def max_workers() -> int:
    """The most workers, threads or processes mlpar starts here: ``WORKERS_PER_CORE`` × cores."""
    return WORKERS_PER_CORE * usable_cores()


def workers(name: str, value, *, allow_all: bool = False) -> int:
    """A count of workers/threads/processes: 1 .. ``WORKERS_PER_CORE`` × usable cores.

    ``allow_all`` also accepts joblib's ``-1`` ("all cores"), returned unchanged.
    """
    if allow_all and isinstance(value, numbers.Integral) and not isinstance(value, bool) \
            and value == -1:
        return -1
    value = validation.positive_int(name, value)
    cap = max_workers()
    if value > cap:
        raise ValueError(
            f"{name}: expected at most {cap} ({WORKERS_PER_CORE} per usable core, "
            f"{usable_cores()} cores here), got {value}; more workers than that only add "
            "start-up time and memory"
        )
    return value


def elements(name: str, count: int, *, itemsize: int = 8) -> int:
    """Check that ``count`` elements of ``itemsize`` bytes fit in half of this machine's memory.

    ``count`` is computed from the arguments *before* allocating, so a size of 10**12 is a
    clear error instead of a hang in the allocator or an out-of-memory kill.
    """
    count = validation.integer(name, count, minimum=0)
    itemsize = validation.positive_int("itemsize", itemsize)
    limit = validation.memory_bytes() // 2
    if count * itemsize > limit:
        raise ValueError(
            f"{name}: expected arrays of at most {limit / 1e9:.3g} GB in all (half of this "
            f"machine's memory), got {count:,} elements = {count * itemsize / 1e9:,.4g} GB"
        )
    return count


# Iterations, updates and epochs of the lessons' trainers: enough for any lesson (they use
# tens to thousands); 10**12 would run for days in a loop that Stop interrupts only between
# calls to compiled code.
MAX_ROUNDS = 100_000


def rounds(name: str, value) -> int:
    """A count of iterations/updates/epochs: 1 .. ``MAX_ROUNDS``."""
    return validation.positive_int(name, value, maximum=MAX_ROUNDS)
