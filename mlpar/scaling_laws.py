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

      S_scaled(p) = s + (1 - s) * p = p - s * (p - 1)

  which grows without bound: bigger machines are for bigger problems.

Both laws are linear in ``s`` after a change of variables, so the serial fraction that best
fits a measured curve is a one-line least-squares solution (see ``fit_amdahl`` and
``fit_gustafson``); no iterative optimiser is needed.

    >>> curve = speedup_curve(lambda p: run_cv(n_jobs=p), [1, 2])
    >>> fit = fit_amdahl(curve.workers, curve.speedups); fit.plot()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from . import timing, validation


def _workers(name: str, workers) -> np.ndarray:
    p = np.asarray(workers, dtype=float)
    if p.ndim == 0:
        p = p.reshape(1)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(
            f"{name}: expected a non-empty 1-D sequence of worker counts, got {workers!r}"
        )
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


def _speedups(workers: np.ndarray, speedups) -> np.ndarray:
    S = np.asarray(speedups, dtype=float).reshape(-1)
    if S.shape != workers.shape:
        raise ValueError(f"speedups: expected {workers.size} values to match workers, got {S.size}")
    if not np.all(np.isfinite(S)) or np.any(S <= 0):
        raise ValueError(f"speedups: expected positive finite values, got {S.tolist()}")
    return S


