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
    def undecided(self) -> bool:
        """True when rounds could not tell the figure from the threshold (``check_rounds``)."""
        return self.not_applicable.startswith(UNDECIDED)

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
            if self.undecided and math.isfinite(self.value):
                needs = needs[:-1] + f"; median {self.value:.3g}{self.unit})"
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


#: How the reason of a claim whose rounds could not decide it begins (``check_rounds``).
UNDECIDED = "undecided here"


@dataclass(frozen=True)
class Rounds:
    """A figure measured in rounds until its median is told apart from a threshold.

    ``ratios`` are the rounds' figures (rounds that could not be measured, NaN, are left out
    and counted in ``dropped``); ``low``–``high`` is a distribution-free interval of their
    median (two order statistics, ``median_interval``) at the last look, ``coverage`` its
    coverage. ``comparison`` is ">=" or "<=" against ``threshold``, or "factor": the median
    must lie within a factor ``threshold`` of 1, either way. ``decided`` says whether the
    interval ended on one side.
    """

    ratios: tuple
    low: float
    high: float
    coverage: float
    decided: bool
    threshold: float
    comparison: str
    dropped: int = 0

    @property
    def value(self) -> float:
        return float(np.median(self.ratios)) if self.ratios else math.nan

    def describe(self) -> str:
        dropped = f"; {self.dropped} could not be measured" if self.dropped else ""
        return (f"median of {len(self.ratios)} interleaved rounds, {self.coverage:.0%} interval "
                f"{self.low:.3g}–{self.high:.3g}{dropped}")


