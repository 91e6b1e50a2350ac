"""Fixtures shared by every test folder: engines as a parametrized fixture, and a process census.

``engine_factory`` opens engines of every kind and, after the test, closes them and checks that
no worker process was left behind; ``process_census`` gives a test the same check by hand.

The session as a whole (unit tests and notebooks alike) is checked by the repository's root
``conftest.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from mlpar.cluster.engines import ENGINES, make_engine
from mlpar.core import cleanup


def children() -> set[int]:
    """Child processes of this test run, apart from multiprocessing's resource tracker."""
    return cleanup.child_processes()


def assert_no_new_children(before: set[int], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (left := children() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes left behind after closing the engine: {sorted(left)}"


@pytest.fixture(params=ENGINES)
def engine_factory(request):
    """Call with n_workers to get an open engine; it is closed and checked after the test."""
    before = children()
    made = []

    def factory(n_workers, **options):
        eng = make_engine(request.param, n_workers, **options)
        made.append(eng)
        return eng

    yield factory
    for eng in made:
        eng.close()
    assert_no_new_children(before)


@pytest.fixture
def process_census():
    """``(children, assert_no_new_children)``: take a census before, check after."""
    return children, assert_no_new_children


def run_fresh_python(script: str, *, timeout: float = 600) -> dict:
    """Run ``script`` in a fresh interpreter (numba's CUDA choice is made at its first import,
    which this test process may already have made) without ``NUMBA_ENABLE_CUDASIM``, so the
    script picks the GPU where there is one; return the JSON it printed after ``RESULT ``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [s for s in done.stdout.splitlines() if s.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="session")
def fresh_python():
    """``run_fresh_python`` as a fixture (test modules load in importlib mode)."""
    return run_fresh_python
