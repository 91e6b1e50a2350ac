"""A lesson's claim, checked by a measurement on this machine: held or not, and why not.

A sentence such as "threads speed up compute-bound work at least 1.7× on 2 cores" is only true
on some machines. So a lesson never asserts it: it measures the figure, compares it with the
threshold and prints one line — ✓ or ✗, the figure, the threshold — and, when the claim did
not hold, the likely cause on *this* machine (another program using the cores, one core, no
TBB). ``python -m mlpar.bench claims`` runs every lesson's claims the same way.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass

import numpy as np

from mlpar.core import validation


@dataclass(frozen=True)
class Claim:
    """One checked claim. ``held`` is None when the figure could not be measured (NaN)."""

    lesson: str
    statement: str
    value: float
    threshold: float
    comparison: str  # ">=" or "<="
    unit: str = ""
    why_not: str = ""
    #: Why the claim does not apply on this machine (its precondition failed), or "".
    not_applicable: str = ""

    @property
    def held(self) -> bool | None:
        """True or False when measured; None when it does not apply here or was not measured."""
        if self.not_applicable or math.isnan(self.value):
            return None
        return self.value >= self.threshold if self.comparison == ">=" else self.value <= self.threshold

    def __repr__(self) -> str:
        needs = f"(needs {self.comparison} {self.threshold:g}{self.unit})"
        if self.held is None:
            reason = self.not_applicable or self.why_not or "could not be measured here"
            return f"n/a [{self.lesson}] {self.statement} {needs}: {reason}"
        mark = "✓" if self.held else "✗"
        line = f"{mark} [{self.lesson}] {self.statement}: {self.value:.3g}{self.unit} {needs}"
        if self.held is False and self.why_not:
            line += f"\n    likely cause: {self.why_not}"
        return line


def ratio(numerator, denominator, *, names=("numerator", "denominator")) -> float | None:
    """numerator / denominator when both are positive finite numbers, else None (not measured).

    A figure that is not a number at all (a str, a list) is a bug, not a missing measurement:
    ``TypeError`` naming it by ``names``.
    """
    for name, v in zip(names, (numerator, denominator), strict=True):
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise TypeError(f"{name}: expected a measured number or None, got {type(v).__name__}")
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
               and v > 0 for v in (numerator, denominator)):
        return None
    return float(numerator) / float(denominator)


def check(lesson: str, statement: str, value, *, at_least=None, at_most=None, unit: str = "",
          cause: str = "", not_applicable: str = "") -> Claim:
    """Build a ``Claim`` for ``value`` against one threshold (``at_least`` or ``at_most``).

    ``cause`` names what usually breaks this claim; machine-wide causes (load above the
    usable cores, a single core) are added by :func:`machine_causes`.
    ``not_applicable``: the reason the claim's precondition fails on this machine (one usable
    core, a cache too large to exceed within the memory budget, no GPU); the claim then prints
    ``n/a: reason`` and is neither held nor broken. Use :func:`precondition` to build it.
    """
    validation.choice("lesson", lesson, LESSONS)
    for name, text in (("statement", statement), ("unit", unit), ("cause", cause),
                       ("not_applicable", not_applicable)):
        if not isinstance(text, str):
            raise TypeError(f"{name}: expected a str, got {type(text).__name__}")
    if not_applicable:
        threshold = validation.number("at_least" if at_most is None else "at_most",
                                      at_least if at_most is None else at_most)
        return Claim(lesson, statement, float("nan"), threshold, ">=" if at_most is None else "<=",
                     unit, not_applicable=not_applicable)
    if (at_least is None) == (at_most is None):
        raise ValueError("at_least/at_most: expected exactly one threshold, got "
                         f"at_least={at_least!r}, at_most={at_most!r}")
    threshold = validation.number("at_least" if at_most is None else "at_most",
                                  at_least if at_most is None else at_most)
    if value is not None and not isinstance(value, numbers.Real):
        raise TypeError(f"value: expected a measured number or None (not measured), got "
                        f"{type(value).__name__}")
    value = float("nan") if value is None else float(value)
    claim = Claim(lesson, statement, value, threshold, ">=" if at_most is None else "<=", unit)
    if claim.held is not True:
        # the machine's state explains a failed measurement, not one that could not be made
        reasons = [r for r in (cause, machine_causes() if claim.held is False else "") if r]
        claim = Claim(lesson, statement, value, threshold, claim.comparison, unit, "; ".join(reasons))
    return claim


def precondition(*, cores: int | None = None, gpu: bool = False, llc_multiple_fits: float | None = None,
                 memory_budget: float = 0.25, blas_threads: int | None = None) -> str:
    """The reason a claim does not apply here, or "" when it does.

    ``cores``: usable cores the claim needs. ``gpu``: it needs a CUDA device.
    ``llc_multiple_fits``: it needs arrays of that many last-level caches within
    ``memory_budget`` of the available memory (unknown cache size: assumed to apply).
    ``blas_threads``: it needs numpy's BLAS to run at least that many threads (no BLAS found
    by threadpoolctl: assumed to apply; ``OPENBLAS_NUM_THREADS=1`` and the like do not).
    """
    from mlpar.core import environment

    gpu = validation.flag("gpu", gpu)
    memory_budget = validation.number("memory_budget", memory_budget, low=0.0, high=1.0,
                                      low_open=True)
    if llc_multiple_fits is not None:
        llc_multiple_fits = validation.number("llc_multiple_fits", llc_multiple_fits, low=0.0,
                                              high=1e6, low_open=True)
    if cores is not None:
        cores = validation.positive_int("cores", cores, maximum=1 << 16)
        have = environment.usable_cores()
        if have < cores:
            return f"needs at least {cores} usable cores, this process may use {have}"
    if blas_threads is not None:
        blas_threads = validation.positive_int("blas_threads", blas_threads, maximum=1 << 16)
        found = [lib["threads"] for lib in environment.blas_info() if lib["threads"]]
        if found and max(found) < blas_threads:
            return (f"needs BLAS with at least {blas_threads} threads, numpy's BLAS runs "
                    f"{max(found)} here (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MKL_NUM_THREADS "
                    "set, or a threadpool limit in force)")
    if gpu and not environment.gpu_devices():
        return "no GPU"
    if llc_multiple_fits is not None:
        llc = environment.last_level_cache_bytes()
        budget = memory_budget * environment.available_memory_bytes()
        if llc is not None and llc_multiple_fits * llc > budget:
            return (f"arrays of {llc_multiple_fits:g}× the last-level cache "
                    f"({llc_multiple_fits * llc / 2**20:,.0f} MiB) exceed {memory_budget:.0%} of "
                    f"the free memory ({budget / 2**20:,.0f} MiB): memory bandwidth cannot be told "
                    "apart from cache bandwidth here")
    return ""


@dataclass(frozen=True)
class Rounds:
    """A ratio measured in rounds until its median is told apart from a threshold.

    ``value`` is the median of ``ratios``; ``low``–``high`` a distribution-free interval that
    holds the true median with probability at least ``coverage`` (two order statistics of the
    sorted rounds, from the binomial distribution: no assumption about the noise's shape).
    ``decided`` says whether that interval lies on one side of the threshold.
    """

    ratios: tuple
    low: float
    high: float
    coverage: float
    decided: bool

    @property
    def value(self) -> float:
        return float(np.median(self.ratios))

    def describe(self) -> str:
        return (f"median of {len(self.ratios)} interleaved rounds, {self.coverage:.0%} interval "
                f"{self.low:.3g}–{self.high:.3g}")


def median_interval(ratios, coverage: float = 0.95) -> tuple[float, float, float]:
    """(low, high, achieved coverage): the widest-needed pair of order statistics of
    ``ratios`` that contains the median of their distribution with at least ``coverage``.

    With 5 rounds the best there is, the smallest and largest, covers 94%; 9 rounds give the
    2nd smallest and 2nd largest at 96%, 13 rounds the 3rd at 98%; fewer than 5 cover less.
    """
    from math import comb

    x = np.sort(np.asarray(ratios, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("ratios: expected at least one measured round, got none")

    def covered(k):  # P(x[k-1] <= median <= x[n-k]) = 1 - 2 P(fewer than k rounds below it)
        return 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k + 1 <= (n + 1) // 2 and covered(k + 1) >= coverage:
        k += 1
    return float(x[k - 1]), float(x[n - k]), covered(k)


def measure_rounds(one_round, *, at_least=None, at_most=None, min_rounds: int = 5,
                   max_rounds: int = 15, budget_s: float = 30.0,
                   coverage: float = 0.9) -> Rounds:
    """Call ``one_round()`` (it returns one round's ratio) until the interval of the median
    lies on one side of the threshold, or ``max_rounds`` or ``budget_s`` is reached.

    A ratio of two runs taken back to back, in the same round, cancels what the two share (a
    slow minute of the host); the median over rounds ignores a round that a burst of load
    spoiled. Stopping as soon as the interval clears the threshold spends rounds only where the
    verdict needs them; a claim still undecided at the end says so instead of giving a verdict
    that the next run might reverse.
    """
    import time

    validation.callable_("one_round", one_round)
    if (at_least is None) == (at_most is None):
        raise ValueError("at_least/at_most: expected exactly one threshold, got "
                         f"at_least={at_least!r}, at_most={at_most!r}")
    threshold = validation.number("at_least" if at_most is None else "at_most",
                                  at_least if at_most is None else at_most)
    min_rounds = validation.positive_int("min_rounds", min_rounds, maximum=1000)
    max_rounds = validation.positive_int("max_rounds", max_rounds, maximum=1000)
    if max_rounds < min_rounds:
        raise ValueError(f"max_rounds: expected at least min_rounds={min_rounds}, got {max_rounds}")
    budget_s = validation.number("budget_s", budget_s, low=0.0, high=3600.0)
    coverage = validation.number("coverage", coverage, low=0.5, high=1.0, high_open=True)
    ratios: list[float] = []
    start = time.perf_counter()
    while True:
        r = one_round()
        if isinstance(r, bool) or not isinstance(r, numbers.Real):
            raise TypeError(f"one_round: expected it to return a number, got {type(r).__name__}")
        ratios.append(float(r) if math.isfinite(r) else float("nan"))
        finite = [x for x in ratios if not math.isnan(x)]
        if len(ratios) < min_rounds or not finite:
            if len(ratios) >= max_rounds:  # no round could be measured at all
                return Rounds((), math.nan, math.nan, 0.0, False)
            continue
        low, high, got = median_interval(finite, coverage)
        if at_most is None:
            clear = low >= threshold or high < threshold
        else:
            clear = high <= threshold or low > threshold
        decided = got >= coverage and clear
        if decided or len(ratios) >= max_rounds or time.perf_counter() - start > budget_s:
            return Rounds(tuple(finite), low, high, got, decided)


def check_rounds(lesson: str, statement: str, rounds: Rounds, *, at_least=None, at_most=None,
                 unit: str = "", cause: str = "") -> Claim:
    """The claim for a ``measure_rounds`` result: a verdict from the median when the interval
    cleared the threshold, otherwise ``n/a`` saying that the noise here is too large to tell."""
    if not isinstance(rounds, Rounds):
        raise TypeError(f"rounds: expected the Rounds that measure_rounds returns, got "
                        f"{type(rounds).__name__}")
    if not rounds.ratios:
        return check(lesson, statement, None, at_least=at_least, at_most=at_most, unit=unit,
                     cause=cause or "no round could be measured")
    statement = f"{statement} ({rounds.describe()}{unit})"
    if rounds.decided:
        return check(lesson, statement, rounds.value, at_least=at_least, at_most=at_most,
                     unit=unit, cause=cause)
    threshold = at_least if at_most is None else at_most
    return check(lesson, statement, None, at_least=at_least, at_most=at_most, unit=unit,
                 not_applicable=(
                     f"undecided here: after {len(rounds.ratios)} rounds (single rounds "
                     f"{min(rounds.ratios):.3g}–{max(rounds.ratios):.3g}{unit}) the interval of "
                     f"the median still contains {threshold:g}{unit}: this machine's run-to-run "
                     "noise is larger than the effect's distance from the threshold"))


LESSONS = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10")


def machine_causes() -> str:
    """What on this machine commonly spoils a parallel measurement, or '' if nothing does."""
    from mlpar.core import environment

    cores = environment.usable_cores()
    found = []
    if cores < 2:
        found.append(f"this process may use {cores} core; parallel speedups need at least 2")
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        load = 0.0
    if load > cores:
        found.append(f"the machine is busy (load average {load:.1f} above {cores} usable cores)")
    share = _core_share()
    if share < CORE_SHARE_WARNING:  # False for NaN: not measured
        found.append(f"with all {cores} cores busy, the slowest ran at {share:.0%} of one core "
                     "alone a moment ago: the host shares this machine's cores with others, "
                     "which no load average shows")
    return "; ".join(found)


#: Below this share of a full core (``environment.slowest_core_share``) a core is shared.
CORE_SHARE_WARNING = 0.85
_SHARE: dict = {}


def _core_share() -> float:
    """``environment.slowest_core_share()``, measured at most once a minute (it
    starts a process per core and keeps them busy twice for a quarter of a second)."""
    import time

    from mlpar.core import environment

    if time.monotonic() - _SHARE.get("at", -1e9) > 60:
        try:
            share = environment.slowest_core_share()
        except Exception:  # noqa: BLE001 - a probe that cannot start must not break a claim
            # (e.g. spawned processes cannot start from a script read from stdin)
            share = float("nan")
        _SHARE.update(at=time.monotonic(), share=share)
    return _SHARE["share"]
