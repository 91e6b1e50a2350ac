"""Amdahl's and Gustafson's laws, and fitting them to a measured speedup curve.

A program that takes ``T(1)`` seconds on one worker spends a share ``s`` of that time in work
that cannot be split (start-up, reading data, combining results, the scheduler) and ``1 - s``
in work that divides evenly over ``p`` workers.

* **Amdahl** (fixed problem, more workers: *strong scaling*)::

      T(p) = T(1) * (s + (1 - s) / p)        S(p) = T(1) / T(p) = 1 / (s + (1 - s) / p)

  The speedup can never pass ``1 / s``, however many workers there are.

* **Gustafson** (the problem grows with the workers: *weak scaling*). Measure ``s`` as the
  serial share of the time *on p workers*; one worker would need ``s + (1 - s) * p`` of that
  time, so the scaled speedup is::

      S_scaled(p) = s + (1 - s) * p = p - s * (p - 1)   (unbounded: bigger machines, bigger problems)

The two ``s`` are *not* the same number: Amdahl's is a share of the one-worker time,
Gustafson's a share of the p-worker time. One program with Amdahl fraction ``s`` has
Gustafson fraction ``s p / (1 + s (p - 1))`` at ``p`` workers (``gustafson_fraction``), so
comparing the two fits means converting one first.

Fitting. Speedups are ratios of times, and their noise grows with their size, so the fits
minimise the *relative* residuals ``(S_law(p) - S) / S``. The uncertainty of ``s`` comes from
the measurement itself: the curves time every configuration once per *round*, rounds
interleaved (so a burst of load from elsewhere hits every configuration alike), and ``s`` is
refitted on each round's speedups; the spread of those fits is the uncertainty.

What a small machine can tell. With 1 and 2 workers there is one informative point: ``s``
is *determined exactly* by it (zero residual by construction), so the data cannot test
whether either law describes the program, and the limit ``1/s`` is an extrapolation.
``ScalingFit.evidence`` says this in words computed from the fit itself.

    >>> curve = speedup_curve(lambda p: run_cv(n_jobs=p), [1, 2])
    >>> fit = fit_amdahl(curve.workers, curve.speedups, rounds=curve.round_speedups)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mlpar.core import limits, validation


def _numbers(name: str, values) -> None:
    # np.asarray(..., dtype=float) would quietly parse strings like "2": refuse them instead
    if isinstance(values, np.ndarray):
        validation.array(name, values)  # refuses broadcast views bigger than memory
    kind = np.asarray(values).dtype.kind if not isinstance(values, str) else "U"
    if kind not in "biuf":
        raise TypeError(f"{name}: expected numbers, got {type(values).__name__} of kind {kind!r}")


def _workers(name: str, workers) -> np.ndarray:
    _numbers(name, workers)
    p = np.asarray(workers, dtype=float)
    if p.ndim == 0:
        p = p.reshape(1)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D sequence of worker counts, got {workers!r}")
    if not np.all(np.isfinite(p)) or np.any(p < 1):
        raise ValueError(f"{name}: expected worker counts >= 1, got {p.tolist()}")
    return p


def _fraction(serial_fraction) -> float:
    return validation.number("serial_fraction", serial_fraction, low=0.0, high=1.0)

def amdahl_speedup(workers, serial_fraction: float) -> np.ndarray:
    """Amdahl's speedup ``1 / (s + (1 - s) / p)`` for each worker count ``p``."""
    p = _workers("workers", workers)
    s = _fraction(serial_fraction)
    return 1.0 / (s + (1.0 - s) / p)


def gustafson_speedup(workers, serial_fraction: float) -> np.ndarray:
    """Gustafson's scaled speedup ``s + (1 - s) p`` for each worker count ``p``."""
    p = _workers("workers", workers)
    s = _fraction(serial_fraction)
    return s + (1.0 - s) * p


def gustafson_fraction(amdahl_fraction: float, workers) -> np.ndarray:
    """Serial share of the p-worker time, ``s p / (1 + s (p - 1))``, of Amdahl fraction ``s``."""
    p = _workers("workers", workers)
    s = validation.number("amdahl_fraction", amdahl_fraction, low=0.0, high=1.0)
    return s * p / (1.0 + s * (p - 1.0))


