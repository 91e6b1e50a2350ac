"""Opt-in: each lesson's kernel and its children stay under 700 MiB (scripts/peak_memory.py).

Binder gives about 2 GB for every kernel a student has open. Slow (it runs every lesson,
about 10 minutes on 2 cores), so it runs only with ``MLPAR_SLOW_TESTS=1``.
"""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("peak_memory", ROOT / "scripts" / "peak_memory.py")
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("MLPAR_SLOW_TESTS") != "1",
                       reason="opt-in memory check: set MLPAR_SLOW_TESTS=1"),
]


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.name for p in LESSONS])
def test_lesson_peak_memory_fits_binder(lesson):
    peak_memory = importlib.util.module_from_spec(SPEC)
    SPEC.loader.exec_module(peak_memory)
    row = peak_memory.peak_memory(lesson)
    assert row["peak PSS MiB"] < peak_memory.LIMIT_MB, row