def median_interval(ratios, coverage: float = 0.95) -> tuple[float, float, float]:
    """(low, high, achieved coverage): the narrowest pair of order statistics of ``ratios``,
    x[k] and x[n+1-k], that holds the median of their distribution with at least ``coverage``
    (their coverage is 1 − 2·P(Binomial(n, ½) < k)); with too few rounds for that, the whole
    range and the lower coverage it achieves.

    At 95%: 5 rounds give only the whole range at 94%; 6 give it at 97%; 9 the 2nd smallest
    and 2nd largest at 96%; 15 the 4th at 96%. The rounds must be alike and independent (the
    same measurement repeated); nothing is assumed about the shape of their noise.
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


def _side(low: float, high: float, threshold: float, comparison: str) -> bool | None:
    """True: the interval lies where the claim holds; False: where it fails; None: both."""
    if comparison == ">=":
        return True if low >= threshold else False if high < threshold else None
    if comparison == "<=":
        return True if high <= threshold else False if low > threshold else None
    inside = 1 / threshold <= low and high <= threshold
    return True if inside else False if high < 1 / threshold or low > threshold else None


def measure_rounds(one_round, *, at_least=None, at_most=None, off_by_at_most=None,
                   min_rounds: int = 5, max_rounds: int = 15, budget_s: float = 30.0,
                   coverage: float = 0.95) -> Rounds:
    """Call ``one_round()`` (it returns one round's figure) until the interval of the median
    lies on one side of the threshold, or ``max_rounds`` or ``budget_s`` is reached.

    One threshold: ``at_least``, ``at_most``, or ``off_by_at_most=t`` (the median must lie
    between 1/t and t: a measured/predicted ratio off by at most a factor t either way).
    A figure that is a ratio of two runs taken back to back, in the same round, cancels what the
    two share (a slow minute of the host); the median ignores a round a burst of load spoiled.

    The rule looks after every round from ``min_rounds`` on and stops at the first interval
    that clears the threshold. Looking many times makes a wrong verdict likelier than one look
    at ``coverage`` would: with the true median exactly on the threshold, 95% per look gives
    a verdict on either side about 4% of the time each with 6–15 rounds, about 6% with up to 25
    or 31 (``tests/core/test_claims.py`` simulates it); the printed interval is the one of the
    last look. A claim
    still undecided at the end says so (``check_rounds``) instead of giving a verdict the next
    run might reverse.
    """
    import time

    validation.callable_("one_round", one_round)
    given = [(c, t) for c, t in ((">=", at_least), ("<=", at_most), ("factor", off_by_at_most))
             if t is not None]
    if len(given) != 1:
        raise ValueError("at_least/at_most/off_by_at_most: expected exactly one threshold, got "
                         f"at_least={at_least!r}, at_most={at_most!r}, "
                         f"off_by_at_most={off_by_at_most!r}")
    comparison, threshold = given[0]
    name = {">=": "at_least", "<=": "at_most", "factor": "off_by_at_most"}[comparison]
    threshold = validation.number(name, threshold, low=1.0 if comparison == "factor" else None)
    min_rounds = validation.positive_int("min_rounds", min_rounds, maximum=1000)
    max_rounds = validation.positive_int("max_rounds", max_rounds, maximum=1000)
    if max_rounds < min_rounds:
        raise ValueError(f"max_rounds: expected at least min_rounds={min_rounds}, got {max_rounds}")
    budget_s = validation.number("budget_s", budget_s, low=0.0, high=3600.0)
    coverage = validation.number("coverage", coverage, low=0.5, high=1.0, high_open=True)
    ratios: list[float] = []
    dropped = 0
    start = time.perf_counter()
    while True:
        r = one_round()
        if isinstance(r, bool) or not isinstance(r, numbers.Real):
            raise TypeError(f"one_round: expected it to return a number, got {type(r).__name__}")
        if math.isnan(r):
            dropped += 1  # not measured; an infinite figure is a measurement and stays
        else:
            ratios.append(float(r))
        low = high = math.nan
        got, side = 0.0, None
        if ratios:
            low, high, got = median_interval(ratios, coverage)
            side = _side(low, high, threshold, comparison) if got >= coverage else None
        looked = len(ratios) + dropped >= min_rounds
        if (looked and side is not None) or len(ratios) + dropped >= max_rounds \
                or (looked and time.perf_counter() - start > budget_s):
            return Rounds(tuple(ratios), low, high, got, looked and side is not None,
                          threshold, comparison, dropped)


def check_rounds(lesson: str, statement: str, rounds: Rounds, *, unit: str = "",
                 cause: str = "") -> Claim:
    """The claim for a ``measure_rounds`` result, against the threshold it was measured for: a
    verdict from the median when the interval cleared the threshold, otherwise ``n/a`` saying
    that the noise here is too large to tell (the median is kept as the claim's value)."""
    if not isinstance(rounds, Rounds):
        raise TypeError(f"rounds: expected the Rounds that measure_rounds returns, got "
                        f"{type(rounds).__name__}")
    factor = rounds.comparison == "factor"
    kind = {"at_most" if factor or rounds.comparison == "<=" else "at_least": rounds.threshold}
    if not rounds.ratios:
        return check(lesson, statement, None, unit=unit,
                     cause=cause or f"none of {rounds.dropped} rounds could be measured", **kind)
    statement = f"{statement} ({rounds.describe()}{unit})"
    m = rounds.value
    value = max(m, 1 / m) if factor and m > 0 else m
    if rounds.decided:
        return check(lesson, statement, value, unit=unit, cause=cause, **kind)
    shown = f"1/{rounds.threshold:g} and {rounds.threshold:g}" if factor else \
        f"{rounds.threshold:g}{unit}"
    claim = check(lesson, statement, None, unit=unit, **kind, not_applicable=(
        f"{UNDECIDED}: after {len(rounds.ratios)} rounds (single rounds "
        f"{min(rounds.ratios):.3g}–{max(rounds.ratios):.3g}{unit}) the median could not be "
        f"placed on one side of {shown}: this machine's run-to-run noise is larger than the "
        "effect's distance from the threshold (or the time allowed for rounds ran out)"))
    return Claim(claim.lesson, claim.statement, value, claim.threshold, claim.comparison,
                 claim.unit, not_applicable=claim.not_applicable)


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
