"""The root conftest's session check: a run that leaves something in /dev/shm fails."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LEAKY = textwrap.dedent('''
    import os, pathlib

    def test_leaves_a_filled_memmapping_folder():
        # As a killed notebook kernel's joblib pool would: a folder named with its owner's pid.
        folder = pathlib.Path("/dev/shm") / f"joblib_memmapping_folder_{os.getpid()}_census_probe"
        folder.mkdir()
        (folder / "data.pkl").write_bytes(b"x")
''')


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm on this system")
def test_a_session_that_leaves_shared_memory_behind_fails(tmp_path):
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
             "-o", "addopts=", "-q", str(tmp_path / "test_leaky.py")],
            # no plugin but the root conftest: importing nbval alone takes 2.5 s of CPU
            cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            capture_output=True, text=True, timeout=120)
    finally:
        for folder in Path("/dev/shm").glob("joblib_memmapping_folder_*_census_probe"):
            for f in folder.iterdir():
                f.unlink()
            folder.rmdir()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "left behind" in done.stdout and "census_probe still holds 1 file" in done.stdout
