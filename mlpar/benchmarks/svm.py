"""Benchmark family ``svm``: SMO against libsvm, kernel-matrix threads, cascade accuracy.

    python -m mlpar.bench svm            # full sizes
    python -m mlpar.bench svm --quick    # a smoke run

Figures (one run):

* ``smo_over_svc``: best SMO fit time ÷ best ``sklearn.svm.SVC`` fit time on the same
  2,000-sample two-moons problem with the same C, gamma and tol (target: at most 3). Both include
  their kernel evaluations (SMO computes kernel rows lazily, as libsvm's cache does; the
  variant that first builds the whole matrix on threads is timed too); numba compilation is
  excluded (timed apart as the first call).
* ``kernel_speedup``: RBF kernel matrix on 2 threads ÷ on 1 thread (target: at least 1.7 on
  two free cores; compute-bound, so it should scale).
* ``cascade_gap_points``: test-accuracy points lost by a one-pass 4-shard cascade against the SVM
  trained on all data (target: within 1 point), with both support-vector counts.
"""

from __future__ import annotations

import numpy as np

from .. import cascade_svm, kernels, smo, threads, timing


def _moons(n: int, seed: int):
    from sklearn.datasets import make_moons

    return make_moons(n, noise=0.3, random_state=seed)


def run(quick: bool = False) -> dict:
    """Measure the three figures; ``quick`` shrinks sizes and repeats for a smoke test."""
    from sklearn.svm import SVC

    n_fit = 500 if quick else 2000
    repeat = 2 if quick else 5
    params = {"C": 1.0, "gamma": 1.0, "tol": 1e-3}
    X, y = _moons(n_fit, seed=1)
    t_smo = timing.measure(smo.fit_smo, X, y, name="SMO (mlpar)", repeat=repeat, **params)
    t_all = timing.measure(smo.fit_smo, X, y, name="SMO, whole matrix", repeat=repeat,
                           kernel_rows="all", **params)
    t_svc = timing.measure(lambda: SVC(**params).fit(X, y), name="SVC (libsvm)", repeat=repeat)
    ours = smo.fit_smo(X, y, **params)
    ref = SVC(**params).fit(X, y)

    n_k = 800 if quick else 3000
    Xk = np.random.default_rng(0).normal(size=(n_k, 16))
    flops = n_k * n_k * (3 * 16 + 20)  # sub, mul, add per feature; ~20 for exp
    with threads.using_threads(1):
        t1 = timing.measure(kernels.kernel_matrix, Xk, name="1 thread", repeat=repeat,
                            gamma=0.1, flops=flops)
    n_threads = min(2, threads.max_threads())
    with threads.using_threads(n_threads):
        t2 = timing.measure(kernels.kernel_matrix, Xk, name=f"{n_threads} threads",
                            repeat=repeat, gamma=0.1, flops=flops)

    n_c = 1000 if quick else 4000
    Xc, yc = _moons(n_c, seed=2)
    Xt, yt = _moons(2000, seed=3)
    full = smo.fit_smo(Xc, yc, **params)
    cascade = cascade_svm.cascade_svm(Xc, yc, n_shards=4, n_passes=1, seed=0, **params)
    full_acc = full.score(Xt, yt)
    cascade_acc = cascade.model.score(Xt, yt)
    return {
        "n_fit": n_fit,
        "smo_fit_s": t_smo.best,
        "smo_compile_s": t_smo.first_call - t_smo.best,
        "smo_all_rows_fit_s": t_all.best,
        "svc_fit_s": t_svc.best,
        "smo_over_svc": t_smo.best / t_svc.best,
        "smo_iterations": ours.n_iter,
        "svc_iterations": int(np.sum(ref.n_iter_)),
        "n_kernel": n_k,
        "kernel_threads": n_threads,
        "kernel_1_thread_s": t1.best,
        "kernel_n_threads_s": t2.best,
        "kernel_gflops_n_threads": t2.gflops,
        "kernel_speedup": t1.best / t2.best,
        "n_cascade": n_c,
        "full_accuracy": full_acc,
        "cascade_accuracy": cascade_acc,
        "cascade_gap_points": 100.0 * (full_acc - cascade_acc),
        "full_support": full.n_support,
        "cascade_support": cascade.n_support,
    }


def report(figures: dict) -> str:
    """The figures as a few readable lines, each against its target."""
    f = figures
    ok = {True: "meets target", False: "misses target"}
    return "\n".join([
        f"SMO fit {f['smo_fit_s'] * 1e3:.1f} ms vs SVC {f['svc_fit_s'] * 1e3:.1f} ms on "
        f"{f['n_fit']} samples: {f['smo_over_svc']:.2f}x ({ok[f['smo_over_svc'] <= 3]}: <= 3x); "
        f"{f['smo_iterations']} vs {f['svc_iterations']} pair updates; SMO with the whole "
        f"kernel matrix first: {f['smo_all_rows_fit_s'] * 1e3:.1f} ms",
        f"RBF kernel matrix {f['n_kernel']}x{f['n_kernel']}: {f['kernel_1_thread_s'] * 1e3:.1f} ms "
        f"on 1 thread, {f['kernel_n_threads_s'] * 1e3:.1f} ms on {f['kernel_threads']}: speedup "
        f"{f['kernel_speedup']:.2f}x ({ok[f['kernel_speedup'] >= 1.7]}: >= 1.7x)",
        f"cascade (4 shards, 1 pass) on {f['n_cascade']} samples: accuracy "
        f"{f['cascade_accuracy']:.4f} vs full {f['full_accuracy']:.4f}, gap "
        f"{f['cascade_gap_points']:+.2f} points ({ok[abs(f['cascade_gap_points']) <= 1]}: "
        f"within 1); support vectors {f['cascade_support']} vs {f['full_support']}",
    ])
