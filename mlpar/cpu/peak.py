"""The hardware's peak flop rate from its specification: cores × SIMD lanes × FMA units × 2 × GHz.

A core that starts ``units`` fused multiply-adds per cycle, each on ``lanes`` float64 numbers,
does ``2 · lanes · units`` flops per cycle (a multiply-add is two flops). Times the clock and
the cores, that is the *spec peak*. Comparing BLAS with it (and not with itself) says how much
of the machine BLAS uses, but only if the peak is an upper bound for what BLAS really runs:

* **the instructions BLAS runs**, not the widest the CPU has: OpenBLAS picks a kernel per CPU
  family (threadpoolctl reports it as ``architecture``), and it may run 256-bit AVX2 kernels on
  a CPU with AVX-512. ``lanes`` is the narrower of the CPU's SIMD width and the kernel's;
* **the clock the cores really reach**: only lscpu's "CPU max MHz" is a maximum. A model
  name's "@ 2.60GHz" is the base clock and ``/proc/cpuinfo``'s "cpu MHz" (all a virtual
  machine may report) a nominal or momentary one; turbo can run above both, and the peak is
  then *nominal*, not an upper bound (``upper_bound`` says which). A measured rate above a
  nominal peak tells the lowest clock that explains it (``implied_ghz``).

Read from Linux's ``/proc/cpuinfo`` and ``lscpu``; every fact it cannot read is ``None``, and
the peak is then "unknown". Two facts are not in either file and are assumed, and said so:
the number of FMA units (2 on current x86 cores that have FMA, 1 otherwise), and that SIMD
registers run at full width (some cores run AVX-512 as two 256-bit halves, which halves the
real peak).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlpar.core import validation

#: float64 numbers per SIMD register, widest first: (cpuinfo flag, lanes, name).
SIMD_WIDTHS = (("avx512f", 8, "AVX-512"), ("avx2", 4, "AVX2"), ("avx", 4, "AVX"), ("sse2", 2, "SSE2"),
               ("asimd", 2, "NEON"))
#: OpenBLAS kernel families (threadpoolctl's ``architecture``, lower case) -> (float64 lanes
#: their dgemm kernels use, instruction set). Families not listed are not assumed.
BLAS_KERNEL_LANES = {
    "skylakex": (8, "AVX-512"), "cooperlake": (8, "AVX-512"), "sapphirerapids": (8, "AVX-512"),
    "haswell": (4, "AVX2"), "zen": (4, "AVX2"), "sandybridge": (4, "AVX"),
    "excavator": (4, "AVX2"), "nehalem": (2, "SSE"), "core2": (2, "SSE2"),
    "prescott": (2, "SSE2"), "armv8": (2, "NEON"), "neoversen1": (2, "NEON"),
    "cortexa57": (2, "NEON"), "vortex": (2, "NEON"),
}
#: Where the clock is a maximum, so that the peak is an upper bound.
MAXIMUM_CLOCK = "lscpu: CPU max MHz"


@dataclass(frozen=True)
class CpuSpec:
    """What the spec peak is made of; ``None`` where it could not be read."""

    cores: int | None        # physical cores this process may use
    lanes: int | None        # float64 per SIMD register
    simd: str                # the instruction set the lanes come from, or ""
    fma_units: int | None    # fused multiply-add units per core (assumed, see module doc)
    ghz: float | None        # the clock, GHz (a maximum only where clock_source says so)
    clock_source: str = ""   # where the clock came from
    blas_kernel: str = ""    # the BLAS kernel family the lanes were narrowed to, or ""

    @property
    def upper_bound(self) -> bool:
        """True when the clock is the maximum (turbo) one, so no program beats the peak."""
        return self.clock_source == MAXIMUM_CLOCK

    def implied_ghz(self, gflops: float, cores: int | None = None) -> float | None:
        """The lowest clock at which ``cores`` (default all) could run ``gflops`` with these
        lanes and FMA units: a measured rate turned into a lower bound on the real clock."""
        gflops = validation.positive("gflops", gflops)
        cores = self.cores if cores is None else validation.positive_int("cores", cores)
        if None in (cores, self.lanes, self.fma_units):
            return None
        return gflops / (cores * self.lanes * self.fma_units * 2)

    @property
    def gflops(self) -> float | None:
        """cores × lanes × FMA units × 2 flops × GHz, or None when a fact is unknown."""
        facts = (self.cores, self.lanes, self.fma_units, self.ghz)
        if any(f is None for f in facts):
            return None
        return self.cores * self.lanes * self.fma_units * 2 * self.ghz

    @property
    def missing(self) -> str:
        """The facts that could not be read, or ""."""
        names = ("cores", "SIMD width", "FMA units", "clock")
        facts = (self.cores, self.lanes, self.fma_units, self.ghz)
        return ", ".join(n for n, f in zip(names, facts, strict=True) if f is None)

    def __str__(self) -> str:
        if self.gflops is None:
            return f"spec peak unknown: could not read {self.missing} from /proc/cpuinfo or lscpu"
        kind = "spec peak" if self.upper_bound else "nominal spec peak"
        kernel = f", the width of BLAS's {self.blas_kernel} kernels" if self.blas_kernel else ""
        clock = (f"{self.ghz:.2f} GHz ({self.clock_source})" if self.upper_bound else
                 f"{self.ghz:.2f} GHz ({self.clock_source}; turbo may run faster, so this is "
                 "not an upper bound)")
        return (f"{kind} {self.gflops:,.0f} GFLOP/s = {self.cores} cores × {self.lanes} "
                f"float64 lanes ({self.simd}{kernel}) × {self.fma_units} FMA units (assumed) × "
                f"2 flops × {clock}")


def _field(text: str, name: str) -> str | None:
    match = re.search(rf"^{re.escape(name)}\s*:\s*(.+?)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def _number(text: str | None) -> float | None:
    try:
        value = float(text.replace(",", "."))  # some locales write 2600,000
    except (AttributeError, ValueError):
        return None
    return value if value > 0 else None


def parse_cpu_spec(cpuinfo: str = "", lscpu: str = "", *, usable_cores: int | None = None,
                   blas_kernel: str = "") -> CpuSpec:
    """The spec facts in the text of ``/proc/cpuinfo`` and of ``lscpu`` (either may be "").

    ``usable_cores``: logical CPUs this process may use (default ``environment.usable_cores``);
    divided by the threads per core (SMT siblings share one core's FMA units).
    ``blas_kernel``: the BLAS kernel family (``blas_kernel()``); where it is known and
    narrower than the CPU's SIMD, the peak counts the kernel's lanes.
    """
    for name, text in (("cpuinfo", cpuinfo), ("lscpu", lscpu), ("blas_kernel", blas_kernel)):
        if not isinstance(text, str):
            raise TypeError(f"{name}: expected the text of the file as a str, got "
                            f"{type(text).__name__}")
    if usable_cores is None:
        from mlpar.core import environment

        usable_cores = environment.usable_cores()
    usable_cores = validation.positive_int("usable_cores", usable_cores)

    flags = set((_field(cpuinfo, "flags") or _field(cpuinfo, "Features")
                 or _field(lscpu, "Flags") or "").split())
    lanes, simd = next(((n, label) for flag, n, label in SIMD_WIDTHS if flag in flags),
                       (None, ""))
    kernel = BLAS_KERNEL_LANES.get(blas_kernel.lower())
    used_kernel = ""
    if kernel is not None and lanes is not None and kernel[0] < lanes:
        simd, lanes, used_kernel = f"{kernel[1]}; the CPU has {simd}", kernel[0], blas_kernel
    fma_units = (2 if "fma" in flags or "asimd" in flags else 1) if flags else None

    per_core = _number(_field(lscpu, "Thread(s) per core"))
    if per_core is None:
        siblings, cores = _number(_field(cpuinfo, "siblings")), _number(_field(cpuinfo, "cpu cores"))
        per_core = siblings / cores if siblings and cores else 1.0
    cores = max(1, int(usable_cores // max(1.0, per_core)))

    ghz, source = None, ""
    if (mhz := _number(_field(lscpu, "CPU max MHz"))) is not None:
        ghz, source = mhz / 1000, MAXIMUM_CLOCK
    elif (match := re.search(r"@\s*([0-9.]+)\s*GHz", _field(cpuinfo, "model name") or "")):
        ghz, source = float(match.group(1)), "model name: the base clock"
    elif (mhz := _number(_field(cpuinfo, "cpu MHz"))) is not None:
        ghz, source = mhz / 1000, "cpuinfo: cpu MHz, the clock at this moment"
    return CpuSpec(cores, lanes, simd, fma_units, ghz, source, used_kernel)


def read_text(path: str = "/proc/cpuinfo") -> str:
    """A file's text, or "" when it cannot be read (not Linux, no permission)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a path (str or pathlib.Path), got {type(path).__name__}")
    try:
        return Path(path).read_text(errors="replace")
    except (OSError, TypeError, ValueError):
        return ""


def lscpu_text() -> str:
    """The output of ``lscpu``, or "" when it is not installed or fails."""
    exe = shutil.which("lscpu")
    if exe is None:
        return ""
    try:
        done = subprocess.run([exe], capture_output=True, text=True, timeout=10,
                              env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def blas_kernel() -> str:
    """The kernel family numpy's BLAS runs on this CPU, as threadpoolctl reports it
    (OpenBLAS: ``architecture``, e.g. "Haswell"), or "" where it does not say."""
    import numpy as np  # noqa: F401 - loads numpy's BLAS, so that threadpoolctl sees it
    from threadpoolctl import threadpool_info

    return kernel_of_numpy_blas(threadpool_info())


def kernel_of_numpy_blas(pools) -> str:
    """The ``architecture`` of the BLAS that numpy itself loaded, among threadpoolctl's
    ``pools`` (a process can hold several: scipy ships its own OpenBLAS, and the two may pick
    different kernels); the first BLAS that reports one where no path names numpy; or ""."""
    if isinstance(pools, (str, bytes, dict)) or not hasattr(pools, "__iter__"):
        raise TypeError(f"pools: expected threadpoolctl's list of dicts, got {type(pools).__name__}")
    reported = [p for p in pools if isinstance(p, dict) and p.get("user_api") == "blas"
                and p.get("architecture")]
    numpys = [p for p in reported if "numpy" in str(p.get("filepath", "")).lower()]
    return str((numpys or reported)[0]["architecture"]) if reported else ""


def cpu_spec() -> CpuSpec:
    """This machine's spec facts (``parse_cpu_spec`` of ``/proc/cpuinfo`` and ``lscpu``), with
    the lanes of the kernels numpy's BLAS runs (``blas_kernel``)."""
    return parse_cpu_spec(read_text("/proc/cpuinfo"), lscpu_text(), blas_kernel=blas_kernel())
