"""What runs *on a worker*: small importable functions, and the store that keeps a worker's data.

Every engine (simulated, local processes, Dask) ships a task as "function + arguments" to a
worker. A function defined in a notebook cell cannot be unpickled in a spawned process or on
a Dask worker, so the work that distributed algorithms hand out lives in importable modules
(the least-squares tasks in ``mlpar.algorithms.distributed.least_squares``).

Data placed on a worker once (``engine.put``) travels afterwards as a ``Ref``, a key into that
worker's ``WorkerStore``; ``WorkerStore.run`` swaps each ``Ref`` for the data before calling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlpar.core import validation


@dataclass(frozen=True)
class Ref:
    """Data already placed on a worker by ``put``: travels as a key, costs no bytes."""

    key: int


class WorkerStore:
    """A worker's own memory: data put there once, and the tasks that read it.

    On the process engine one lives in each worker process; on Dask it is an *actor*, an
    object living in one Dask worker whose method calls go straight to that worker (not
    through the scheduler), which is what keeps a round's latency near a message's.
    """

    def __init__(self):
        self.data: dict[int, object] = {}

    def put(self, key: int, value) -> None:
        # An array that arrives in a message may sit unaligned in the message's buffer, and
        # numpy's matmul then skips BLAS for a much slower loop: keep an aligned copy.
        if isinstance(value, np.ndarray) and not (value.flags.aligned and value.flags.writeable):
            value = value.copy()
        self.data[key] = value

    def run(self, func, args):
        """``func(*args)`` with every ``Ref`` in ``args`` replaced by the data it names."""
        return func(*[self.data[a.key] if isinstance(a, Ref) else a for a in args])


def echo(payload, *resident):
    """Return ``payload`` unchanged: a round trip that measures only the messages.

    ``resident``: references to data already on the worker, which the task depends on as a
    real task depends on its shard.
    """
    return payload


def noop(*_) -> None:
    """Do nothing: used to start worker processes before anything is timed."""
    return None


def row_pass(X, y, w):
    """Two matrix–vector products over the rows, Xᵀ(Xw − y): the neutral compute workload.

    The cost model times it when no workload is given (it has the shape of a least-squares
    gradient, without the cluster layer knowing about any learning algorithm).
    """
    X = validation.array("X", X, ndim=2, min_size=1, numeric=True)
    y = validation.array("y", y, ndim=1, numeric=True)
    w = validation.array("w", w, ndim=1, numeric=True)
    validation.same_length("X", X, "y", y)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w: expected {X.shape[1]} weights to match X's columns, got {w.shape[0]}")
    return X.T @ (X @ w - y)


def timed_once(func, *args) -> float:
    """Seconds of one call of ``func(*args)``, measured on the worker itself (no message)."""
    import time

    validation.callable_("func", func)

    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start
