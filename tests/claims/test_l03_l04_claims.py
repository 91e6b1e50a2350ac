"""Lessons 03 and 04 declare at least two claims each; the deterministic ones hold anywhere.

Timing claims are not asserted to hold (they depend on the machine): only that they return a
checked ``Claim`` for the right lesson with a threshold, which ``python -m mlpar.bench claims``
then reports as held or not.
"""

import math

import pytest

from mlpar.claims import l03_model_selection as l03
from mlpar.claims import l04_hogwild as l04
from mlpar.core import environment
from mlpar.core.claims import Claim


@pytest.mark.parametrize("module, lesson", [(l03, "03"), (l04, "04")])
def test_each_lesson_declares_at_least_two_claims(module, lesson):
    assert len(module.CLAIMS) >= 2
    assert all(callable(f) and f.__doc__ for f in module.CLAIMS)


def test_parallel_cv_scores_are_identical_on_any_machine():
    from joblib._multiprocessing_helpers import mp

    if mp is None:
        pytest.skip("joblib cannot start worker processes here (/dev/shm missing or read-only)")
    claim = l03.parallel_cv_gives_identical_scores(quick=True)
    assert isinstance(claim, Claim) and claim.lesson == "03"
    assert claim.held is True and claim.value == 0.0


def test_all_sgd_variants_reach_the_same_loss_on_any_machine():
    claim = l04.all_variants_reach_the_same_loss(quick=True)
    assert claim.lesson == "04" and claim.held is True


def test_a_timing_claim_reports_a_figure_and_a_threshold(monkeypatch):
    from mlpar.core import environment

    # a machine where it applies (on one real core the figure is still measured, just not 2×)
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    claim = l04.lock_free_beats_locked(quick=True)
    assert claim.lesson == "04" and claim.threshold == 1.5
    # a verdict from the median of the rounds, or "undecided" where this machine's noise
    # straddles the threshold; either way the rounds are reported
    assert math.isfinite(claim.value) or "undecided here" in claim.not_applicable
    assert "lock-free" in repr(claim) and "interleaved rounds" in claim.statement


def test_parallel_cv_claim_reads_a_strong_curve_it_is_given(monkeypatch):
    from mlpar.claims import l03_model_selection as c03
    from mlpar.core import environment
    from mlpar.cpu.scaling_laws import SpeedupCurve

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")  # judged, not n/a

    curve = SpeedupCurve(workers=(1, 2), samples=((2.0, 1.1), (2.1, 1.0)))
    claim = c03.parallel_cv_speeds_up(curve=curve)
    assert claim.held is True and claim.value == pytest.approx(2.0)
    scaled = SpeedupCurve(workers=(1, 2), samples=((1.0, 1.1),), serial_samples=((1.0, 2.0),))
    for wrong in ("1.8", scaled, SpeedupCurve(workers=(1, 4), samples=((2.0, 0.6),))):
        with pytest.raises(TypeError, match="curve"):
            c03.parallel_cv_speeds_up(curve=wrong)


def test_lesson_00_and_03_speedup_claims_do_not_apply_on_one_core(monkeypatch):
    from mlpar.claims import l00_index as l00
    from mlpar.core import environment

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    for claim in (l00.blas_threads_speed_up_a_large_product(quick=True),
                  l00.large_products_gain_more_than_small_ones(quick=True),
                  l03.parallel_cv_speeds_up(quick=True),
                  l03.nogil_threads_beat_python_threads(quick=True),
                  l03.processes_escape_the_gil(quick=True)):
        assert claim.held is None and "needs at least 2 usable cores, this process may use 1" \
            in claim.not_applicable
        assert repr(claim).startswith(f"n/a [{claim.lesson}]")
    # bit-identical scores are not a speedup: they hold on one core too (where processes start)
    identical = l03.parallel_cv_gives_identical_scores(quick=True)
    assert identical.held is True or "/dev/shm" in identical.not_applicable


def test_lesson_00_claims_do_not_apply_when_blas_runs_one_thread(monkeypatch):
    from mlpar.claims import l00_index as l00
    from mlpar.core import environment

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=4")
    monkeypatch.setattr(environment, "blas_info",
                        lambda: [{"library": "openblas", "version": "0.3", "threads": 1}])
    claim = l00.blas_threads_speed_up_a_large_product(quick=True)
    assert claim.held is None and "needs BLAS with at least 2 threads" in claim.not_applicable


def test_the_cv_claim_names_its_job_and_wants_an_even_one():
    from mlpar.cpu.scaling_laws import SpeedupCurve

    curve = SpeedupCurve(workers=(1, 2, 4), samples=((4.0, 2.1, 1.2),))
    assert "CV of 20 fits on 2 processes" in repr(l03.parallel_cv_speeds_up(curve=curve, n_fits=20))
    for odd in (5, 15):
        with pytest.raises(ValueError, match="n_fits: expected an even number"):
            l03.parallel_cv_speeds_up(curve=curve, n_fits=odd)


def test_lesson_04_thread_claims_do_not_apply_on_one_core(monkeypatch):
    from mlpar.core import environment

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    for claim in (l04.lock_free_beats_locked(quick=True), l04.races_grow_with_density(quick=True)):
        assert claim.held is None and "cores" in claim.not_applicable
        assert repr(claim).startswith("n/a [04]")


