"""Tests for mlpar.algorithms.model_selection.speedup (sizes and shapes; timing is not judged)."""

import pytest
from joblib._multiprocessing_helpers import mp

from mlpar.algorithms.model_selection import cross_validation as cv
from mlpar.algorithms.model_selection import speedup
from mlpar.core import environment

# A process pool needs semaphores in /dev/shm; where there are none the run refuses loky
# (cross_validation.require_processes, tested on its own) and these tests have nothing to time.
needs_processes = pytest.mark.skipif(
    mp is None, reason="joblib cannot start worker processes here (/dev/shm missing or read-only)")


def test_granularity_bounds_five_fold_below_1_7_on_two_workers():
    assert speedup.best_possible_speedup(5, 2) == pytest.approx(5 / 3)
    assert speedup.best_possible_speedup(10, 2) == 2.0
    assert speedup.best_possible_speedup(3, 8) == 3.0


def test_fits_cut_repeated_kfold_to_the_count():
    pairs = speedup.fits(8, 50, seed=0)
    assert len(pairs) == 8
    assert all(len(tr) + len(te) == 50 for tr, te in pairs)


@needs_processes
def test_strong_and_scaled_curves_have_one_point_per_worker_count():
    X, y = cv.load_dataset("breast_cancer")
    model = cv.make_model("logistic")
    runs = []
    real = speedup.cv.cross_validate

    def counted(*args, **kwargs):
        runs.append((kwargs["n_jobs"], len(args[3])))
        return real(*args, **kwargs)

    speedup.cv.cross_validate = counted
    try:
        strong, scaled = speedup.strong_and_scaled(model, X, y, [1, 2], fixed_fits=2,
                                                   fits_per_worker=1, repeat=1)
    finally:
        speedup.cv.cross_validate = real
    # (workers, fits): each count warmed up by one fit per worker, then the timed round
    assert runs == [(1, 1), (2, 2), (1, 2), (2, 2),  # strong
                    (1, 1), (2, 2), (1, 1), (2, 2), (1, 2)]  # scaled: p, then 1 on p's job
    assert strong.workers == scaled.workers == (1, 2)
    assert strong.speedups[0] == 1.0 and scaled.speedups[0] == 1.0
    assert scaled.serial_times is not None and strong.serial_times is None


def test_heavy_model_is_the_documented_pipeline():
    model = speedup.heavy_model()
    assert model.get_params()["clf__C"] == speedup.HEAVY_PARAMS["clf__C"]
    assert "poly" in model.named_steps


# --- lesson 03's sweep plan: within its time and memory budget on any machine (issue 27 §3) ---

def test_worker_counts_double_up_to_the_top():
    assert speedup.worker_counts(1) == [1]
    assert speedup.worker_counts(2) == [1, 2]
    assert speedup.worker_counts(6) == [1, 2, 4, 6]
    assert speedup.worker_counts(16) == [1, 2, 4, 8, 16]
    assert speedup.worker_counts(128) == [1, 2, 4, 8, 16, 32, 64, 128]
    with pytest.raises(ValueError, match="top"):
        speedup.worker_counts(0)


@pytest.mark.parametrize("hardware", [
    "cores=1,memory=2GiB", "cores=2,memory=2GiB", "cores=16,memory=64GiB",
    "cores=64,llc=300MiB,memory=256GiB", "cores=128,llc=1.2GiB,memory=64GiB",
    "cores=128,llc=unknown,memory=1GiB"])
@pytest.mark.parametrize("fit_seconds", [0.01, 0.05, 0.072, 0.15])
def test_the_sweep_plan_stays_within_time_and_memory_on_any_machine(monkeypatch, hardware, fit_seconds):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, hardware)
    plan = speedup.plan_sweep(fit_seconds)
    cores, memory = environment.usable_cores(), environment.available_memory_bytes()
    assert plan.cores == cores
    assert plan.seconds <= speedup.SWEEP_BUDGET_SECONDS  # the cell's 30 s, with room for the rest
    assert plan.peak_bytes <= max(2 * speedup.WORKER_BYTES, speedup.MEMORY_SHARE * memory)
    for workers in (plan.strong_workers, plan.scaled_workers):
        assert workers[:2] == (1, 2)  # the one comparison every machine can make
        assert list(workers) == speedup.worker_counts(workers[-1])
        assert workers[-1] <= max(2, cores)
    assert plan.fixed_fits >= max(speedup.FIXED_FITS, plan.strong_workers[-1])  # no idle worker
    assert plan.fixed_fits % 10 == 0
    assert speedup.MIN_SWEEP_ROUNDS <= plan.repeat <= speedup.SWEEP_ROUNDS
    if plan.repeat < speedup.SWEEP_ROUNDS:  # fewer rounds only when five would not fit
        assert any(f"{plan.repeat} rounds instead of" in why for why in plan.stops)


