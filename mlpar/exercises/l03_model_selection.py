"""Checks for lesson 03's exercises: shuffled folds, a joblib-parallel cross-validation,
Amdahl's serial fraction from one measurement, and a grid search's speedup predicted from the
lesson's model (task time and dispatch cost) before it is measured.

Each check runs the student's function on fresh inputs and compares with the package's own
implementation; it raises ``AssertionError`` naming the exercise, the case and what was wrong,
or prints one pass line. Whether the cross-validation runs in parallel is observed through a
joblib backend that records the tasks it receives, never through timing.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
from joblib import parallel as joblib_parallel
from joblib import parallel_config
from joblib.parallel import ThreadingBackend
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from mlpar.algorithms.model_selection import cross_validation as ms
from mlpar.algorithms.model_selection import speedup as speedup_model
from mlpar.cpu import scaling_laws
from mlpar.exercises import as_array, call, case_seed, expect, expect_close, fmt, passed

KFOLD = "Exercise 1 (shuffled k-fold)"
PARALLEL_CV = "Exercise 2 (parallel CV)"
SERIAL_FRACTION = "Exercise 3 (serial fraction)"
GRID_SPEEDUP = "Exercise 4 (predict a grid search's speedup)"


@contextmanager
def _refusing(name: str, targets):
    """Fail after the body if the student's code called one of ``targets``: (module, attribute)
    pairs, or (module, attribute, name shown), naming the library's own version of what the
    exercise asks the student to write."""
    used, saved = [], []
    for module, attr, *label in targets:
        original = getattr(module, attr)
        shown = label[0] if label else f"{module.__name__.rsplit('.', 1)[-1]}.{attr}"

        def spy(*args, _original=original, _shown=shown, **kwargs):
            used.append(_shown)
            return _original(*args, **kwargs)

        saved.append((module, attr, original))
        setattr(module, attr, spy)
    try:
        yield
    finally:
        for module, attr, original in saved:
            setattr(module, attr, original)
    expect(name, not used,
           f"your function calls {used[0] if used else ''}, the library's version of what this "
           "exercise asks you to write: write it yourself")


def _library(*names):
    from sklearn.model_selection import KFold, _validation

    from mlpar.core import splits

    # scikit-learn's KFold and cross_validate (and cross_val_score, which calls it) do the
    # whole exercise in one call: refused through the one method each of them runs
    found = {"kfold": [(splits, "kfold"), (ms, "kfold"), (splits, "repeated_kfold"),
                       (ms, "repeated_kfold"),
                       (KFold, "_iter_test_indices", "scikit-learn's KFold")],
             "cv": [(ms, "cross_validate"),
                    (_validation, "_fit_and_score",
                     "scikit-learn's cross-validation (cross_val_score, cross_validate)")],
             "fit": [(scaling_laws, "fit_amdahl"), (scaling_laws, "fit_gustafson"),
                     (scaling_laws, "_relative_fit")],
             "grid": [(speedup_model, "predicted_speedup"),
                      (speedup_model, "best_possible_speedup")]}
    return [t for n in names for t in found[n]]


def _index_array(name: str, case: str, part, what: str) -> np.ndarray:
    arr = as_array(name, part, what=f"{case}: {what}", ndim=1)
    expect(name, np.all(arr == np.round(arr)), f"{case}: {what} should hold whole row numbers")
    return arr.astype(np.int64)


def _folds(name: str, got, n: int, k: int) -> list:
    case = f"n={n}, k={k}"
    expect(name, got is not None, f"{case}: got None; did the function forget to `return`?")
    try:
        pairs = list(got)
    except TypeError:
        raise AssertionError(f"{name}: {case}: expected a list of (train, test) pairs, "
                             f"got {type(got).__name__}") from None
    expect(name, len(pairs) == k, f"{case}: expected {k} (train, test) pairs, got {len(pairs)}")
    out = []
    for i, pair in enumerate(pairs):
        try:
            train, test = pair
        except (TypeError, ValueError):
            raise AssertionError(f"{name}: {case}: fold {i} should be a (train, test) pair, "
                                 f"got {fmt(pair)}") from None
        out.append((_index_array(name, case, train, f"fold {i}'s train rows"),
                    _index_array(name, case, test, f"fold {i}'s test rows")))
    return out


def check_kfold(my_kfold) -> None:
    """``my_kfold(n_samples, k, seed)`` -> list of k (train, test) integer index arrays.

    Required: the test parts cover every row exactly once, sizes differ by at most one, each
    train part is the complement of its test part, the rows are *shuffled* (a fold is not a
    block of consecutive rows, and another seed gives other folds), and the same seed gives
    the same folds.
    """
    name = KFOLD
    for n, k in ((10, 3), (23, 5), (7, 7), (100, 4)):
        case = f"n={n}, k={k}"
        with _refusing(name, _library("kfold")):
            got = call(name, my_kfold, n, k, 0)
        folds = _folds(name, got, n, k)
        tests = [te for _, te in folds]
        everything = np.sort(np.concatenate(tests))
        expect(name, np.array_equal(everything, np.arange(n)),
               f"{case}: the test parts must hold each row 0..{n - 1} exactly once; "
               f"together they hold {fmt(everything)}")
        sizes = [len(te) for te in tests]
        expect(name, max(sizes) - min(sizes) <= 1,
               f"{case}: fold sizes should differ by at most 1, got {sizes} "
               f"(expected sizes {n // k} or {n // k + 1})")
        for i, (train, test) in enumerate(folds):
            expected = np.setdiff1d(np.arange(n), test)
            expect(name, np.array_equal(np.sort(train), expected),
                   f"{case}: fold {i}'s train rows must be every row not in its test rows "
                   f"(got {len(train)} train rows, expected {len(expected)})")
    # Shuffled: with 100 rows a shuffled fold of 25 is a consecutive block with probability
    # about 1e-20, and two seeds give the same first fold with about the same odds.
    folds = _folds(name, call(name, my_kfold, 100, 4, 0), 100, 4)
    blocks = [np.array_equal(np.sort(te), np.arange(te.min(), te.max() + 1)) for _, te in folds]
    expect(name, not all(blocks),
           "n=100, k=4: every test part is a block of consecutive rows; shuffle the row "
           "numbers with np.random.default_rng(seed).permutation before cutting them")
    other = _folds(name, call(name, my_kfold, 100, 4, 1), 100, 4)
    expect(name, not np.array_equal(np.sort(folds[0][1]), np.sort(other[0][1])),
           "n=100, k=4: seeds 0 and 1 gave the same first fold; the shuffle must depend on seed")
    again = _folds(name, call(name, my_kfold, 100, 4, 0), 100, 4)
    expect(name, all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True)),
           "n=100, k=4: the same seed must give the same folds; use default_rng(seed), "
           "not the global np.random")
    passed(name, "shuffled, seeded folds; test parts partition the rows, train parts are "
                 "their complements")


class RecordingBackend(ThreadingBackend):
    """A joblib thread backend that records what it is asked to run (for grading)."""

    log: dict = {}

    def configure(self, n_jobs=1, parallel=None, **kwargs):
        type(self).log.setdefault("n_jobs", []).append(n_jobs)
        return super().configure(n_jobs=n_jobs, parallel=parallel, **kwargs)

    def submit(self, func, callback=None):
        type(self).log["tasks"] = type(self).log.get("tasks", 0) + (
            len(func) if hasattr(func, "__len__") else 1)
        type(self).log.setdefault("threads", set())
        return super().submit(self._in_worker(func), callback)

    @staticmethod
    def _in_worker(func):
        def run():
            RecordingBackend.log["threads"].add(threading.get_ident())
            return func()

        return run


@contextmanager
def recording_backend():
    """Every joblib.Parallel inside runs on ``RecordingBackend``, whatever backend it names."""
    RecordingBackend.log = {}
    names = ("loky", "threading", "multiprocessing")
    saved = {k: joblib_parallel.BACKENDS.get(k) for k in names}
    try:
        for k in names:
            joblib_parallel.BACKENDS[k] = RecordingBackend
        with parallel_config(backend=RecordingBackend()):
            yield RecordingBackend.log
    finally:
        for k, v in saved.items():
            joblib_parallel.BACKENDS[k] = v


class _FitLog:
    """Where and when the witness model's fits ran: the thread of each fit, and whether two
    fits were ever in progress at once (the first two fits off the calling thread wait for each
    other, up to ``WAIT_SECONDS``; a pool that runs them one after another never lets them
    meet)."""

    WAIT_SECONDS = 5.0

    def __init__(self):
        self.lock = threading.Lock()
        self.caller = threading.get_ident()
        self.threads: list[int] = []
        self.waiting = 0
        self.met = False
        self.barrier = threading.Barrier(2)

    def note(self) -> None:
        me = threading.get_ident()
        with self.lock:
            self.threads.append(me)
            wait = me != self.caller and self.waiting < 2 and not self.met
            if wait:
                self.waiting += 1
        if wait:
            try:
                self.barrier.wait(timeout=self.WAIT_SECONDS)
                self.met = True
            except threading.BrokenBarrierError:
                pass


_FITS = _FitLog()


class FitWitness(BaseEstimator, ClassifierMixin):
    """The check's model: it fits and scores a clone of ``estimator`` exactly (same scores),
    and notes on which thread each fit ran (``_FITS``). scikit-learn's ``clone`` keeps it."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        _FITS.note()
        self.fitted_ = clone(self.estimator).fit(X, y)
        return self

    def score(self, X, y):
        return self.fitted_.score(X, y)