def _speedups(workers: np.ndarray, speedups, name: str = "speedups") -> np.ndarray:
    _numbers(name, speedups)
    S = np.asarray(speedups, dtype=float).reshape(-1)
    if S.shape != workers.shape:
        raise ValueError(f"{name}: expected {workers.size} values to match workers, got {S.size}")
    if not np.all(np.isfinite(S)) or np.any(S <= 0):
        raise ValueError(f"{name}: expected positive finite values, got {S.tolist()}")
    return S


LAWS = {"amdahl": amdahl_speedup, "gustafson": gustafson_speedup}
#: Rounds below this give no usable uncertainty: with two, the spread has one degree of
#: freedom and a gap must exceed 12.7 spreads to be significant at 95 %.
MIN_ROUNDS_FOR_SPREAD = 3


def t_quantile(rounds: int, level: float = 0.95) -> float:
    """Student's t quantile for a two-sided ``level`` with ``rounds - 1`` degrees of freedom:
    how many spreads (standard deviations over rounds) a gap must span to count."""
    from scipy.stats import t

    rounds = validation.positive_int("rounds", rounds, maximum=1 << 20)
    level = validation.number("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    if rounds < 2:
        return float("inf")
    return float(t.ppf(0.5 + level / 2, rounds - 1))


@dataclass(frozen=True)
class ScalingFit:
    """A serial fraction fitted to measured speedups under one law ('amdahl' or 'gustafson').

    ``uncertainty``: standard deviation of ``s`` refitted on each measurement round (NaN when
    fewer than two rounds were given); ``rounds``: how many rounds that was.
    """

    law: str
    serial_fraction: float
    workers: tuple[float, ...]
    speedups: tuple[float, ...]
    uncertainty: float = float("nan")
    rounds: int = 0
    speedup_spread: tuple[float, ...] = ()

    def predict(self, workers) -> np.ndarray:
        """The fitted law's speedup at other worker counts (an extrapolation beyond the data)."""
        return LAWS[self.law](workers, self.serial_fraction)

    @property
    def residual(self) -> float:
        """Root-mean-square *relative* gap between measured and fitted speedups."""
        S = np.asarray(self.speedups)
        gap = (self.predict(self.workers) - S) / S
        return float(np.sqrt(np.mean(gap**2)))

    @property
    def informative_points(self) -> int:
        """Distinct worker counts above 1 (p = 1 says nothing about ``s``)."""
        return len({p for p in self.workers if p > 1})

    @property
    def dof(self) -> int:
        """Degrees of freedom left to test the law: informative points minus the one parameter."""
        return self.informative_points - 1

    @property
    def exactly_determined(self) -> bool:
        """True when one point fixes ``s``: the residual is zero by construction."""
        return self.dof == 0

    @property
    def limit(self) -> float:
        """Amdahl's ceiling ``1 / s`` (infinite for s = 0 or for Gustafson)."""
        if self.law == "gustafson" or self.serial_fraction == 0.0:
            return float("inf")
        return 1.0 / self.serial_fraction

    def evidence(self) -> list[str]:
        """What these data can and cannot tell, in sentences computed from the fit."""
        s, u = self.serial_fraction, self.uncertainty
        top = max(self.workers)
        S_top = self.speedups[self.workers.index(top)]
        spread = self.speedup_spread[self.workers.index(top)] if self.speedup_spread else np.nan
        lines = []
        if S_top <= 1.0:
            lines.append(
                f"cannot: estimate s at all. S({top:g}) = {S_top:.2f} is no speedup: the workers "
                "did not run in parallel (a busy machine, or tasks too short for the pool), so "
                "s sits at its bound and no law applies.")
        if self.exactly_determined:
            lines.append(
                f"cannot: test {self.law.title()}'s law. One point (p = {top:g}) fixes s exactly, "
                "so the residual is 0 by construction and any curve through that point fits "
                "as well.")
        else:
            lines.append(
                f"can: test the law with {self.dof} degree(s) of freedom; relative rms "
                f"residual {self.residual:.3g}.")
        if np.isnan(u):
            lines.append("cannot: give an uncertainty for s (fewer than 2 measurement rounds).")
        elif S_top > 1.0:
            rough = "" if self.rounds >= MIN_ROUNDS_FOR_SPREAD else "; too few for more than a rough guide"
            lines.append(f"can: s = {s:.3f} ± {u:.3f} (spread over {self.rounds} rounds{rough}).")
        if not np.isnan(spread) and spread > 0:
            gap = (top - S_top) / spread
            if self.rounds < MIN_ROUNDS_FOR_SPREAD:
                lines.append(
                    f"cannot: tell S({top:g}) = {S_top:.2f} from the ideal {top:g}: "
                    f"{self.rounds} rounds give no usable uncertainty (the spread has "
                    f"{self.rounds - 1} degree of freedom).")
            else:
                need = t_quantile(self.rounds)
                verdict = "below" if gap > need else "not told apart from"
                lines.append(
                    f"can: S({top:g}) = {S_top:.2f} ± {spread:.2f} is {verdict} the ideal "
                    f"{top:g}: the gap is {gap:.1f} spreads, and {self.rounds} rounds need "
                    f"{need:.2f} (Student's t, 95 %, {self.rounds - 1} dof, against one "
                    "round's spread rather than the mean's standard error: a cautious test).")
        if self.law == "amdahl" and 0 < s < 1:
            hi = 1.0 / max(s - u, 1e-12) if not np.isnan(u) else float("inf")
            lo = 1.0 / (s + u) if not np.isnan(u) else 1.0 / s
            lines.append(
                f"cannot: measure the ceiling 1/s = {1 / s:.3g}×; it extrapolates far past "
                f"p = {top:g} (from {lo:.3g}× to {hi:.3g}× within one uncertainty).")
        return lines

    def __repr__(self) -> str:
        u = "" if np.isnan(self.uncertainty) else f" ± {self.uncertainty:.4f}"
        how = ("exactly determined by 1 point" if self.exactly_determined
               else f"relative rms residual {self.residual:.3g}, {self.dof} dof")
        return f"ScalingFit({self.law}: serial fraction {self.serial_fraction:.4f}{u}, {how})"

    def plot(self, ax=None, up_to: int | None = None, label: str = "measured"):
        """Measured speedups (with their spread) as dots, the fitted law as a line, the ideal
        ``S = p`` dashed; integer worker counts on the x axis."""
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        top = max(self.workers) if up_to is None else validation.positive_int("up_to", up_to)
        grid = np.linspace(1, max(top, max(self.workers)), 200)
        ax.plot(grid, grid, "k--", lw=1, label="ideal S = p")
        u = "" if np.isnan(self.uncertainty) else f" ± {self.uncertainty:.3f}"
        if self.exactly_determined:  # one point fixes s: the line shows a choice, not a test
            ax.plot(grid, self.predict(grid), ":", label=f"{self.law}, s = "
                    f"{self.serial_fraction:.3f}{u} (one point fixes s; nothing tested)")
        else:
            ax.plot(grid, self.predict(grid), "-",
                    label=f"{self.law} fit, s = {self.serial_fraction:.3f}{u}")
        yerr = np.asarray(self.speedup_spread) if self.speedup_spread else None
        ax.errorbar(self.workers, self.speedups, yerr=yerr, fmt="o", capsize=3, label=label)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("workers p")
        ax.set_ylabel("speedup" if self.law == "amdahl" else "scaled speedup")
        ax.legend(fontsize=8)
        return ax


def _check_points(workers, speedups, name: str = "speedups"):
    p = _workers("workers", workers)
    S = _speedups(p, speedups, name)
    if not np.any(p > 1):
        raise ValueError(
            "workers: expected at least one worker count above 1 to fit a serial fraction"
        )
    return p, S


def _relative_fit(law: str, p: np.ndarray, S: np.ndarray) -> float:
    from scipy.optimize import minimize_scalar

    def cost(s):
        return float(np.sum(((LAWS[law](p, s) - S) / S) ** 2))

    best = minimize_scalar(cost, bounds=(0.0, 1.0), method="bounded",
                           options={"xatol": 1e-12})
    # the bounded search never evaluates the ends exactly; s = 0 and s = 1 are legal answers
    return float(min((best.x, 0.0, 1.0), key=cost))


def _fit(law: str, workers, speedups, rounds) -> ScalingFit:
    p, S = _check_points(workers, speedups,
                         "scaled_speedups" if law == "gustafson" else "speedups")
    s = _relative_fit(law, p, S)
    u, n_rounds, spread = float("nan"), 0, ()
    if rounds is not None:
        _numbers("rounds", rounds)
        R = np.asarray(rounds, dtype=float)
        if R.ndim != 2 or R.shape[1] != p.size:
            raise ValueError(f"rounds: expected an array of shape (n_rounds, {p.size}), "
                             f"got shape {R.shape}")
        if not np.all(np.isfinite(R)) or np.any(R <= 0):
            raise ValueError("rounds: expected positive finite speedups")
        n_rounds = R.shape[0]
        spread = tuple(np.std(R, axis=0, ddof=1).tolist()) if n_rounds > 1 else ()
        if n_rounds > 1:
            u = float(np.std([_relative_fit(law, p, r) for r in R], ddof=1))
    return ScalingFit(law, s, tuple(p.tolist()), tuple(S.tolist()), u, n_rounds, spread)


def fit_amdahl(workers, speedups, *, rounds=None) -> ScalingFit:
    """Serial fraction for Amdahl's law minimising the relative residuals ``(S_law - S)/S``.

    ``rounds`` (n_rounds, n_points): each round's own speedups; ``s`` is refitted on each and
    their standard deviation is the fit's uncertainty. With a single point above p = 1 the
    fit is exactly determined (the law, solved for s) and the residual is 0.
    """
    return _fit("amdahl", workers, speedups, rounds)


def fit_gustafson(workers, scaled_speedups, *, rounds=None) -> ScalingFit:
    """Serial fraction for Gustafson's law ``S = p - s (p - 1)``, relative residuals;
    ``rounds`` as in ``fit_amdahl``."""
    return _fit("gustafson", workers, scaled_speedups, rounds)


def synthetic_times(
    workers, serial_fraction: float, *, t1: float = 1.0, noise: float = 0.0, seed: int = 0
) -> np.ndarray:
    """Times an Amdahl machine would report: ``t1 (s + (1 - s)/p)`` times ``(1 + noise·N(0,1))``.

    A *simulation*, used to test the fit and to draw what a bigger machine would do once ``s``
    has been measured on this one.
    """
    p = _workers("workers", workers)
    s = _fraction(serial_fraction)
    t1 = validation.positive("t1", t1)
    noise = validation.number("noise", noise, low=0.0, high=0.5)
    rng = np.random.default_rng(validation.seed("seed", seed))
    return t1 * (s + (1.0 - s) / p) * (1.0 + noise * rng.standard_normal(p.size))


@dataclass(frozen=True)
class SpeedupCurve:
    """Wall times of one job at several worker counts, ``rounds`` samples each.

    ``samples[r][k]``: round ``r``'s time at ``workers[k]``; ``times`` the best of each column.
    ``serial_samples`` is set for a scaled (Gustafson) curve: one worker doing the same grown
    job, timed in the same round. Without it the speedup is relative to the first point.
    """

    workers: tuple[int, ...]
    samples: tuple[tuple[float, ...], ...]
    serial_samples: tuple[tuple[float, ...], ...] | None = None

    @property
    def times(self) -> tuple[float, ...]:
        return tuple(np.min(self.samples, axis=0).tolist())

    @property
    def serial_times(self) -> tuple[float, ...] | None:
        if self.serial_samples is None:
            return None
        return tuple(np.min(self.serial_samples, axis=0).tolist())

    @property
    def speedups(self) -> np.ndarray:
        """From the best times: strong against the first point, scaled against one worker."""
        t = np.asarray(self.times)
        base = t[0] if self.serial_times is None else np.asarray(self.serial_times)
        return base / t

    @property
    def round_speedups(self) -> np.ndarray:
        """(n_rounds, n_points): each round's speedups, from times taken in that round only."""
        t = np.asarray(self.samples)
        base = t[:, :1] if self.serial_samples is None else np.asarray(self.serial_samples)
        return base / t

    def __repr__(self) -> str:
        pairs = ", ".join(
            f"p={p}: {t * 1e3:.1f} ms" for p, t in zip(self.workers, self.times, strict=True)
        )
        if self.serial_samples is None:
            return f"SpeedupCurve({pairs}; best of {len(self.samples)} rounds)"
        # a scaled curve: each speedup divides the grown job's one-worker time by its p-worker
        # time, so both are shown; and the weak-scaling efficiency, the base job's time over
        # the grown job's on p workers (1 when growing the job and the workers costs nothing)
        grown = ", ".join(f"p={p}: {t * 1e3:.1f} ms" for p, t in
                          zip(self.workers, self.serial_times, strict=True) if p != 1)
        base = self.times[0] if self.workers[0] == 1 else float("nan")
        weak = ", ".join(f"p={p}: {base / t:.2f}" for p, t in
                         zip(self.workers, self.times, strict=True) if p != 1)
        return (f"SpeedupCurve(scaled {pairs}; the grown job on 1 worker {grown}; weak-scaling "
                f"efficiency {weak}; best of {len(self.samples)} rounds)")


#: The most worker counts one scaling curve measures (each is timed ``repeat`` times).
MAX_POINTS = 64
#: The most rounds of a scaling curve: each round runs the whole job once per worker count.
MAX_CURVE_ROUNDS = 1000


def _worker_list(workers) -> list[int]:
    if isinstance(workers, (str, bytes)) or not hasattr(workers, "__iter__"):
        raise TypeError(f"workers: expected a sequence of worker counts, got {type(workers).__name__}")
    if hasattr(workers, "__len__") and len(workers) > MAX_POINTS:
        raise ValueError(f"workers: expected at most {MAX_POINTS} worker counts, got {len(workers)}")
    ps = [limits.workers("workers", p) for p in workers]
    if not ps:
        raise ValueError("workers: expected at least one worker count, got an empty sequence")
    return ps


def _timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def _rounds(calls: list, repeat: int, progress: bool, desc: str,
            warm_ups: list | None = None) -> np.ndarray:
    # Warm-up: every configuration once, untimed (pools started, code compiled, caches
    # touched), or the cheaper ``warm_ups`` the caller gave; then ``repeat`` rounds, each
    # timing every configuration once, interleaved.
    for call in calls if warm_ups is None else warm_ups:
        call()
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=repeat * len(calls), desc=desc)
    out = np.empty((repeat, len(calls)))
    for r in range(repeat):
        for k, call in enumerate(calls):
            out[r, k] = _timed(call)
            if progress:
                bar.update()
    if progress:
        bar.close()
    return out


