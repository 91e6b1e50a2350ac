"""Measure how long code takes, honestly.

Three habits that students otherwise skip:

* **Warm-up is not a measurement.** The first call of a numba function compiles it; the first
  touch of an array faults its pages in. ``measure`` times the first call on its own and
  reports it separately (``first_call``), then times only warm calls.
* **One sample is noise.** Each sample repeats the call enough times to last a few
  milliseconds, and ``repeat`` samples are kept. The minimum is the least-disturbed run
  (use it to compare variants); the median says what a typical run costs.
* **Seconds are not comparable across sizes; rates are.** Give ``nbytes`` (bytes moved) and
  ``flops`` (floating-point operations) and the result reports GB/s and GFLOP/s.

    >>> t = measure(np.multiply, x, y, name="numpy", nbytes=3 * x.nbytes, flops=x.size)
    >>> table = compare([t, t_loop], baseline="numpy"); table.plot()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mlpar.core import validation

#: After a call, OpenBLAS's idle threads keep spinning on their cores for a while before they
#: sleep (about 2**28 cycles, 0.1 s at 2.5 GHz: its THREAD_TIMEOUT). Code timed in that window
#: shares the cores with them (on 2 cores, numba's threads then wait for a core). Measurements
#: that follow BLAS work wait this long first.
BLAS_SPIN_SECONDS = 0.25

MAX_REPEAT = 10_000  # samples per measurement: more is a typo, and Stop waits for them


@dataclass(frozen=True)
class Timing:
    """Warm-run times of one variant, in seconds per call."""

    name: str
    times: tuple[float, ...]
    first_call: float
    compiled: bool = False
    nbytes: int | None = None
    flops: int | None = None

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def compile_time(self) -> float | None:
        """First call minus a warm call: the JIT compiler's share, if this was a JIT function."""
        return max(self.first_call - self.best, 0.0) if self.compiled else None

    @property
    def gbps(self) -> float | None:
        return None if self.nbytes is None else self.nbytes / self.best / 1e9

    @property
    def gflops(self) -> float | None:
        return None if self.flops is None else self.flops / self.best / 1e9

    def __repr__(self) -> str:
        parts = [f"{self.name}: best {format_seconds(self.best)}, median {format_seconds(self.median)}"]
        if self.gbps is not None:
            parts.append(f"{self.gbps:.2f} GB/s")
        if self.gflops is not None:
            parts.append(f"{self.gflops:.2f} GFLOP/s")
        if self.compiled:
            parts.append(f"compile {format_seconds(self.compile_time)}")
        return "Timing(" + ", ".join(parts) + ")"