def check_parallel_cv(parallel_cv) -> None:
    """``parallel_cv(model, X, y, folds, n_jobs)`` -> one score per fold, computed in parallel.

    Structure: the folds must reach a joblib backend as one task each, with ``n_jobs``
    workers (observed by a recording backend). Result: exactly the serial scores, in order.
    """
    name = PARALLEL_CV
    from joblib._multiprocessing_helpers import mp

    # where joblib cannot create its semaphores (no writable /dev/shm) it runs every pool,
    # threads included, as a plain loop: no answer could show its tasks here
    expect(name, mp is not None,
           "joblib cannot start pools on this machine (no semaphores: /dev/shm missing or "
           "read-only), so this check cannot see your tasks run; it says nothing about your "
           "answer. Run the lesson where /dev/shm is writable (Binder, Colab, a laptop)")
    global _FITS

    X, y = ms.load_dataset("breast_cancer")
    model = FitWitness(ms.make_model("logistic"))
    folds = ms.kfold(len(y), 4, seed=case_seed(11))
    reference = ms.cross_validate(model, X, y, folds).scores
    _FITS = _FitLog()
    with recording_backend() as log, _refusing(name, _library("cv")):
        got = call(name, parallel_cv, model, X, y, folds, 2)
    fits = _FITS
    case = "4 folds, n_jobs=2"
    got = as_array(name, got, what=f"{case}: the scores", ndim=1)
    expect(name, got.shape == reference.shape,
           f"{case}: expected {len(folds)} scores (one per fold), got {got.shape[0]}")
    if not np.array_equal(got, reference):
        if np.array_equal(np.sort(got), np.sort(reference)):
            raise AssertionError(f"{name}: {case}: right scores in the wrong order; "
                                 "keep the folds' order (Parallel returns results in order)")
        raise AssertionError(
            f"{name}: {case}: scores {fmt(got)} differ from the serial ones {fmt(reference)}; "
            "call ms.fit_and_score(model, {}, X, y, train, test) for each fold")
    requested = log.get("n_jobs", [])
    expect(name, bool(requested),
           f"{case}: no joblib.Parallel ran; the folds were scored one after another in "
           "this process. Use Parallel(n_jobs=n_jobs)(delayed(...)(...) for ...)")
    expect(name, any(j is not None and (j == -1 or j >= 2) for j in requested),
           f"{case}: joblib.Parallel ran with n_jobs={requested[-1]}, expected the n_jobs "
           "argument (2): pass n_jobs=n_jobs")
    here = sum(t == fits.caller for t in fits.threads)
    expect(name, here == 0,
           f"{case}: {here} of the {len(fits.threads)} fits ran in the calling thread, not on the "
           "pool: the tasks must do the fitting (delayed(ms.fit_and_score)(...)), not hand "
           "back scores computed beforehand")
    expect(name, len(fits.threads) == len(folds),
           f"{case}: the model was fitted {len(fits.threads)} times, expected once per fold "
           f"({len(folds)})")
    tasks = log.get("tasks", 0)
    expect(name, tasks == len(folds),
           f"{case}: the backend received {tasks} task(s), expected one per fold "
           f"({len(folds)}): write one delayed(...) call per (train, test) pair")
    expect(name, fits.met,
           f"{case}: the fits ran one after another, never two at once (on "
           f"{len(set(fits.threads))} worker thread(s)): give each fold its own task, and "
           "send them all to one Parallel(n_jobs=n_jobs) call")
    passed(name, f"{len(folds)} folds ran as {tasks} joblib tasks on n_jobs=2; scores equal "
                 "the serial ones exactly")


