"""A Dask cluster for the lessons: started by the code itself, or an existing one by address.

By default ``dask_client()`` starts a ``LocalCluster`` of worker *processes* on this machine,
bound to 127.0.0.1 with no dashboard, and shuts it down when the ``with`` block ends. Give a
scheduler address (or set ``MLPAR_DASK_SCHEDULER``) to use a real multi-machine cluster
instead; then only the client is closed, the cluster keeps running.

    >>> with dask_client(n_workers=2) as client:
    ...     futures = client.map(square, range(10))
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager

from . import validation


@contextmanager
def dask_client(
    address: str | None = None,
    *,
    n_workers: int = 2,
    threads_per_worker: int = 1,
    processes: bool = True,
):
    """Yield a ``distributed.Client``; close it (and the cluster it started) afterwards."""
    from distributed import Client, LocalCluster

    if address is None:
        address = os.environ.get("MLPAR_DASK_SCHEDULER") or None
    if address is not None:
        if not isinstance(address, str):
            raise TypeError(f"address: expected a scheduler address string, got {address!r}")
        with Client(address) as client:
            yield client
        return
    n_workers = validation.positive_int("n_workers", n_workers)
    threads_per_worker = validation.positive_int("threads_per_worker", threads_per_worker)
    # In-process workers (processes=False) need the TCP protocol named explicitly to bind to
    # 127.0.0.1. The dashboard gets a free port, so two clusters on one machine do not collide.
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            processes=processes,
            host="127.0.0.1",
            protocol="tcp://",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
