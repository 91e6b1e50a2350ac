"""Lesson 09's claims: SMO solves libsvm's problem, the kernel matrix scales on threads, and
SMO with libsvm's engineering is as fast as libsvm on hard problems."""

from __future__ import annotations

import numpy as np

from mlpar.algorithms.svm import kernel_matrix as kernels
from mlpar.algorithms.svm import smo
from mlpar.benchmarks import svm as svm_bench
from mlpar.core import claims, validation

OBJECTIVE_RTOL = 1e-3
KERNEL_SPEEDUP = svm_bench.KERNEL_TARGET
FAST_OVER_SVC = 1.5


def smo_reaches_libsvms_objective(quick: bool = False):
    """The readable SMO's dual objective is within 1e-3 (relative) of libsvm's on the same
    problem (deterministic: no timing)."""
    quick = validation.flag("quick", quick)
    from sklearn.svm import SVC

    X, y = svm_bench.circles(400 if quick else 1500, seed=0)
    params = {"C": 100.0, "gamma": 2.0, "tol": 1e-3}
    ours = smo.fit_smo(X, y, **params)
    ref = SVC(**params).fit(X, y)
    y_signed, _ = smo.signed_labels(y)
    theirs = smo.dual_objective(kernels.kernel_matrix(X, gamma=params["gamma"]), y_signed,
                                svm_bench.libsvm_alpha(ref, len(y)))
    gap = abs(ours.dual_objective - theirs) / abs(theirs)
    return claims.check("09", "SMO's dual objective vs libsvm's (relative difference)", gap,
                        at_most=OBJECTIVE_RTOL,
                        cause="a different tol or kernel parameters, or a solver bug")


def kernel_matrix_scales_on_threads(quick: bool = False):
    """The RBF kernel matrix (d = 16) speeds up at least 1.5× from 1 to 2 threads.

    Each entry costs 16 multiply-adds and an ``exp`` for 8 bytes written, so the loop is
    compute-bound and two threads on two free cores approach 2×; 1.5× leaves room for the
    threads' start and an unequal last chunk, not for a core shared with other work. Measured
    in rounds (a warm-up, then one timing on 1 thread and one on 2) until the median is told
    apart from 1.5× (``claims.measure_rounds``): a moment when another program holds a core
    spoils a round, not the verdict.
    """
    quick = validation.flag("quick", quick)
    reason = claims.precondition(cores=2)
    if reason:
        return claims.check("09", "kernel matrix (d = 16), 2 threads vs 1", None,
                            at_least=KERNEL_SPEEDUP, unit="×", not_applicable=reason)
    n = 1200 if quick else 2500

    def one_round() -> float:  # a warm-up of each, then one timing of each, moments apart
        return float(svm_bench.kernel_thread_speedup(n, repeat=1)["ratios"][0])

    rounds = claims.measure_rounds(one_round, at_least=KERNEL_SPEEDUP,
                                   max_rounds=15 if quick else 25, budget_s=10 if quick else 20)
    return claims.check_rounds(
        "09", "kernel matrix (d = 16), 2 threads vs 1", rounds, unit="×",
        cause="a parallel loop waits for its slowest thread: a core busy with other work, "
              "or two logical cores sharing one physical core, slows every repeat alike")


def fast_smo_keeps_up_with_libsvm(quick: bool = False):
    """SMO with shrinking and a column cache fits a hard problem in at most 1.5× SVC's time."""
    quick = validation.flag("quick", quick)
    figures = svm_bench.versus_libsvm(1000 if quick else 3000, 1000.0, 10.0,
                                      repeat=2)
    value = figures["ratio"] if figures["objective_rel_diff"] <= OBJECTIVE_RTOL else np.nan
    return claims.check("09", "fast SMO's fit time / SVC's on circles (C=1000, γ=10)", value,
                        at_most=FAST_OVER_SVC, unit="×",
                        cause="timing noise from other programs (the two are timed in turn)")


CLAIMS = (smo_reaches_libsvms_objective, kernel_matrix_scales_on_threads,
          fast_smo_keeps_up_with_libsvm)
