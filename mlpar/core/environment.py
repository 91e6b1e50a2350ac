"""What is this machine? The facts that decide what parallelism can show here.

* **Cores.** ``os.cpu_count()`` counts the machine's *logical* CPUs (hardware threads: two per
  core with SMT), not the ones you may use. The scheduler's *affinity* mask says which logical
  CPUs this process may run on, and a container's cgroup *quota* (Binder's way of limiting you)
  says how much CPU time it gets per period: a quota of 200000 µs per 100000 µs is two cores'
  worth, whatever the affinity says. OpenBLAS and numba size their thread pools from the
  affinity, not from the quota nor the physical cores (``physical_cores``).
* **BLAS.** numpy's matrix products run in a BLAS library (OpenBLAS, MKL, ...) with its own
  thread pool, which ``threadpoolctl`` can inspect and limit.
* **numba.** Its version, thread count and threading layer.
* **GPU.** Whether an NVIDIA device is visible (looked up without initialising CUDA).
* **Memory bandwidth.** Measured now with a copy larger than the last-level cache
  (``copy_bandwidth``, sized by ``bandwidth_probe_megabytes``).

    >>> environment_report()
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path


def cores_by_affinity() -> int:
    """Cores this process may be scheduled on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def physical_cores(root: str | os.PathLike = "/sys/devices/system/cpu") -> int | None:
    """Physical cores among the logical CPUs this process may run on, or None when unknown.

    Two logical CPUs of one core (SMT siblings) share its arithmetic units, so compute-bound
    threads gain little beyond one per physical core. Read from each CPU's
    ``topology/physical_package_id`` and ``topology/core_id`` under ``root``.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root: expected a path (str or pathlib.Path), got {type(root).__name__}")
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        range(os.cpu_count() or 1)
    found = set()
    for cpu in cpus:
        topology = Path(root) / f"cpu{cpu}" / "topology"
        try:
            found.add(((topology / "physical_package_id").read_text().strip(),
                       (topology / "core_id").read_text().strip()))
        except OSError:
            return None
    return len(found) or None


def simd_extensions() -> str:
    """The widest vector extensions numpy found on this CPU, e.g. ``"AVX2, FMA3"``; "unknown"."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy < 2 keeps it elsewhere; ARM reports NEON/ASIMD/SVE
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return "unknown"
    widest = [("AVX512F", "AVX-512"), ("AVX2", "AVX2"), ("AVX", "AVX"), ("SVE", "SVE"),
              ("ASIMD", "NEON/ASIMD"), ("SSE2", "SSE2")]
    names = [label for key, label in widest if features.get(key)][:1]
    if features.get("FMA3"):
        names.append("FMA3")
    return ", ".join(names) or "unknown"


def cores_by_quota(root: str | os.PathLike = "/sys/fs/cgroup") -> float | None:
    """CPU quota of this container in cores (quota / period), or None when unlimited/unknown."""
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root: expected a path (str or pathlib.Path), got {type(root).__name__}")
    root = Path(root)
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]  # cgroup v2
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


# --- the machine as the lessons plan for it ----------------------------------------------------
#
# Lessons size their arrays and worker counts from three facts: usable cores, the last-level
# cache and the free memory. Each is read from the operating system, and each can be overridden
# through one environment variable, so a test (or a curious student) can ask "what would this
# lesson do on a 128-core server with 1.2 GiB of cache?" without owning one:
#
#     MLPAR_HARDWARE="cores=128,llc=1.2GiB,memory=64GiB" python -m pytest ...
#     MLPAR_HARDWARE="llc=unknown"        # a machine that does not report its caches
#
# Sizes take B, KiB, MiB, GiB, TiB (or K, M, G, T, the same binary units).

HARDWARE_VARIABLE = "MLPAR_HARDWARE"
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
          "TIB": 1 << 40}
_HARDWARE_KEYS = ("cores", "llc", "memory")


def parse_size(text: str) -> int:
    """``"1.2GiB"`` → bytes (binary units; ``"480M"`` as sysfs writes it)."""
    import re

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).upper() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"expected a size such as 32MiB, 1.2GiB or 480M, got {text!r}")
    return int(float(match.group(1)) * _UNITS[unit])


def hardware_override() -> dict:
    """The facts set in ``MLPAR_HARDWARE``: ``{"cores": int, "llc": int | None, "memory": int}``,
    each key present only when set (``llc=unknown`` gives ``None``: no cache information)."""
    raw = os.environ.get(HARDWARE_VARIABLE, "").strip()
    found: dict = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, _, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if key not in _HARDWARE_KEYS or not value:
            raise ValueError(f"{HARDWARE_VARIABLE}: expected key=value pairs with keys "
                             f"{', '.join(_HARDWARE_KEYS)}, got {item!r}")
        try:
            if key == "cores":
                found[key] = int(value)
                if found[key] < 1:
                    raise ValueError
            elif key == "llc" and value.lower() in ("unknown", "none"):
                found[key] = None
            else:
                found[key] = parse_size(value)
        except ValueError:
            raise ValueError(f"{HARDWARE_VARIABLE}: {key}={value!r} is not a "
                             f"{'positive core count' if key == 'cores' else 'size'}") from None
    return found