def check_serial_fraction(serial_fraction) -> None:
    """``serial_fraction(p, speedup)`` -> Amdahl's ``s`` from one measurement at ``p`` workers."""
    name = SERIAL_FRACTION
    for s, p in ((0.0, 2), (0.1, 2), (0.25, 4), (0.05, 64), (1.0, 8)):
        speedup = float(scaling_laws.amdahl_speedup([p], s)[0])
        with _refusing(name, _library("fit")):
            got = call(name, serial_fraction, p, speedup)
        what = f"s for p={p}, speedup={fmt(speedup)}"
        expect(name, got is not None, f"{what}: got None; did the function forget to `return`?")
        misreadings = (
            ((p - speedup) / (p - 1), "that is Gustafson's (p - S)/(p - 1). Amdahl's law to "
                                      "invert is S = 1/(s + (1 - s)/p)"),
            (1 - speedup / p, "that is 1 - S/p, the share of the workers' time left idle; "
                              "Amdahl's s is a share of the one-worker time: solve "
                              "S = 1/(s + (1 - s)/p) for s"),
            (1 / speedup - 1 / p, "the last step is missing: 1/S - 1/p = s·(1 - 1/p), so "
                                  "divide by (1 - 1/p)"),
        )
        if isinstance(got, (int, float, np.number)) and not isinstance(got, bool):
            for value, wrong in misreadings:
                if abs(float(got) - value) < 1e-9 and abs(value - s) > 1e-6:
                    raise AssertionError(f"{name}: {what} is {fmt(float(got))}, expected "
                                         f"{fmt(s)}; {wrong}")
        expect_close(name, got, s, what=what, rtol=1e-9, atol=1e-12)
    passed(name, "Amdahl's law inverted correctly")


