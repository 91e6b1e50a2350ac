"""A graded run that used a joblib process pool leaves nothing in /dev/shm once run_job returns.

The runner leaves with ``os._exit`` and its process group is killed, so loky's semaphores are
unlinked neither by its exit handlers nor by loky's resource tracker (dead in the same group):
nine ``sem.loky-<pid>-…`` entries per run before this was fixed, which the test session's
census then reported (issue 36). In the sandbox /dev/shm is the run's own; without it the
grader removes the run's entries itself.
"""

from __future__ import annotations

import os

import pytest

from mlpar.core import cleanup
from mlpar.course.grading import sandbox

POOL = """\
from joblib import Parallel, delayed
print(sum(Parallel(n_jobs=2, backend="loky")(delayed(abs)(-i) for i in range(8))))"""


def _dead_owned() -> set[str]:
    """loky/joblib entries in /dev/shm whose owner has exited."""
    return {p.name for p in cleanup.stale_shm_entries()}


@pytest.mark.skipif(not cleanup.SHM.is_dir() or not os.access(cleanup.SHM, os.W_OK),
                    reason="no writable /dev/shm here: loky cannot make its semaphores")
@pytest.mark.parametrize("isolation", ["none", "bwrap"])
def test_a_run_that_used_a_process_pool_leaves_no_semaphore(isolation, monkeypatch):
    monkeypatch.setenv(sandbox.SANDBOX_VARIABLE, isolation)
    if isolation == "bwrap":
        try:
            sandbox.isolation()
        except sandbox.SandboxUnavailable as exc:
            pytest.skip(str(exc))
    before = set(os.listdir(cleanup.SHM))
    job = {"lesson": "none", "seed": 1,
           "cells": [{"kind": "solution", "exercises": ["x"], "source": POOL}]}
    outcome = sandbox.run_job(job, timeout=120, memory_mb=4096)
    assert outcome.finished, outcome.output
    assert "28" in outcome.output, outcome.output  # the pool really ran
    left = _dead_owned() - before
    assert not left, f"the run left {sorted(left)} in /dev/shm"