def test_a_quick_machine_gets_five_rounds_and_a_slow_one_fewer(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2,memory=8GiB")
    assert speedup.plan_sweep(0.05).repeat == speedup.SWEEP_ROUNDS == 5
    slow = speedup.plan_sweep(0.3)
    assert slow.repeat < 5 and "rounds instead of 5" in repr(slow)


def test_the_plan_says_what_stopped_it(monkeypatch):
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=128,memory=64GiB")
    plan = speedup.plan_sweep(0.072)
    assert plan.strong_workers[-1] < 128 and plan.scaled_workers[-1] < plan.strong_workers[-1]
    text = repr(plan)
    assert "stops early: the memory budget" in text and "stops early: the time budget" in text
    assert f"{plan.fixed_fits} fits on {list(plan.strong_workers)} workers" in text
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2,memory=16GiB")
    plan = speedup.plan_sweep(0.072)
    assert plan.stops == () and "stops early" not in repr(plan)
    assert plan.strong_workers == plan.scaled_workers == (1, 2) and plan.fixed_fits == 10


def test_the_plans_prediction_adds_up_the_rounds():
    plan = speedup.plan_sweep(0.1, cores=2, memory_bytes=16 << 30)
    one_round = (10 * 0.1 + 5 * 0.1  # strong: 10 fits on 1, then on 2 workers
                 + 4 * 0.1 + 4 * 0.1  # scaled: 4 fits on 1 worker, 8 fits on 2
                 + 8 * 0.1  # one worker doing the grown job of 2
                 + 5 * speedup.CALL_SECONDS)
    # warm-ups: one fit per worker for each count, strong [1, 2] then scaled [1, 2]
    warm_ups = 2 * (1 * 0.1 + 1 * 0.1) + 4 * speedup.CALL_SECONDS
    assert plan.seconds == pytest.approx(warm_ups + plan.repeat * one_round)
    assert plan.fits == (1 + 2) + (1 + 2) + plan.repeat * (10 + 10 + 4 + 8 + 8)
    assert plan.strong_seconds == pytest.approx(0.2 + 2 * speedup.CALL_SECONDS + plan.repeat * (
        1.5 + 2 * speedup.CALL_SECONDS))


def test_a_slow_machine_gets_the_smallest_sweep_and_is_told(monkeypatch):
    plan = speedup.plan_sweep(0.5, cores=8, memory_bytes=16 << 30)
    assert plan.strong_workers == plan.scaled_workers == (1, 2)
    assert "nothing smaller is worth measuring" in repr(plan)


@pytest.mark.parametrize("kwargs, match", [
    ({"fit_seconds": 0}, "fit_seconds"), ({"fit_seconds": float("nan")}, "fit_seconds"),
    ({"fit_seconds": "0.1"}, "fit_seconds"), ({"fit_seconds": 0.1, "cores": 0}, "cores"),
    ({"fit_seconds": 0.1, "memory_bytes": -1}, "memory_bytes"),
    ({"fit_seconds": 0.1, "budget_seconds": 0}, "budget_seconds"),
])
def test_plan_sweep_refuses_bad_input(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        speedup.plan_sweep(**kwargs)


# --- the model of exercise 4: a search's speedup from task time and dispatch cost -----------

def test_predicted_speedup_is_granularity_and_dispatch():
    assert speedup.predicted_speedup(10, 2, 0.1, 0.0) == pytest.approx(2.0)
    assert speedup.predicted_speedup(5, 2, 0.1, 0.0) == pytest.approx(5 / 3)  # one worker does 3
    assert speedup.predicted_speedup(3, 8, 0.1, 0.0) == pytest.approx(3.0)  # idle workers
    assert speedup.predicted_speedup(20, 2, 0.01, 0.01) == pytest.approx(1.0)  # c eats the gain
    for kwargs, match in (({"n_tasks": 0}, "n_tasks"), ({"n_workers": 1.5}, "n_workers"),
                          ({"task_seconds": 0.0}, "task_seconds"),
                          ({"dispatch_seconds": float("nan")}, "dispatch_seconds")):
        args = {"n_tasks": 4, "n_workers": 2, "task_seconds": 0.1, "dispatch_seconds": 0.0, **kwargs}
        with pytest.raises((TypeError, ValueError), match=match):
            speedup.predicted_speedup(**args)


@needs_processes
def test_a_grid_search_is_measured_with_the_models_inputs():
    X, y = cv.load_dataset("breast_cancer")
    folds = cv.kfold(len(y), 3, seed=0)
    timing = speedup.measure_grid_speedup(cv.make_model("logistic"), {"clf__C": [0.1, 1.0]}, X, y,
                                          folds, n_workers=2, repeat=1)
    assert (timing.n_candidates, timing.n_folds, timing.n_workers, timing.n_tasks) == (2, 3, 2, 6)
    assert 0 < timing.task_seconds <= timing.slowest_task_seconds and timing.dispatch_seconds >= 0
    assert timing.measured == timing.serial_seconds / timing.parallel_seconds
    assert timing.predicted == speedup.predicted_speedup(6, 2, timing.task_seconds,
                                                         timing.dispatch_seconds)
    assert timing.gap().startswith("predicted ") and "measured" in repr(timing)
