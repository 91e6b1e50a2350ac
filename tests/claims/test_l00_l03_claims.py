"""Lessons 00 and 03: claims that read the lesson's own measurement and can still fail, the
environment report's CPU facts, and every widget moved through the options its text suggests."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mlpar.claims import l00_index as c00
from mlpar.claims import l03_model_selection as c03
from mlpar.core import environment, timing
from mlpar.cpu.scaling_laws import SpeedupCurve

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture
def two_cores(monkeypatch):
    """A machine with two usable cores and a BLAS that may run two threads, whatever the host."""
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(environment, "blas_info",
                        lambda: [{"library": "openblas", "version": "0.3", "threads": 2}])


def _blas_table(one: list[float], every: list[float], n: int = c00.LARGE) -> c00.BlasThreads:
    flops = 2 * n**3
    return c00.BlasThreads(n, 2, timing.Timing("BLAS, 1 thread", tuple(one), one[0], flops=flops),
                           timing.Timing("BLAS, 2 threads", tuple(every), every[0], flops=flops))


# --- lesson 00 ----------------------------------------------------------------------------------


def test_the_blas_claim_reads_the_lessons_table_and_prints_its_spread(two_cores):
    held = c00.blas_threads_speed_up_a_large_product(table=_blas_table([0.04, 0.041], [0.022, 0.024]))
    assert held.held is True and held.value == pytest.approx(0.04 / 0.022)
    assert "2 interleaved rounds: 1.71–1.82×" in repr(held)
    # issue 31: a table of 1.19× beside a ✓ cannot happen: the claim is that table's verdict
    failed = c00.blas_threads_speed_up_a_large_product(table=_blas_table([0.0386], [0.0325]))
    assert failed.held is False and failed.value == pytest.approx(1.19, abs=0.01)
    assert repr(failed).startswith("✗ [00]")


@pytest.mark.parametrize("table, error", [
    ("1.8", TypeError), (1.8, TypeError),
    (_blas_table([0.01], [0.005], n=500), ValueError),  # another product than the claim's
])
def test_the_blas_claim_refuses_a_table_it_cannot_read(table, error, two_cores):
    with pytest.raises(error, match="table"):
        c00.blas_threads_speed_up_a_large_product(table=table)


def test_interleaved_blas_rounds_give_one_speedup_per_round():
    result = c00.blas_threads(60, repeat=3, threads=2)
    assert len(result.one.times) == len(result.every.times) == 3
    assert result.round_speedups.shape == (3,) and np.all(result.round_speedups > 0)
    assert result.speedup == pytest.approx(result.one.best / result.every.best)
    assert result.spread().startswith("3 interleaved rounds: ")
    for bad in ({"repeat": 0}, {"threads": 0}, {"seed": -1}):
        with pytest.raises(ValueError):
            c00.blas_threads(60, **bad)


def test_physical_cores_counts_distinct_cores_of_the_affinity(tmp_path, monkeypatch):
    # two logical CPUs on one core (SMT siblings), a third on another core
    for cpu, core in ((0, 0), (1, 0), (2, 1)):
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text("0\n")
        (topology / "core_id").write_text(f"{core}\n")
    monkeypatch.setattr(environment.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert environment.physical_cores(tmp_path) == 2
    monkeypatch.setattr(environment.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert environment.physical_cores(tmp_path) == 1
    monkeypatch.setattr(environment.os, "sched_getaffinity", lambda pid: {0, 7}, raising=False)
    assert environment.physical_cores(tmp_path) is None  # cpu7 not described: unknown
    with pytest.raises(TypeError, match="root"):
        environment.physical_cores(3)


def test_the_report_names_logical_cpus_and_the_simd_it_found():
    facts = environment.environment_report(measure_bandwidth=False).as_dict()
    assert "logical CPUs (os.cpu_count)" in facts and "cores (os.cpu_count)" not in facts
    assert "physical cores (in affinity)" in facts
    assert isinstance(environment.simd_extensions(), str) and environment.simd_extensions()


# --- lesson 03 ----------------------------------------------------------------------------------


def test_the_cv_claim_can_fail_and_prints_the_spread_of_its_rounds(two_cores):
    quiet = SpeedupCurve(workers=(1, 2), samples=((0.70, 0.40), (0.71, 0.39), (0.70, 0.41)))
    held = c03.parallel_cv_speeds_up(curve=quiet)
    assert held.held is True and held.threshold == c03.CV_SPEEDUP == 1.5
    assert "3 interleaved rounds: 1.71–1.82×" in repr(held)
    busy = SpeedupCurve(workers=(1, 2), samples=((0.70, 0.55), (0.72, 0.60)))
    failed = c03.parallel_cv_speeds_up(curve=busy)
    assert failed.held is False and failed.value == pytest.approx(0.70 / 0.55)
    assert repr(failed).startswith("✗ [03]")


def test_the_cv_threshold_is_far_from_what_quiet_two_core_runs_read():
    # issue 36: 1.62× and 1.69× on quiet runs flipped a 1.7× threshold; 1.5× sits below both
    assert all(reading - c03.CV_SPEEDUP >= 0.1 for reading in (1.62, 1.69, 1.79))


# --- widgets: every option the text suggests (issue 31 §4) ---------------------------------------


def _cell(notebook: str, cell_id: str) -> str:
    cells = json.loads((NOTEBOOKS / notebook).read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if c.get("id") == cell_id)
    return source.replace("# NBVAL_IGNORE_OUTPUT\n", "")


class _Interact:
    """Stands in for ipywidgets.interact: keeps the function and its widgets, shows nothing."""

    def __call__(self, func, **widgets):
        self.func, self.widgets = func, widgets

    def values(self, name) -> list:
        w = self.widgets[name]
        if hasattr(w, "options"):
            return list(w.options)
        return sorted({w.min, w.value, w.max} | ({2} if w.min <= 2 <= w.max else set()))


def test_lesson_00_widget_shows_a_speedup_for_every_size_and_thread_count(capsys):
    from ipywidgets import IntSlider

    from mlpar.core.environment import usable_cores

    interact = _Interact()
    namespace = {"interact": interact, "IntSlider": IntSlider, "usable_cores": usable_cores,
                 "lesson_claims": c00, "timing": timing, "SEED": 0}
    exec(_cell("00_index.ipynb", "5561b31f"), namespace)  # noqa: S102 - the lesson's own cell
    for n in (interact.widgets["n"].min, interact.widgets["n"].max):
        for threads in interact.values("threads"):
            interact.func(n=n, threads=threads)
            line = capsys.readouterr().out
            assert f"n={n}: 1 BLAS thread" in line and f"{threads} thread(s)" in line
            speedup = float(line.split("speedup ")[1].split("×")[0])
            assert math.isfinite(speedup) and speedup > 0


def test_lesson_03_widget_runs_every_engine_and_worker_count_with_identical_scores(
        capsys, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from ipywidgets import Dropdown, IntSlider

    from mlpar.algorithms.model_selection import cross_validation as ms
    from mlpar.core import cleanup, splits

    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gcf()))
    X, y = ms.load_dataset("breast_cancer")
    interact = _Interact()
    namespace = {"interact": interact, "IntSlider": IntSlider, "Dropdown": Dropdown, "plt": plt,
                 "np": np, "ms": ms, "splits": splits, "X": X, "y": y, "SEED": 0,
                 # the widget's mechanics (every engine and worker count, identical scores, two
                 # bars) do not depend on the model: the light one keeps its 12 runs quick
                 "CORES": environment.usable_cores(), "heavy": ms.make_model("logistic")}
    try:
        exec(_cell("03_model_selection.ipynb", "7bc4f6e0"), namespace)  # noqa: S102
        assert interact.values("backend") == ["sequential", "threading", "loky"]
        for backend in interact.values("backend"):
            for n_jobs in interact.values("n_jobs"):
                interact.func(backend=backend, n_jobs=n_jobs)
                text = capsys.readouterr().out
                assert "scores identical: True" in text, (backend, n_jobs, text)
                bars = shown[-1].axes[0].patches
                assert len(bars) == 2 and all(b.get_width() > 0 for b in bars)
                plt.close("all")
    finally:
        cleanup.release_pools()


@pytest.mark.parametrize("speedups, held, rounds", [([1.9] * 6, True, 6), ([1.0] * 6, False, 6),
                                                    ([1.9, 1.0, 1.9, 1.9, 1.9, 1.9, 1.9, 1.9,
                                                      1.9], True, 9)])
def test_lesson_00_bench_claim_takes_rounds_of_both_settings_until_decided(
        monkeypatch, speedups, held, rounds):
    from types import SimpleNamespace

    monkeypatch.setattr(c00, "_not_applicable", lambda: "")
    script = iter(speedups)
    calls = []

    def fake(n, *, repeat, **kwargs):
        calls.append((n, repeat))
        return SimpleNamespace(round_speedups=[next(script)])

    monkeypatch.setattr(c00, "blas_threads", fake)
    claim = c00.blas_threads_speed_up_a_large_product(quick=False)
    assert claim.held is held and f"median of {rounds} interleaved rounds" in claim.statement
    assert calls == [(c00.LARGE, 1)] * rounds  # one product per setting per round