def _warm_ups(warm_up, ps: list[int]) -> list | None:
    """One untimed ``warm_up(p)`` per distinct worker count, or None (warm up on ``run``)."""
    if warm_up is None:
        return None
    validation.callable_("warm_up", warm_up)
    return [lambda p=p: warm_up(p) for p in dict.fromkeys(ps)]


def speedup_curve(
    run: Callable[[int], object], workers: Sequence[int], *, repeat: int = 3,
    progress: bool = False, warm_up: Callable[[int], object] | None = None,
) -> SpeedupCurve:
    """Strong scaling: time ``run(p)`` (the whole fixed-size job on ``p`` workers) for each
    ``p`` in ``workers``, in ``repeat`` interleaved rounds after one untimed warm-up of each.
    Put ``p = 1`` first.

    ``warm_up``: called as ``warm_up(p)`` once per worker count instead of the untimed
    ``run(p)``; a job just big enough to start a pool of ``p`` workers and give each a task
    warms it as well, for a fraction of a whole job's time."""
    validation.callable_("run", run)
    repeat = validation.positive_int("repeat", repeat, maximum=MAX_CURVE_ROUNDS)
    progress = validation.flag("progress", progress)
    ps = _worker_list(workers)
    samples = _rounds([lambda p=p: run(p) for p in ps], repeat, progress, "strong scaling",
                      _warm_ups(warm_up, ps))
    return SpeedupCurve(tuple(ps), tuple(map(tuple, samples.tolist())))