def format_seconds(seconds: float) -> str:
    """Seconds in the unit a person reads easily: 12.3 ms, 4.56 µs."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _is_uncompiled_jit(func) -> bool:
    # A numba dispatcher with no compiled signature yet will compile on its first call.
    return hasattr(func, "signatures") and hasattr(func, "py_func") and not func.signatures


def measure(
    func: Callable,
    *args,
    name: str | None = None,
    repeat: int = 7,
    min_sample_time: float = 2e-3,
    nbytes: int | None = None,
    flops: int | None = None,
    **kwargs,
) -> Timing:
    """Time ``func(*args, **kwargs)``: one separate first call, then ``repeat`` warm samples.

    Each sample calls the function ``k`` times in a row, with ``k`` chosen (1, 2, 5, 10, ...)
    so that a sample lasts at least ``min_sample_time`` seconds; the recorded time is the
    sample divided by ``k``.
    """
    validation.callable_("func", func)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name: expected a str or None, got {type(name).__name__}")
    repeat = validation.positive_int("repeat", repeat, maximum=MAX_REPEAT)
    validation.number("min_sample_time", min_sample_time, low=0.0, high=60.0, low_open=True)
    if nbytes is not None:
        nbytes = validation.integer("nbytes", nbytes, minimum=0)
    if flops is not None:
        flops = validation.integer("flops", flops, minimum=0)
    label = name if name is not None else getattr(func, "__name__", "function")
    compiled = _is_uncompiled_jit(func)

    start = time.perf_counter()
    func(*args, **kwargs)
    first = time.perf_counter() - start

    calls = 1
    for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000):
        calls = k
        start = time.perf_counter()
        for _ in range(k):
            func(*args, **kwargs)
        if time.perf_counter() - start >= min_sample_time:
            break
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            func(*args, **kwargs)
        times.append((time.perf_counter() - start) / calls)
    return Timing(label, tuple(times), first, compiled, nbytes, flops)


def best_of(func: Callable[[], object], repeat: int = 3, sync: Callable[[], object] | None = None) -> float:
    """Best wall time of ``repeat`` single calls of ``func()``, in seconds.

    For calls long enough (milliseconds and up: a fit, a cross-validation, a pool start) that
    one call is a sample by itself, where ``measure``'s repeated samples would only cost time.
    ``sync`` is called before starting and before stopping the clock, for work that runs
    asynchronously on a device (``cuda.synchronize``).
    """
    validation.callable_("func", func)
    repeat = validation.positive_int("repeat", repeat, maximum=MAX_REPEAT)
    if sync is not None:
        validation.callable_("sync", sync)
    best = float("inf")
    for _ in range(repeat):
        if sync is not None:
            sync()
        start = time.perf_counter()
        func()
        if sync is not None:
            sync()
        best = min(best, time.perf_counter() - start)
    return best


@dataclass(frozen=True)
class SpeedupTable:
    """Several variants of one computation, each compared with a baseline variant."""

    timings: tuple[Timing, ...]
    baseline: str

    def __post_init__(self):
        names = [t.name for t in self.timings]
        if len(set(names)) != len(names):
            raise ValueError(f"timings: expected distinct names, got {names}")
        validation.choice("baseline", self.baseline, names)

    def __getitem__(self, name: str) -> Timing:
        for t in self.timings:
            if t.name == name:
                return t
        raise KeyError(name)

    def speedup(self, name: str) -> float:
        """How many times faster ``name`` is than the baseline (best times)."""
        return self[self.baseline].best / self[name].best

    @property
    def fastest(self) -> Timing:
        return min(self.timings, key=lambda t: t.best)

    def rows(self) -> list[dict]:
        return [
            {
                "variant": t.name,
                "best_s": t.best,
                "median_s": t.median,
                "gbps": t.gbps,
                "gflops": t.gflops,
                "compile_s": t.compile_time,
                "speedup": self.speedup(t.name),
            }
            for t in self.timings
        ]

    def __repr__(self) -> str:
        header = f"{'variant':<22}{'best':>11}{'median':>11}{'GB/s':>9}{'GFLOP/s':>9}{'compile':>10}"
        header += f"{'speedup':>10}"
        lines = [f"speedup = time of {self.baseline!r} / time of the variant", header, "-" * len(header)]
        for row, t in zip(self.rows(), self.timings):
            gbps = "" if t.gbps is None else f"{t.gbps:.2f}"
            gflops = "" if t.gflops is None else f"{t.gflops:.2f}"
            comp = "" if t.compile_time is None else format_seconds(t.compile_time)
            lines.append(
                f"{t.name:<22}{format_seconds(t.best):>11}{format_seconds(t.median):>11}"
                f"{gbps:>9}{gflops:>9}{comp:>10}{row['speedup']:>9.3g}×"
            )
        return "\n".join(lines)

    def plot(self, ax=None, metric: str = "speedup"):
        """Bar chart of ``metric``: 'speedup' (log scale), 'gbps', 'gflops' or 'time'."""
        import matplotlib.pyplot as plt

        validation.choice("metric", metric, ("speedup", "gbps", "gflops", "time"))
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3))
        names = [t.name for t in self.timings]
        if metric == "speedup":
            values = [self.speedup(n) for n in names]
            ax.set_xscale("log")
            ax.set_xlabel(f"speedup over {self.baseline} (log scale)")
        elif metric == "time":
            values = [t.best for t in self.timings]
            ax.set_xscale("log")
            ax.set_xlabel("best time per call [s] (log scale)")
        else:
            values = [getattr(t, metric) or 0.0 for t in self.timings]
            ax.set_xlabel("GB/s" if metric == "gbps" else "GFLOP/s")
        bars = ax.barh(names, values, color="tab:blue")
        ax.bar_label(bars, labels=[f"{v:.3g}" for v in values], padding=3, fontsize=8)
        ax.invert_yaxis()
        ax.margins(x=0.15)
        return ax


def compare(timings: Sequence[Timing], baseline: str | None = None) -> SpeedupTable:
    """Put timings side by side; ``baseline`` defaults to the first one."""
    if isinstance(timings, (str, bytes)) or not hasattr(timings, "__iter__"):
        raise TypeError(f"timings: expected a sequence of Timing, got {type(timings).__name__}")
    timings = tuple(timings)
    if not timings:
        raise ValueError("timings: expected at least one Timing, got an empty sequence")
    for i, t in enumerate(timings):
        if not isinstance(t, Timing):
            raise TypeError(f"timings[{i}]: expected a Timing, got {type(t).__name__}")
    return SpeedupTable(timings, baseline if baseline is not None else timings[0].name)
