"""Opt-in: the unit tests and lessons 00-03 in hostile environments (scripts/hostile_envs.py).

Slow (each environment runs the whole selection: 5-10 minutes each on 2 cores), so it runs
only with ``MLPAR_SLOW_TESTS=1``, like the install matrix:

    MLPAR_SLOW_TESTS=1 .venv/bin/pytest tests/test_hostile_envs.py -p no:cacheprovider
    MLPAR_SLOW_TESTS=1 .venv/bin/pytest tests/test_hostile_envs.py -k one-cpu   # one of them

An environment this machine cannot make (no unshare, no writable cgroup) is skipped with the
reason, not failed. The always-on tests below check the script's own plumbing quickly.
"""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("hostile_envs", ROOT / "scripts" / "hostile_envs.py")
hostile_envs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(hostile_envs)


@pytest.mark.parametrize("name", list(hostile_envs.ENVIRONMENTS), ids=str)
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("MLPAR_SLOW_TESTS") != "1",
                    reason="opt-in hostile environments: set MLPAR_SLOW_TESTS=1")
def test_tests_and_lessons_pass_in(name):
    row = hostile_envs.run_environment(name, hostile_envs.DEFAULT_SELECTION)
    if row["result"] == "not possible":
        pytest.skip(f"{name}: {row['summary']}")
    assert row["result"] == "passed", f"{row['summary']}\n{row['detail']}"


def test_the_matrix_names_every_environment_of_issue_24():
    for name in ("one-cpu", "cpu-quota", "numba-one-thread", "no-tbb", "tiny-shm", "readonly-shm",
                 "no-cache-info", "readonly-home", "odd-path"):
        assert name in hostile_envs.ENVIRONMENTS
    assert set(hostile_envs.LESSONS) <= set(hostile_envs.DEFAULT_SELECTION)
    with pytest.raises(ValueError, match="name: expected one of"):
        hostile_envs.run_environment("mars", [])


def test_variables_and_blocked_modules_reach_the_child(tmp_path):
    world = hostile_envs.World(tmp_path)
    hostile_envs.ENVIRONMENTS["numba-one-thread"](world)
    hostile_envs.no_tbb(world)
    assert world.env["NUMBA_NUM_THREADS"] == "1" and world.prefix == []
    site = Path(world.env["PYTHONPATH"].split(os.pathsep)[0]) / "sitecustomize.py"
    assert "numba.np.ufunc.tbbpool" in site.read_text()


def test_a_world_that_cannot_be_made_is_reported_not_failed(monkeypatch):
    monkeypatch.setattr(hostile_envs.shutil, "which", lambda name: None)
    row = hostile_envs.run_environment("one-cpu", ["tests/nothing"])
    assert row["result"] == "not possible" and "no taskset" in row["summary"]