def scaled_speedup_curve(
    run: Callable[[int, int], object], workers: Sequence[int], *, repeat: int = 3,
    progress: bool = False, warm_up: Callable[[int], object] | None = None,
) -> SpeedupCurve:
    """Weak scaling: the problem grows with the workers.

    ``run(n_workers, scale)`` does ``scale`` units of work on ``n_workers`` workers. Each
    round times ``run(p, p)`` and ``run(1, p)`` for every ``p``; their ratio, within one
    round, is the scaled speedup Gustafson's law describes (exactly 1 at ``p = 1``, where the
    two runs are one call). ``warm_up(p)``, as in ``speedup_curve``, replaces the untimed
    warm-up calls (one per worker count, 1 included).
    """
    validation.callable_("run", run)
    repeat = validation.positive_int("repeat", repeat, maximum=MAX_CURVE_ROUNDS)
    progress = validation.flag("progress", progress)
    ps = _worker_list(workers)
    calls = [lambda p=p: run(p, p) for p in ps]
    serial_at = [k for k, p in enumerate(ps) if p != 1]
    calls += [lambda p=ps[k]: run(1, p) for k in serial_at]
    samples = _rounds(calls, repeat, progress, "scaled speedup", _warm_ups(warm_up, [1, *ps]))
    parallel = samples[:, : len(ps)]
    serial = parallel.copy()  # at p = 1 both runs are the same call: reuse it
    serial[:, serial_at] = samples[:, len(ps):]
    return SpeedupCurve(tuple(ps), tuple(map(tuple, parallel.tolist())),
                        tuple(map(tuple, serial.tolist())))


