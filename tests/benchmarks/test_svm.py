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
    # The SMO/SVC grid: one row per quick grid point, each with its ratio and correctness.
    grid = figures["grid"]
    assert [(g["n"], g["C"], g["gamma"]) for g in grid] == [
        (n, C, g) for n in svm.QUICK_GRID["n"] for C in svm.QUICK_GRID["C"]
        for g in svm.QUICK_GRID["gamma"]]
    for g in grid:
        assert g["ratio"] == g["fast_s"] / g["svc_s"] > 0
        assert g["objective_rel_diff"] <= svm.OBJECTIVE_RTOL  # deterministic: same problem
        assert g["support_differ"] <= max(3, 0.03 * g["n_support"])
    # Deterministic parts: the same solve on every run and machine.
    assert 0.8 < figures["full_accuracy"] <= 1.0
    assert abs(figures["cascade_gap_points"]) <= 1.0
    text = svm.report(figures)
    assert text.count("target") == 5
    assert "SMO fit" in text and "RBF kernel matrix" in text and "cascade" in text
    assert text.count("\n") >= len(grid) + 4  # a header and one line per grid point


def test_alternating_best_warms_up_and_times_each_function():
    calls = []
    best = svm.alternating_best({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                repeat=2)
    assert calls == ["a", "b", "a", "b", "a", "b"]  # one warm-up each, then in turn
    assert set(best) == {"a", "b"} and all(v >= 0 for v in best.values())


def test_kernel_thread_speedup_reports_the_spread_of_repeats():
    figures = svm.kernel_thread_speedup(60, d=4, repeat=3)
    assert figures["d"] == 4 and len(figures["ratios"]) == 3
    assert all(r > 0 for r in figures["ratios"])
    assert figures["speedup"] == figures["one_s"] / figures["many_s"]


def test_column_split_costs_times_one_column_per_size():
    rows = svm.column_split_costs((50, 400), d=2, repeat=2)
    assert [r["n"] for r in rows] == [50, 400]
    for r in rows:
        assert r["one_s"] > 0 and r["many_s"] > 0 and r["speedup"] == r["one_s"] / r["many_s"]


def test_column_split_costs_refuses_bad_sizes():
    import pytest

    with pytest.raises(TypeError, match="ns: expected a sequence"):
        svm.column_split_costs(5)
    with pytest.raises(ValueError, match="ns: expected a positive integer"):
        svm.column_split_costs((10, 0))


def test_column_split_costs_times_one_compiled_loop_at_both_thread_counts(monkeypatch):
    # The review found 1 vs 2 threads timed on two different builds (a serial loop against
    # the prange loop), which measured code generation: both sides must call the same one.
    from mlpar.algorithms.svm import kernel_matrix

    calls = []
    real = kernel_matrix._gram_parallel

    def spy(*args):
        calls.append("parallel")
        return real(*args)

    def refuse(*args):
        raise AssertionError("the serial build was timed against the parallel one")

    monkeypatch.setattr(kernel_matrix, "_gram_parallel", spy)
    monkeypatch.setattr(kernel_matrix, "_gram_serial", refuse)
    rows = svm.column_split_costs((80,), d=2, repeat=3)
    assert len(calls) == 2 + 2 * 3  # warm-up pair, then three timed pairs
    assert len(rows[0]["ratios"]) == 3 and rows[0]["ratios"] == tuple(sorted(rows[0]["ratios"]))
    assert rows[0]["median_ratio"] == rows[0]["ratios"][1]