def usable_cores() -> int:
    """The number of cores worth running workers on: ``joblib.cpu_count()``.

    joblib (through loky) already combines what the two functions above read: the affinity
    mask, the cgroup quota and ``LOKY_MAX_CPU_COUNT``. A fractional quota is rounded up
    (1.5 cores' worth of CPU time → 2 workers, each busy three quarters of the time), which is
    also how joblib sizes its own pools, so a lesson's worker count matches joblib's.
    ``MLPAR_HARDWARE="cores=N"`` overrides it (for planning and tests).
    """
    override = hardware_override()
    if "cores" in override:
        return override["cores"]
    import joblib

    return max(1, int(joblib.cpu_count()))


def cache_sizes(root: str | os.PathLike = "/sys/devices/system/cpu/cpu0/cache") -> list[int]:
    """Sizes in bytes of the CPU caches Linux reports under ``root`` (empty when it says none)."""
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root: expected a path (str or pathlib.Path), got {type(root).__name__}")
    sizes = []
    try:
        entries = sorted(Path(root).glob("index*/size"))
    except OSError:
        return []
    for entry in entries:
        try:
            sizes.append(parse_size(entry.read_text().strip()))
        except (OSError, ValueError):
            continue
    return [size for size in sizes if size > 0]


def last_level_cache_bytes() -> int | None:
    """The largest CPU cache this machine reports, in bytes; ``None`` when it reports none.

    ``MLPAR_HARDWARE="llc=1.2GiB"`` (or ``llc=unknown``) overrides it. Virtual machines often
    report the host's whole L3 (hundreds of MiB), so callers must cope with huge values.
    """
    override = hardware_override()
    if "llc" in override:
        return override["llc"]
    sizes = cache_sizes()
    return max(sizes) if sizes else None


def available_memory_bytes() -> int:
    """Memory a lesson may still allocate: ``MemAvailable`` (Linux), else physical memory.

    ``MLPAR_HARDWARE="memory=8GiB"`` overrides it. Lessons plan to use at most a quarter of it.
    """
    override = hardware_override()
    if "memory" in override:
        return override["memory"]
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def blas_info() -> list[dict]:
    """BLAS libraries loaded by numpy/scipy, with their thread counts (via threadpoolctl)."""
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then finds)
    from threadpoolctl import threadpool_info

    return [
        {"library": p.get("internal_api"), "version": p.get("version"), "threads": p.get("num_threads")}
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    ]


def gpu_devices() -> list[str]:
    """NVIDIA device nodes visible to this process (empty list when there is no GPU)."""
    return sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))


@dataclass(frozen=True)
class EnvironmentReport:
    """Rows of (what, value) describing this machine; prints as a table."""

    rows: tuple[tuple[str, str], ...]

    def as_dict(self) -> dict[str, str]:
        return dict(self.rows)

    def __repr__(self) -> str:
        width = max(len(k) for k, _ in self.rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.rows)


def environment_report(measure_bandwidth: bool = True) -> EnvironmentReport:
    """Collect the report; ``measure_bandwidth=False`` skips the two bandwidth probes."""
    from mlpar.core import validation

    measure_bandwidth = validation.flag("measure_bandwidth", measure_bandwidth)
    import numba
    import numpy as np

    from mlpar.core import threads

    quota = cores_by_quota()
    rows = [
        ("python", platform.python_version()),
        ("machine", f"{platform.system()} {platform.machine()}"),
        ("logical CPUs (os.cpu_count)", str(os.cpu_count())),
        ("cores (affinity)", str(cores_by_affinity())),
        ("physical cores (in affinity)", str(physical_cores() or "not reported")),
        ("cores (cgroup quota)", "no limit" if quota is None else f"{quota:g}"),
        ("cores usable (joblib.cpu_count)", str(usable_cores())),
        ("SIMD (numpy's dispatch)", simd_extensions()),
        ("numpy", np.__version__),
    ]
    blas = blas_info()
    for lib in blas or [{"library": "not found", "version": "", "threads": ""}]:
        rows.append(("BLAS", f"{lib['library']} {lib['version']}, {lib['threads']} threads"))
    rows += [
        ("numba", numba.__version__),
        ("numba threads", str(threads.max_threads())),
        ("numba threading layer", f"{numba.config.THREADING_LAYER} (active: {threads.threading_layer()})"),
        ("GPU", ", ".join(gpu_devices()) or "none found"),
        ("nvidia-smi", shutil.which("nvidia-smi") or "not installed"),
    ]
    llc = last_level_cache_bytes()
    rows.append(("last-level cache", "not reported" if llc is None else f"{llc / 2**20:,.0f} MiB"))
    if measure_bandwidth:
        megabytes, caveat = bandwidth_probe_megabytes()
        what = f"(copy of {megabytes:,} MiB{'; ' + caveat if caveat else ''})"
        rows.append(("memory bandwidth, 1 core", f"{copy_bandwidth(megabytes):.1f} GB/s {what}"))
        rows.append((f"memory bandwidth, {threads.max_threads()} threads",
                     f"{copy_bandwidth(megabytes, parallel=True):.1f} GB/s {what}"))
    return EnvironmentReport(tuple(rows))


