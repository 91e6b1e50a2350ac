"""The svm benchmark family runs in quick mode and reports every figure against its target."""

import json
import math

from mlpar import bench
from mlpar.benchmarks import svm


def test_quick_run_and_report():
    assert "svm" in bench.families()
    figures = svm.run(quick=True)
    json.dumps(figures)  # --json must be able to write it
    for key in ("smo_over_svc", "kernel_speedup", "smo_fit_s", "svc_fit_s", "kernel_1_thread_s"):
        assert math.isfinite(figures[key]) and figures[key] > 0, key
    assert figures["smo_over_svc"] == figures["smo_fit_s"] / figures["svc_fit_s"]
    # Deterministic parts: the same solve on every run and machine.
    assert 0.8 < figures["full_accuracy"] <= 1.0
    assert abs(figures["cascade_gap_points"]) <= 1.0
    text = svm.report(figures)
    assert text.count("target") == 3
    assert "SMO fit" in text and "RBF kernel matrix" in text and "cascade" in text