def _grid_cases() -> list[tuple]:
    """(n_candidates, n_folds, n_workers, t, c): cases on which each misreading of the model
    gives another number. The grader's seed shifts the times, so a table of answers fails."""
    rng = np.random.default_rng(case_seed(3))
    t, c = rng.uniform(0.02, 0.2), rng.uniform(0.001, 0.01)
    return [(4, 5, 2, t, c),  # 20 tasks split evenly
            (1, 5, 2, t, c),  # 5 tasks on 2 workers: one worker does 3
            (3, 1, 4, t, c),  # fewer tasks than workers
            (7, 3, 4, t, 0.0),  # no dispatch: granularity alone
            (10, 10, 8, c / 2, c)]  # tasks shorter than their dispatch


def _misreadings(nc, nf, p, t, c) -> list[tuple[float, str]]:
    """(value, what was wrong) for each way the model can be misread."""
    n = nc * nf
    rounds = -(-n // p)
    return [
        (n / rounds, "dispatch is missing (or paid in the serial run too, which cancels it): "
                     "serially the tasks take n·t, with no pool; on p workers each task costs "
                     "t + c"),
        (n * t / (n / p * (t + c)), "the ceiling is missing: a worker runs whole tasks, "
                                    "⌈n/p⌉ of them, so n/p understates the busiest worker's share"),
        (n * t / (rounds * t + c), "dispatch is paid once per worker; it is paid per task"),
        (nc * t / (-(-nc // p) * (t + c)), "n counts candidates only; a search runs one task "
                                            "per candidate and fold"),
        (rounds * (t + c) / (n * t), "this is T(p)/T(1); the speedup is T(1)/T(p)"),
    ]


def check_grid_speedup(predict_grid_speedup, measurement=None) -> None:
    """``predict_grid_speedup(n_candidates, n_folds, n_workers, task_seconds,
    dispatch_seconds)`` -> the lesson's model, ``n·t / (⌈n/p⌉·(t + c))`` with n = candidates ×
    folds, graded exactly on cases where every misreading differs.

    ``measurement``: a ``speedup.GridTiming`` measured on this machine; then the check also
    prints your prediction for it beside the measured speedup, how far apart they are and the
    likely reasons. The measurement never decides the grade.
    """
    name = GRID_SPEEDUP
    for nc, nf, p, t, c in _grid_cases():
        what = (f"{nc} candidates × {nf} folds on {p} workers, t = {fmt(t)} s, "
                f"c = {fmt(c)} s")
        with _refusing(name, _library("grid")):
            got = call(name, predict_grid_speedup, nc, nf, p, t, c)
        expect(name, got is not None, f"{what}: got None; did the function forget to `return`?")
        want = speedup_model.predicted_speedup(nc * nf, p, t, c)
        if isinstance(got, (int, float, np.number)) and not isinstance(got, bool) \
                and np.isfinite(got) and abs(float(got) - want) > 1e-9 * want:
            for value, wrong in _misreadings(nc, nf, p, t, c):
                if abs(value - want) > 1e-6 * want and abs(float(got) - value) <= 1e-9 * abs(value):
                    raise AssertionError(f"{name}: {what}: got {fmt(float(got))}, expected "
                                         f"{fmt(want)}; {wrong}")
        expect_close(name, got, want, what=what, rtol=1e-9, atol=0)
    passed(name, "the model n·t / (⌈n/p⌉·(t + c)) predicted exactly")
    if measurement is not None:
        if not isinstance(measurement, speedup_model.GridTiming):
            raise TypeError(f"measurement: expected a GridTiming (speedup.measure_grid_speedup) "
                            f"or None, got {type(measurement).__name__}")
        m = measurement
        mine = call(name, predict_grid_speedup, m.n_candidates, m.n_folds, m.n_workers,
                    m.task_seconds, m.dispatch_seconds)
        print(f"your prediction for the search just measured: {float(mine):.2f}×")
        print(m.gap())