@dataclass(frozen=True)
class ScalingFit:
    """A serial fraction fitted to measured speedups under one law ('amdahl' or 'gustafson')."""

    law: str
    serial_fraction: float
    workers: tuple[float, ...]
    speedups: tuple[float, ...]

    def predict(self, workers) -> np.ndarray:
        """The fitted law's speedup at other worker counts (an extrapolation beyond the data)."""
        law = amdahl_speedup if self.law == "amdahl" else gustafson_speedup
        return law(workers, self.serial_fraction)

    @property
    def residual(self) -> float:
        """Root-mean-square gap between measured and fitted speedups."""
        gap = np.asarray(self.speedups) - self.predict(self.workers)
        return float(np.sqrt(np.mean(gap**2)))

    @property
    def limit(self) -> float:
        """Amdahl's ceiling ``1 / s`` (infinite for s = 0 or for Gustafson)."""
        if self.law == "gustafson" or self.serial_fraction == 0.0:
            return float("inf")
        return 1.0 / self.serial_fraction

    def __repr__(self) -> str:
        return (
            f"ScalingFit({self.law}: serial fraction {self.serial_fraction:.4f}, "
            f"rms residual {self.residual:.3g}, from {len(self.workers)} points)"
        )

    def plot(self, ax=None, up_to: int | None = None, label: str = "measured"):
        """Measured speedups as dots, the fitted law as a line, the ideal ``S = p`` dashed."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        top = max(self.workers) if up_to is None else validation.positive_int("up_to", up_to)
        grid = np.linspace(1, max(top, max(self.workers)), 200)
        ax.plot(grid, grid, "k--", lw=1, label="ideal S = p")
        ax.plot(
            grid, self.predict(grid), "-", label=f"{self.law} fit, s = {self.serial_fraction:.3f}"
        )
        ax.plot(self.workers, self.speedups, "o", label=label)
        ax.set_xlabel("workers p")
        ax.set_ylabel("speedup" if self.law == "amdahl" else "scaled speedup")
        ax.legend(fontsize=8)
        return ax


def fit_amdahl(workers, speedups) -> ScalingFit:
    """Least-squares serial fraction for Amdahl's law.

    Amdahl's law inverted is linear in ``s``::

        1/S - 1/p = s * (1 - 1/p)          i.e.  b = s * a

    so the least-squares ``s`` over the points is ``sum(a b) / sum(a a)``, clipped to [0, 1].
    Points at ``p = 1`` carry no information (a = 0) and drop out on their own. The fit is
    made on ``1/S`` (time per unit of work), where measurement noise is roughly uniform.
    """
    p = _workers("workers", workers)
    S = _speedups(p, speedups)
    a = 1.0 - 1.0 / p
    b = 1.0 / S - 1.0 / p
    if not np.any(a > 0):
        raise ValueError(
            "workers: expected at least one worker count above 1 to fit a serial fraction"
        )
    s = float(np.clip(np.dot(a, b) / np.dot(a, a), 0.0, 1.0))
    return ScalingFit("amdahl", s, tuple(p.tolist()), tuple(S.tolist()))


def fit_gustafson(workers, scaled_speedups) -> ScalingFit:
    """Least-squares serial fraction for Gustafson: ``p - S = s (p - 1)``, clipped to [0, 1]."""
    p = _workers("workers", workers)
    S = _speedups(p, scaled_speedups)
    a = p - 1.0
    if not np.any(a > 0):
        raise ValueError(
            "workers: expected at least one worker count above 1 to fit a serial fraction"
        )
    s = float(np.clip(np.dot(a, p - S) / np.dot(a, a), 0.0, 1.0))
    return ScalingFit("gustafson", s, tuple(p.tolist()), tuple(S.tolist()))


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
    """Best-of-``repeat`` wall times of one job at several worker counts.

    ``serial_times`` is set for a weak-scaling (Gustafson) curve: the time one worker needs
    for the same grown problem. Without it the speedup is relative to the first worker count.
    """

    workers: tuple[int, ...]
    times: tuple[float, ...]
    serial_times: tuple[float, ...] | None = None

    @property
    def speedups(self) -> np.ndarray:
        """``T_1 / T_p``: strong scaling against the first point, weak against ``serial_times``."""
        t = np.asarray(self.times)
        base = t[0] if self.serial_times is None else np.asarray(self.serial_times)
        return base / t

    def __repr__(self) -> str:
        pairs = ", ".join(
            f"p={p}: {t * 1e3:.1f} ms" for p, t in zip(self.workers, self.times, strict=True)
        )
        kind = "" if self.serial_times is None else "scaled "
        return f"SpeedupCurve({kind}{pairs})"


def _worker_list(workers) -> list[int]:
    ps = [validation.positive_int("workers", p) for p in workers]
    if not ps:
        raise ValueError("workers: expected at least one worker count, got an empty sequence")
    return ps


def speedup_curve(
    run: Callable[[int], object], workers: Sequence[int], *, repeat: int = 3
) -> SpeedupCurve:
    """Strong scaling: time ``run(p)`` for each ``p`` in ``workers``, best of ``repeat`` runs.

    ``run`` does the whole fixed-size job with ``p`` workers (start-up included, if that is
    part of what the serial fraction should capture). Put ``p = 1`` first.
    """
    validation.callable_("run", run)
    repeat = validation.positive_int("repeat", repeat)
    ps = _worker_list(workers)
    return SpeedupCurve(tuple(ps), tuple(timing.best_of(lambda p=p: run(p), repeat) for p in ps))


def scaled_speedup_curve(
    run: Callable[[int, int], object], workers: Sequence[int], *, repeat: int = 3
) -> SpeedupCurve:
    """Weak scaling: the problem grows with the workers.

    ``run(n_workers, scale)`` does ``scale`` units of work on ``n_workers`` workers. For each
    ``p`` this times ``run(p, p)`` and ``run(1, p)``; their ratio is the scaled speedup that
    Gustafson's law describes (exactly 1 at ``p = 1``, where the two runs are one call).
    """
    validation.callable_("run", run)
    repeat = validation.positive_int("repeat", repeat)
    ps = _worker_list(workers)
    parallel = tuple(timing.best_of(lambda p=p: run(p, p), repeat) for p in ps)
    # at p = 1 both runs are the same call: reuse it, so the curve starts at exactly 1
    serial = tuple(
        t if p == 1 else timing.best_of(lambda p=p: run(1, p), repeat) for p, t in zip(ps, parallel)
    )
    return SpeedupCurve(tuple(ps), parallel, serial)
