"""mlpar.core.cleanup: what killed processes leave in /dev/shm is found and removed."""

import os
import subprocess
import sys

import pytest

from mlpar.core import cleanup


def test_owner_pid_reads_joblib_and_loky_names():
    assert cleanup.owner_pid("joblib_memmapping_folder_123_abc_def") == 123
    assert cleanup.owner_pid("sem.loky-456-xyz") == 456
    assert cleanup.owner_pid("psm_1234") is None


def test_only_entries_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    (tmp_path / f"joblib_memmapping_folder_{dead_pid}_a_b").mkdir()
    (tmp_path / f"sem.loky-{dead_pid}-q1").write_bytes(b"")
    alive = tmp_path / f"joblib_memmapping_folder_{os.getpid()}_c_d"
    alive.mkdir()
    other = tmp_path / "psm_unrelated"
    other.write_bytes(b"")
    assert {p.name for p in cleanup.stale_shm_entries(tmp_path)} == {
        f"joblib_memmapping_folder_{dead_pid}_a_b", f"sem.loky-{dead_pid}-q1"}
    assert cleanup.remove_stale_shm(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other.name])


def test_a_missing_folder_is_not_an_error(tmp_path):
    assert cleanup.stale_shm_entries(tmp_path / "nowhere") == []


def test_release_pools_removes_this_process_emptied_folders_only(tmp_path):
    import os

    mine = tmp_path / f"joblib_memmapping_folder_{os.getpid()}_a_b"
    busy = tmp_path / f"joblib_memmapping_folder_{os.getpid()}_c_d"
    other = tmp_path / "joblib_memmapping_folder_1_e_f"  # pid 1 is alive: not ours, not stale
    for folder in (mine, busy, other):
        folder.mkdir()
    (busy / "array.mmap").write_bytes(b"x")
    assert cleanup.own_empty_shm_folders(tmp_path) == [mine]
    assert cleanup.release_pools(tmp_path) == 1
    assert not mine.exists() and busy.exists() and other.exists()
    with pytest.raises(TypeError, match="root"):
        cleanup.own_empty_shm_folders(3)


def test_entries_of_named_owners_only_are_removed(tmp_path):
    dead = [int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                               capture_output=True, text=True, check=True).stdout)
            for _ in range(2)]
    for pid in dead:
        (tmp_path / f"sem.loky-{pid}-s1").write_bytes(b"")
    (tmp_path / f"sem.loky-{os.getpid()}-mine").write_bytes(b"")  # alive: never removed
    assert cleanup.remove_stale_shm(tmp_path, owners=[dead[0], os.getpid()]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"sem.loky-{dead[1]}-s1", f"sem.loky-{os.getpid()}-mine"])
    assert cleanup.remove_stale_shm(tmp_path, owners=[]) == 0


@pytest.mark.parametrize("owners, error", [("123", TypeError), (5, TypeError),
                                           ([0], ValueError), ([True], ValueError),
                                           ([1.5], ValueError)])
def test_owners_must_be_process_ids(tmp_path, owners, error):
    with pytest.raises(error, match="owners: expected"):
        cleanup.remove_stale_shm(tmp_path, owners=owners)


def test_a_zombie_counts_as_gone_and_a_live_process_as_alive():
    import subprocess
    import time

    from mlpar.core.cleanup import _alive

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert _alive(child.pid)
    finally:
        child.kill()
    # Killed and not waited for: a zombie until its parent (this process) reaps it.
    deadline = time.monotonic() + 10
    while _alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(child.pid)
    assert child.poll() is not None  # it was a zombie, not reaped: reap it now