def test_lesson_03_process_claims_do_not_apply_without_process_semaphores(monkeypatch):
    import joblib._multiprocessing_helpers as helpers

    from mlpar.core import environment

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    monkeypatch.setattr(helpers, "mp", None)  # /dev/shm missing or read-only
    for claim in (l03.parallel_cv_gives_identical_scores(quick=True),
                  l03.parallel_cv_speeds_up(quick=True), l03.processes_escape_the_gil(quick=True)):
        assert claim.held is None and "/dev/shm" in claim.not_applicable


def test_lock_free_claim_reads_the_lessons_own_table(monkeypatch):
    from types import SimpleNamespace

    # The claim needs two usable cores; fake them, so the table is judged on a 1-core host too.
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")

    def run(variant, threads, rate):
        return SimpleNamespace(variant=variant, threads=threads, updates_per_second=rate)

    table = [run("serial", 1, 5e6), run("locked", 2, 4e6), run("lock-free", 2, 1e7)]
    claim = l04.lock_free_beats_locked(runs=table)
    assert claim.held is True and claim.value == pytest.approx(2.5)
    slow = [run("locked", 2, 4e6), run("lock-free", 2, 4.4e6)]
    assert l04.lock_free_beats_locked(runs=slow).held is False
    with pytest.raises(ValueError, match="runs: expected SGDRun results including the locked"):
        l04.lock_free_beats_locked(runs=[run("serial", 1, 5e6)])


def test_lock_free_claim_does_not_apply_on_one_core(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    table = [SimpleNamespace(variant=v, threads=2, updates_per_second=r)
             for v, r in (("locked", 4e6), ("lock-free", 1e7))]
    claim = l04.lock_free_beats_locked(runs=table)
    assert claim.held is None and "usable cores" in claim.not_applicable


def test_lock_free_against_serial_reads_the_lessons_own_table(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")

    def run(variant, threads, rate):
        return SimpleNamespace(variant=variant, threads=threads, updates_per_second=rate)

    # beating the lock is not beating serial: 1.56x the locked run, yet slower than one thread
    loaded = [run("serial", 1, 5.69e5), run("locked", 2, 2.83e5), run("lock-free", 2, 4.41e5)]
    assert l04.lock_free_beats_locked(runs=loaded).held is True
    against_serial = l04.lock_free_beats_serial(runs=loaded)
    assert against_serial.held is False and against_serial.value == pytest.approx(4.41 / 5.69)
    quiet = [run("serial", 1, 4.7e6), run("locked", 2, 4.2e6), run("lock-free", 2, 8.5e6)]
    assert l04.lock_free_beats_serial(runs=quiet).held is True
    with pytest.raises(ValueError, match="runs: expected SGDRun results including the serial"):
        l04.lock_free_beats_serial(runs=[run("lock-free", 2, 5e6)])
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    assert "usable cores" in l04.lock_free_beats_serial(runs=quiet).not_applicable


def test_lock_free_claims_compare_runs_of_the_same_round_and_take_the_median(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=2")
    rates = []  # one dict per round: {variant: updates/s}, consumed as the claim runs

    def fake_run_sgd(problem, variant, **kwargs):
        rate = rates[0].pop(variant)
        if not rates[0]:
            rates.pop(0)
        return SimpleNamespace(updates_per_second=rate)

    monkeypatch.setattr(l04, "run_sgd", fake_run_sgd)
    monkeypatch.setattr(l04, "_problem", lambda quick: None)

    def rounds(*triples):
        rates[:] = [{"serial": s, "locked": lk, "lock-free": f} for s, lk, f in triples]

    def only(fast, slow):
        for r in rates:
            r.pop(({"serial", "locked", "lock-free"} - {fast, slow}).pop())

    # The machine slows down between rounds (all runs of round 2 at half speed), and once a
    # busy moment halves one 2-thread run (round 4): per-round ratios keep both out of the verdict.
    pattern = [(3e6, 2e6, 6e6), (1.5e6, 1e6, 3e6), (3e6, 2e6, 6e6), (3e6, 2e6, 3e6), (3e6, 2e6, 6e6),
               (3e6, 2e6, 6e6)]
    rounds(*pattern)
    only("lock-free", "locked")
    against_locked = l04.lock_free_beats_locked(quick=True)
    assert against_locked.value == pytest.approx(3.0) and against_locked.held is True
    assert "median of 6 interleaved rounds, 97% interval 1.5–3×" in against_locked.statement
    assert not rates  # six rounds sufficed: the interval cleared 1.5
    # Against serial the slow round 4 gives 1×, below 1.3: six rounds cannot rule it out,
    # nine can (the 2nd smallest of nine bounds the median with 96% coverage).
    rounds(*pattern, *[(3e6, 2e6, 6e6)] * 4)
    only("lock-free", "serial")
    against_serial = l04.lock_free_beats_serial(quick=True)
    assert against_serial.value == pytest.approx(2.0) and against_serial.held is True
    assert "median of 9 interleaved rounds" in against_serial.statement and len(rates) == 1
    # Most rounds slow: the median says so, once enough rounds pin it below the threshold.
    rounds(*[(3e6, 2e6, 3e6)] * 7 + [(3e6, 2e6, 6e6)] * 2)
    only("lock-free", "serial")
    assert l04.lock_free_beats_serial(quick=True).held is False
    # Rounds that keep landing on both sides: no verdict, and the reason names the noise.
    rounds(*[(3e6, 2e6, 3e6), (3e6, 2e6, 6e6)] * 5)
    only("lock-free", "serial")
    undecided = l04.lock_free_beats_serial(quick=True)
    assert undecided.held is None and "undecided here: after 9 rounds" in undecided.not_applicable
