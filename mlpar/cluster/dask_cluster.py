"""A Dask cluster for the lessons: started by the code itself, or an existing one by address.

By default ``dask_client()`` starts a ``LocalCluster`` of worker *processes* on this machine,
bound to 127.0.0.1, and shuts it down when the ``with`` block ends. Give a scheduler address
(or set ``MLPAR_DASK_SCHEDULER``) to use a real multi-machine cluster instead; then only the
client is closed, the cluster keeps running.

    >>> with dask_client(n_workers=2) as client:
    ...     futures = client.map(square, range(10))

Every argument is checked before anything starts, and the workers are started inside the
``try`` that stops them: an interrupt (the notebook's Stop button) during start-up leaves no
worker process behind.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager

from mlpar.core import limits, validation

START_TIMEOUT = 60  # seconds for the workers to come up on a slow, busy laptop


@contextmanager
def dask_client(
    address: str | None = None,
    *,
    n_workers: int = 2,
    threads_per_worker: int = 1,
    processes: bool = True,
):
    """Yield a ``distributed.Client``; close it (and the cluster it started) afterwards.

    ``n_workers`` is capped at ``limits.max_workers()`` for a cluster started here.
    """
    if address is None:
        address = os.environ.get("MLPAR_DASK_SCHEDULER") or None
    if address is not None and not isinstance(address, str):
        raise TypeError(f"address: expected a scheduler address string, got {address!r}")
    if address is None:
        n_workers = limits.workers("n_workers", n_workers)
        threads_per_worker = validation.positive_int("threads_per_worker", threads_per_worker)
        if not isinstance(processes, bool):
            raise TypeError(f"processes: expected True or False, got {processes!r}")
    from distributed import Client, LocalCluster

    if address is not None:
        with Client(address) as client:
            yield client
        return
    # The scheduler alone first (it lives in this process); the workers are started by
    # ``scale`` inside the try below, so whatever interrupts their start-up also stops them.
    # In-process workers (processes=False) need the TCP protocol named explicitly to bind to
    # 127.0.0.1. The dashboard gets a free port, so two clusters on one machine do not collide.
    cluster = LocalCluster(
        n_workers=0,
        threads_per_worker=threads_per_worker,
        processes=processes,
        host="127.0.0.1",
        protocol="tcp://",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    environ = dict(os.environ)
    try:
        # direct_to_workers: results and actor calls go straight to the worker that holds
        # them, instead of through the scheduler (on this machine, every worker is reachable).
        with Client(cluster, direct_to_workers=True) as client:
            cluster.scale(n_workers)
            client.wait_for_workers(n_workers, timeout=START_TIMEOUT)
            restore_environ(environ)
            yield client
    finally:
        cluster.close()
        restore_environ(environ)


def restore_environ(saved: dict) -> None:
    """Put ``os.environ`` back as ``saved``.

    Dask's nanny sets its workers' settings (``MALLOC_TRIM_THRESHOLD_``, one BLAS/OpenMP
    thread) in *this* process's environment before it spawns a worker, and leaves them there.
    Every process started afterwards would inherit them: with ``MALLOC_TRIM_THRESHOLD_`` set,
    glibc stops adapting its mmap threshold, so each large numpy temporary is mapped and
    unmapped again (lesson 08's pipeline stages slowed down after a Dask lesson), and loky or
    ``ProcessEngine`` workers would be held to one BLAS thread.
    """
    for key in [k for k in os.environ if k not in saved]:
        del os.environ[key]
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
