"""Every lesson's central claims, measured here: one line each, ✓, ✗ or "n/a: reason".

    python -m mlpar.bench claims          # exit code 1 if any claim did not hold

Targets: the whole run under 3 minutes on 2 cores (quick sizes are what the lessons use).
"""

from __future__ import annotations

import time

from mlpar.claims import all_claims
from mlpar.core import cleanup, timing, validation
from mlpar.core.claims import UNDECIDED


def settle(timeout: float = 10.0) -> float:
    """Wait until the previous claim's worker processes have gone (a Dask cluster's workers
    take a few seconds to shut down, and one still exiting takes a core from the next claim).

    Idle pools that stay on purpose (joblib's loky workers, multiprocessing's resource
    tracker) do not count. It also waits until BLAS's idle threads have stopped spinning
    (``timing.BLAS_SPIN_SECONDS``): the previous claim may have ended with a BLAS call.
    Returns the seconds waited.
    """
    timeout = validation.number("timeout", timeout, low=0.0, high=3600.0)
    start = time.perf_counter()
    time.sleep(min(timeout, timing.BLAS_SPIN_SECONDS))
    while (cleanup.child_processes(ignore=(cleanup.RESOURCE_TRACKER, cleanup.LOKY))
           and time.perf_counter() - start < timeout):
        time.sleep(0.1)
    return time.perf_counter() - start


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    start = time.perf_counter()
    claims = []
    for func in all_claims():
        settle()
        claims.append(func(quick))
    return {
        "claims": [
            {"lesson": c.lesson, "statement": c.statement, "value": c.value,
             "threshold": c.threshold, "comparison": c.comparison, "unit": c.unit,
             "held": c.held, "why_not": c.why_not, "not_applicable": c.not_applicable,
             "line": repr(c)}
            for c in claims
        ],
        "seconds": time.perf_counter() - start,
    }


def report(figures: dict) -> str:
    counts = summary(figures)
    lines = [c["line"] for c in figures["claims"]]
    measured = counts["held"] + counts["broken"]
    lines.append(f"{counts['held']} of {measured} measured claims held, {counts['broken']} did not"
                 + (f"; {counts['undecided']} undecided (noise here larger than the effect's "
                    "distance from the threshold)" if counts["undecided"] else "")
                 + (f"; {counts['not applicable']} not applicable here" if counts["not applicable"]
                    else "")
                 + (f"; {counts['not measured']} could not be measured" if counts["not measured"]
                    else "")
                 + f" ({len(figures['claims'])} claims, {figures['seconds']:.0f} s)")
    return "\n".join(lines)


def summary(figures: dict) -> dict:
    """Counts of claims that held, did not, were undecided (rounds on both sides of the
    threshold), do not apply here (a failed precondition: one core, no GPU, a cache too large
    to exceed) and could not be measured (NaN)."""
    if not isinstance(figures, dict) or not isinstance(figures.get("claims"), list):
        raise TypeError(f"figures: expected the dict run() returns, with a list under 'claims', "
                        f"got {type(figures).__name__}")
    found = {"held": 0, "broken": 0, "undecided": 0, "not applicable": 0, "not measured": 0}
    for c in figures["claims"]:
        reason = c.get("not_applicable") or ""
        if c["held"] is not None:
            key = "held" if c["held"] else "broken"
        elif reason.startswith(UNDECIDED):
            key = "undecided"
        else:
            key = "not applicable" if reason else "not measured"
        found[key] += 1
    return found


def failed(figures: dict) -> bool:
    """The exit status: any claim that did not hold fails the run.

    A claim that does not apply on this machine (a GPU claim without a GPU) or could not be
    measured prints ``n/a: reason`` and does not fail the run: it says nothing against the lesson.
    Neither does an undecided one (its rounds landed on both sides of the threshold): the
    report counts those apart, with their medians, so a figure drifting towards its threshold
    shows there before it turns into a ✗.
    """
    return any(c["held"] is False for c in figures["claims"])
