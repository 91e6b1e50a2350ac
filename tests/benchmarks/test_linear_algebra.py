"""The linear-algebra benchmark family runs end to end and reports every figure it promises."""

from mlpar.benchmarks import linear_algebra as bench
from mlpar.core import environment


def test_quick_run_reports_all_figures(monkeypatch):
    # A 1 MiB cache keeps the blocking sweep's B at a few MiB: the same code path and report
    # as on a large machine, in a fraction of the time (the sweep's sizes come from the plan).
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "llc=1MiB")
    figures = bench.run(quick=True)
    assert set(figures["gflops"]) == {"ijk", "ikj", "blocked", "parallel", "packed", "blas"}
    assert figures["python_gflops"] > 0
    assert figures["best_numba"] in bench.NUMBA_VARIANTS
    assert figures["blas_over_best_numba"] > 0 and figures["conv_thread_speedup"] > 0
    assert "1" in figures["blas_threads_gflops"] and "1" in figures["conv_threads_gflops"]
    sweep = figures["blocking"]
    assert len(sweep["sizes"]) == len(sweep["ikj"]) == len(sweep["blocked"]) == 3
    assert 8 * sweep["sizes"][-1] ** 2 >= 4 << 20 and "set by the cache" in sweep["plan"]
    text = bench.report(figures)
    for phrase in ("BLAS peak", "every variant at n =", "best numba", "target <= 5x",
                   "target >= 1.7x", "im2col", "blocked >= 1.3x ikj", "sizes: B from"):
        assert phrase in text