def agreement(amdahl: ScalingFit, gustafson: ScalingFit) -> str:
    """Do a strong-scaling fit and a scaled-speedup fit describe one program? In words.

    Amdahl's ``s`` is converted into Gustafson's terms at the largest worker count both
    measured (``gustafson_fraction``), with its uncertainty carried through the conversion,
    and compared with Gustafson's own fit: they agree when the two ranges of one uncertainty
    overlap. When they do not, the two experiments did not see the same program and machine.
    """
    for name, fit, law in (("amdahl", amdahl, "amdahl"), ("gustafson", gustafson, "gustafson")):
        if not isinstance(fit, ScalingFit) or fit.law != law:
            raise TypeError(f"{name}: expected a ScalingFit of {law}'s law, got {fit!r:.60}")
    common = sorted(set(amdahl.workers) & set(gustafson.workers) - {1})
    if not common:
        return "cannot compare: the two experiments share no worker count above 1"
    p = common[-1]
    flat = [f"{fit.law.title()}'s S({p:g}) = {fit.speedups[fit.workers.index(p)]:.2f}"
            for fit in (amdahl, gustafson) if fit.speedups[fit.workers.index(p)] <= 1.0]
    if flat:  # s at its bound 1 in a run without speedup: equal by construction, not agreement
        return (f"cannot compare: {' and '.join(flat)} is no speedup, so s sits at its bound 1 "
                "there and any agreement would be by construction")
    s, u = amdahl.serial_fraction, amdahl.uncertainty
    converted = float(gustafson_fraction(s, [p])[0])
    few = min(amdahl.rounds, gustafson.rounds)
    if 1 < few < MIN_ROUNDS_FOR_SPREAD:
        return (f"Amdahl's s in Gustafson's terms at p = {p:g}: {converted:.3f}; Gustafson's fit: "
                f"{gustafson.serial_fraction:.3f}; cannot judge agreement: {few} rounds give no "
                "usable uncertainty")
    if not (np.isfinite(u) and np.isfinite(gustafson.uncertainty)):
        return (f"Amdahl's s in Gustafson's terms at p = {p:g}: {converted:.3f}; Gustafson's fit: "
                f"{gustafson.serial_fraction:.3f}; cannot judge agreement without two rounds each")
    lo, hi = (float(gustafson_fraction(np.clip(v, 0.0, 1.0), [p])[0]) for v in (s - u, s + u))
    g, gu = gustafson.serial_fraction, gustafson.uncertainty
    head = (f"Amdahl's s in Gustafson's terms at p = {p:g}: {converted:.3f} ({lo:.3f} to {hi:.3f}); "
            f"Gustafson's own fit: {g:.3f} ± {gu:.3f}")
    if hi >= g - gu and lo <= g + gu:
        return head + ": they agree within one uncertainty"
    return (head + ": they DISAGREE. The two experiments did not see the same program and "
            "machine: load from other programs changed between them, or the grown job's fits "
            "cost more (or less) than the fixed job's, so the laws' single s does not fit both")