#: The bandwidth probe copies at least this many MiB, and arrays of this many last-level caches,
#: but at most ``PROBE_MAX_MEGABYTES`` (about 13 s for the report's two probes on a 2-core VM:
#: a lesson cell has 30 s).
PROBE_MEGABYTES, PROBE_CACHE_MULTIPLE, PROBE_MAX_MEGABYTES = 128, 4, 2048


def bandwidth_probe_megabytes() -> tuple[int, str]:
    """(MiB to copy, caveat): large enough to exceed ``PROBE_CACHE_MULTIPLE`` last-level caches,
    at least ``PROBE_MEGABYTES``, at most ``PROBE_MAX_MEGABYTES``, and with source and copy
    within a quarter of the available memory. The caveat says when a budget, not the cache, set
    the size: the figure may then be partly cache bandwidth (a VM reporting its host's L3)."""
    llc = last_level_cache_bytes()
    wanted = PROBE_MEGABYTES if llc is None else max(PROBE_MEGABYTES,
                                                     -(-PROBE_CACHE_MULTIPLE * llc // 2**20))
    by_memory = max(1, available_memory_bytes() // 4 // 2 // 2**20)  # source and destination
    budget = min(by_memory, PROBE_MAX_MEGABYTES)
    if wanted <= budget or llc is None or budget * 2**20 >= PROBE_CACHE_MULTIPLE * llc:
        return min(wanted, budget), ""  # below the floor perhaps, but still past the caches
    which = "memory" if by_memory <= PROBE_MAX_MEGABYTES else "time"
    return budget, (f"capped by the {which} budget below {PROBE_CACHE_MULTIPLE}× the "
                    f"{llc / 2**20:,.0f} MiB cache: may be partly cache bandwidth")


@functools.cache
def _parallel_copy():
    """numba's threaded copy, compiled on first use so that importing this module stays light."""
    from numba import njit, prange

    from mlpar.core import threads  # noqa: F401  (the thread-safe layer, before compiling)

    @njit(parallel=True)
    def parallel_copy(dst, src):
        for i in prange(src.shape[0]):
            dst[i] = src[i]

    return parallel_copy


def copy_bandwidth(megabytes: int = 128, repeat: int = 5, parallel: bool = False) -> float:
    """Sustained memory bandwidth in GB/s, from copying a ``megabytes`` array.

    ``parallel=False`` copies with numpy on one core; ``parallel=True`` splits the copy over
    all of numba's threads. On many machines one core cannot keep the memory system busy, so
    the two differ; the roofline's memory roof is the parallel figure. Counts 2 bytes moved per
    byte copied (one read, one write). The array should be much larger than the last-level
    cache, or the probe measures the cache instead.
    """
    import numpy as np

    from mlpar.core import timing, validation

    megabytes = validation.positive_int("megabytes", megabytes,
                                        maximum=validation.memory_bytes() // (4 << 20))
    repeat = validation.positive_int("repeat", repeat, maximum=1000)
    parallel = validation.flag("parallel", parallel)
    n = megabytes * (1 << 20) // 8
    src = np.ones(n)
    dst = np.empty_like(src)
    copy = _parallel_copy() if parallel else np.copyto
    t = timing.measure(copy, dst, src, name="copy", repeat=repeat, nbytes=2 * src.nbytes)
    return t.gbps


def _spin(seconds: float) -> float:
    """Loop iterations per second of pure Python for ``seconds``: one core's speed."""
    import time

    start = now = time.perf_counter()
    count = 0
    while now - start < seconds:
        count += 1
        now = time.perf_counter()
    return count / (now - start)


def slowest_core_share(seconds: float = 0.25) -> float:
    """How fast the slowest of ``usable_cores()`` busy processes runs, as a share of one
    process running alone (1.0: every core delivers a full core; 1.0 when there is one core).

    A virtual machine's cores can be shared with other machines on the same host: each
    looks idle from inside, yet when all are busy one of them runs at, say, 70% of its speed.
    No load average shows it; this does, in about ``2 × seconds`` plus process start-up.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from mlpar.core import validation

    seconds = validation.number("seconds", seconds, low=0.01, high=10.0)
    cores = usable_cores()
    if cores < 2:
        return 1.0
    # spawn, not fork: the caller (a notebook kernel) may have threads running
    with ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_spin, [0.01] * cores))  # start every worker before anything is timed
        alone = pool.submit(_spin, seconds).result()
        together = list(pool.map(_spin, [seconds] * cores))
    return min(together) / alone

