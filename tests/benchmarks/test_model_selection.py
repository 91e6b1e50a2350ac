"""The model-selection benchmark family runs in quick mode and reports its targets."""

import json

from mlpar import bench
from mlpar.algorithms.model_selection import speedup
from mlpar.benchmarks import model_selection as family


def test_family_is_discovered():
    assert "model_selection" in bench.families()


def test_quick_run_reports_every_figure():
    figures = family.run(quick=True)
    json.dumps(figures, default=float)  # what `--json` writes
    assert figures["cv_scores_identical"] is True
    assert figures["amdahl_workers"][0] == 1 and figures["amdahl_speedups"][0] == 1.0
    # doubling pool sizes up to the cores (at most 10: the job is 10 fits), not one per core
    assert figures["amdahl_workers"] == speedup.worker_counts(min(max(2, figures["cores"]), 10))
    assert 0.0 <= figures["amdahl_serial_fraction"] <= 1.0
    assert set(figures["gil_speedups"]) == {
        f"{w} / {e}" for w in ("python", "numba nogil", "numba (GIL held)") for e in ("threads", "processes")
    }
    text = family.report(figures)
    assert "target >= 1.5x" in text and "Amdahl fit" in text and "python / threads" in text
