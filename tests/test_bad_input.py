"""Every public function of mlpar, called with bad arguments derived from its signature.

The walker imports every module under ``mlpar/`` (new lessons' modules are picked up without
editing this file), takes the public callables defined there, and builds a catalogue of calls:
for each parameter, a set of bad values chosen by the parameter's kind (flag, seed, count,
number, name, array, function), every other parameter a plausible value (a baseline by name,
or its default). Each call runs in a child interpreter with a time limit and must end in

* a ``ValueError``/``TypeError`` whose message names the parameter (``hard`` bad values:
  None, wrong types, NaN, negative counts, string or object arrays, ...), or
* for ``soft`` values (zero, huge counts, empty, non-contiguous, zero-stride or Fortran-ordered
  arrays, other dtypes: some functions may legitimately accept them) either a result or such
  an error;

and never in a hang, another exception, a file written outside the child's temporary folder,
a child process or a ``/dev/shm`` entry left behind.

``MLPAR_BAD_INPUT_ONLY=mlpar.algorithms.pipeline,mlpar.claims`` restricts a run to some modules.
The suite runs a seeded sample (``MLPAR_BAD_INPUT_SAMPLE`` calls, default 120); the whole
catalogue, with a per-call summary, runs with

    MLPAR_BAD_INPUT_SAMPLE=all MLPAR_BAD_INPUT_REPORT=/tmp/bad.json \
        .venv/bin/pytest tests/test_bad_input.py -q -p no:cacheprovider

Functions the walker cannot build arguments for are reported as warnings, never passed
silently.
"""

from __future__ import annotations

import collections
import hashlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# --- what is not walked, and why -----------------------------------------------------------
# Whole modules: each entry says why calling it with junk teaches nothing or does harm.
EXCLUDED_MODULES = {
    "mlpar.course": "notebook tooling (reads/writes the course's notebooks); tests/course",
    "mlpar.course.__main__": "command line of the notebook tooling; argv parsing by argparse",
    "mlpar.course.lessons": "notebook tooling: rewrites notebooks and README; tests/course",
    "mlpar.course.run": "notebook tooling: executes a notebook in a kernel; tests/course",
    "mlpar.course.student_edition": "notebook tooling: writes notebooks; tests/course",
    "mlpar.course.grading": "the grader's package (docstring only); tests/course",
    "mlpar.exercises": "grading helpers: by design they turn any student value into a failed "
                       "check, never an exception; tests/exercises covers them",
    "mlpar.core.plots": "plotting only (a figure, no arguments)",
    "mlpar.gpu.plots": "plotting functions",
    "mlpar.algorithms.svm.plots": "plotting functions",
}
# Module prefixes whose every function takes the student's answer as its first argument.
EXCLUDED_PREFIXES = {
    "mlpar.exercises.": "check_<exercise>(student_answer): graded checks report, never raise, "
                        "on a student's value; tests/exercises gives them wrong answers",
    "mlpar.course.grading.": "the grader: any junk in a submitted notebook becomes an error row by "
                             "design; it starts grading processes; tests/course gives it bad files",
}
# Single functions.
EXCLUDED_FUNCTIONS = {
    "mlpar.bench.main": "command line: argparse exits with SystemExit on bad argv by design",
    "mlpar.cpu.spinlock.compare_and_swap": "numba intrinsic: callable only inside jit code",
    "mlpar.cpu.spinlock.store_release": "numba intrinsic: callable only inside jit code",
    "mlpar.cpu.spinlock.load_relaxed": "numba intrinsic: callable only inside jit code",
    "mlpar.cluster.tasks.echo": "takes any payload by design (it measures message costs)",
    "mlpar.cluster.engines.payload_bytes": "takes any object by design (sizes a message)",
    "mlpar.core.timing.format_seconds": "formats any number, NaN included, for a table",
    "mlpar.core.validation.*": "the validators themselves; tests/core/test_validation.py",
    "mlpar.core.limits.*": "validators (name, value) like core.validation; tests/core",
    "mlpar.gpu.backend.block_size": "a validator (name, value) like core.validation",
    "mlpar.gpu.cuda_kernels.product_kernel": "a CUDA kernel object, launched as k[blocks, threads]"
                                             "(...) inside the checked elementwise_product",
    "mlpar.algorithms.svm.column_cache.*": "numba-compiled helpers of the fast SMO, called only "
                                           "by it with arguments it has checked",
    "mlpar.algorithms.pipeline.domain.edges": "runs on a worker on a Tile that convolve_tiles built",
    "mlpar.algorithms.pipeline.domain.layer_step": "runs on a worker on a Tile that convolve_tiles built",
    "mlpar.algorithms.pipeline.domain.layers_alone": "runs on a worker on a Tile that convolve_tiles "
                                                     "built",
    "mlpar.algorithms.pipeline.domain.tile": "runs on a worker on a Tile that convolve_tiles built",
    "mlpar.algorithms.distributed.gossip_dask.*": "needs a running Dask client and actors; its "
                                                  "arguments are checked in "
                                                  "tests/algorithms/distributed/test_gossip_dask.py",
    "mlpar.benchmarks.distributed.scheduler_rounds": "needs a running Dask client (benchmark)",
    "mlpar.cluster.dask_cluster.command_line_cluster": "starts a scheduler and worker programs "
                                                        "(a real, bounded start-up that a short "
                                                        "timeout may fail with ClusterError); "
                                                        "tests/cluster/test_external_cluster.py",
    "mlpar.algorithms.pipeline.simulator.per_stage": "a validator (name, value, n) like "
                                                     "core.validation: its messages name `name`",
    "mlpar.algorithms.distributed.topologies.check_graph": "a validator (name, g) like "
                                                           "core.validation",
    "mlpar.algorithms.pipeline.staged_mlp.predict": "needs a StagedRun of real stage processes; "
                                                    "tests/algorithms/pipeline/test_staged_mlp.py "
                                                    "checks its arguments",
    "mlpar.algorithms.model_selection.speedup.strong_and_scaled": "a whole scaling study (minutes "
                                                                  "on any valid input); its checks "
                                                                  "are cv_runner's and the curves'",
    "mlpar.algorithms.distributed.parameter_server.serve": "the server loop of train(); takes the "
                                                           "engine and callbacks train() made",
}
# (module prefix, function name): the benchmarks' report/failed format the dict their own
# run() returned, for the command line `python -m mlpar.bench`; junk there is a bug of ours.
EXCLUDED_IN = {("mlpar.benchmarks.", "report"), ("mlpar.benchmarks.", "failed")}
# Names whose functions are plots (any module): they draw, and take matplotlib axes.
PLOT_PREFIXES = ("plot_", "draw_")

# Calls known to fail here whose fix belongs to another part of the project; each is checked
# on every run and reported once it passes, so the entry can go.
KNOWN = {
    # "function|parameter": one argument only. n_workers=None means the default, 2, as in
    # engine_scope (documented there), so the walker's None is accepted by design.
    "mlpar.algorithms.distributed.parameter_server.train_with_actors|n_workers":
        "None means the default worker count",
    # The same source is compiled by numba into the SMO loop (smo._pair_step), so no Python
    # check can live in its body; its arguments come from fit_smo, which checks them.
    "mlpar.algorithms.svm.smo.pair_step": "compiled by numba for the SMO loop",
    # Starts a Dask cluster per call: longer than the time limit on a loaded two-core machine.
    "mlpar.algorithms.distributed.parameter_server.train_with_actors": "Dask start-up time",
    "mlpar.algorithms.sgd.sparse_logistic.minus_sigmoid_gradient": "a numba function used inside the SGD "
                                                           "kernels; numba's TypingError rejects "
                                                           "non-numbers",
}

# --- parameter kinds and their bad values --------------------------------------------------
FLAG_NAMES = {"parallel", "shuffle", "memmap", "quick", "project", "measure_bandwidth",
              "record", "processes", "tiled", "progress", "write", "log", "power_of_two"}
COUNT_WORDS = ("n", "n_", "repeat", "size", "block", "batch", "epochs", "threads", "workers",
               "jobs", "folds", "k", "t", "m", "p", "d", "degree", "megabytes", "max_iter",
               "resolution", "channels", "filters", "kernel", "python_n", "writes", "parties",
               "itemsize", "shared_bytes", "max_threads", "tile", "blocks", "nbytes", "flops")
ARRAY_NAMES = {"X", "Y", "y", "w", "x", "a", "b", "images", "filters", "image", "kernel",
               "array", "K", "alpha", "y_signed", "indptr", "indices", "raw", "coefficients",
               "out", "lock", "counter", "rows", "densities", "workers", "speedups",
               "scaled_speedups", "intensity"}
CALLABLE_NAMES = {"func", "run", "pyfunc", "sync"}
# Integer parameters for which 0 and negative values are meaningful (indices, offsets).
SIGNED_INTS = {"i", "thread_idx", "block_idx", "step", "minimum", "maximum"}

HARD, SOFT = "hard", "soft"

# Optional arguments a plausible call needs (exactly one threshold for a claim).
EXTRA_KWARGS = {"mlpar.core.claims.check": {"at_least": 1.0}}


def _annotation(p) -> str:
    a = p.annotation
    return a if isinstance(a, str) else getattr(a, "__name__", str(a))


def kind_of(p) -> str:
    ann = _annotation(p)
    default = p.default
    if p.name in FLAG_NAMES or ann == "bool" or isinstance(default, bool):
        return "flag"
    if p.name == "seed":
        return "seed"
    if p.name in CALLABLE_NAMES or "Callable" in ann:
        return "callable"
    if "ndarray" in ann or (p.name in ARRAY_NAMES and "int" not in ann and "str" not in ann):
        return "array"
    if ann.startswith("int") or (isinstance(default, int) and not isinstance(default, bool)):
        return "int"
    if ann.startswith("float") or isinstance(default, float):
        return "float"
    if ann.startswith("str") or isinstance(default, str):
        return "str"
    return "other"


# case id -> (strength, description); the values are built in the child (see _value).
CASES = {
    "flag": {"str_no": HARD, "int_2": HARD, "none": HARD, "float_1": HARD},
    "seed": {"neg": HARD, "float": HARD, "str": HARD, "none": HARD},
    "callable": {"int_3": HARD, "none": HARD},
    "int": {"none": HARD, "str": HARD, "float": HARD, "bool": HARD, "neg": HARD, "zero": SOFT,
            "huge": SOFT, "nan": HARD},
    "float": {"none": HARD, "str": HARD, "nan": HARD, "inf": HARD, "neg": SOFT, "zero": SOFT,
              "huge": SOFT},
    "str": {"int_3": HARD, "none": HARD, "unknown": SOFT},
    "array": {"none": HARD, "str": HARD, "obj_array": HARD, "str_array": HARD, "empty": SOFT,
              "nan": SOFT, "inf": SOFT, "noncontig": SOFT, "zero_stride": SOFT, "fortran": SOFT,
              "int_dtype": SOFT, "float32": SOFT, "ndim_up": SOFT, "huge_view": SOFT},
    "other": {"none": SOFT, "object": SOFT},
}
# NaN/inf in data are hard errors for the algorithms (silent NaN models otherwise).
HARD_NAN_MODULES = ("mlpar.algorithms.",)
INF_OK_FLOATS = {"at_least", "at_most", "high", "low"}
NEG_OK_INTS_NONE_DEFAULT = set()


def strength(qualname: str, param, kind: str, case: str) -> str:
    s = CASES[kind][case]
    if case == "none" and param.default is None:
        return "skip"  # None is the documented default
    if kind == "int" and case == "neg" and param.name in SIGNED_INTS:
        return SOFT
    if param.name == "n_jobs" and case == "neg":
        return SOFT  # joblib's -1 means all cores
    if param.name == "y" and case == "str_array":
        return SOFT  # class labels may be strings
    if case == "obj_array":
        return SOFT  # an object array of valid numbers may rightly be accepted
    if kind == "str" and case == "int_3" and not _annotation(param).startswith("str"):
        return SOFT  # a str default without a str annotation: numbers may be allowed too
    if kind == "float" and case == "inf" and param.name in INF_OK_FLOATS:
        return SOFT
    if qualname.startswith("mlpar.claims.") and kind == "float" and case in ("none", "nan", "inf"):
        return SOFT  # a claim's measured figure: None/NaN mean "not measured" (a '?' claim)
    if kind == "array" and case in ("nan", "inf") and qualname.startswith(HARD_NAN_MODULES) \
            and param.name in {"X", "y", "K"}:
        return HARD
    return s


# --- the child: building values and running calls --------------------------------------------


def _child_setup():
    from mlpar.gpu import backend

    backend.choose_cuda_backend()  # before anything imports numba (see mlpar.gpu.backend)


def _public_functions(report):
    import importlib
    import pkgutil

    import mlpar

    found = []
    for info in sorted(pkgutil.walk_packages(mlpar.__path__, "mlpar."), key=lambda i: i.name):
        name = info.name
        if name in EXCLUDED_MODULES or name.startswith(tuple(EXCLUDED_PREFIXES)):
            continue
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001  (reported, not hidden)
            report["import_errors"].append([name, f"{type(exc).__name__}: {exc}"])
            continue
        for attr, obj in sorted(vars(module).items()):
            qual = f"{name}.{attr}"
            if attr.startswith("_") or inspect.isclass(obj) or not callable(obj):
                continue
            if getattr(obj, "__module__", None) != name:
                continue
            if qual in EXCLUDED_FUNCTIONS or f"{name}.*" in EXCLUDED_FUNCTIONS:
                continue
            if attr.startswith(PLOT_PREFIXES):
                continue
            if any(name.startswith(m) and attr == f for m, f in EXCLUDED_IN):
                continue
            found.append((qual, obj))
    return found


def _rng():
    import numpy as np

    return np.random.default_rng(0)


def _baselines():
    """Plausible values by parameter name, built lazily (some need others)."""
    import numpy as np

    r = _rng()
    X = r.standard_normal((24, 3))
    y = np.where(r.standard_normal(24) > 0, 1.0, -1.0)
    b = {
        "X": lambda: X.copy(), "Y": lambda: X[:5].copy(), "y": lambda: y.copy(),
        "w": lambda: np.zeros(3), "x": lambda: r.standard_normal(16),
        "a": lambda: r.standard_normal((8, 8)), "b": lambda: r.standard_normal((8, 8)),
        "images": lambda: r.standard_normal((1, 2, 6, 6)),
        "filters": lambda: r.standard_normal((2, 2, 3, 3)),
        "image": lambda: r.standard_normal((6, 6)), "kernel": lambda: r.standard_normal((3, 3)),
        "array": lambda: np.ones(1000), "K": lambda: np.eye(24), "alpha": lambda: np.zeros(24),
        "y_signed": lambda: y.copy(), "coefficients": lambda: np.array([1.0, 2.0, 3.0]),
        "raw": lambda: r.standard_normal((10, 5)), "lock": lambda: np.zeros(16, np.int64),
        "counter": lambda: np.zeros(16, np.int64), "parties": lambda: 1,
        "rows": lambda: np.arange(4), "densities": lambda: np.array([0.01, 0.1]),
        "workers": lambda: np.array([1, 2, 4]), "speedups": lambda: np.array([1.0, 1.8, 3.0]),
        "scaled_speedups": lambda: np.array([1.0, 1.9, 3.8]), "intensity": lambda: 1.0,
        "n": lambda: 8, "m": lambda: 8, "p": lambda: 8, "d": lambda: 3, "k": lambda: 3,
        "t": lambda: 2, "n_samples": lambda: 24, "n_features": lambda: 20, "n_workers": lambda: 2,
        "n_shards": lambda: 2, "n_folds": lambda: 3, "n_steps": lambda: 100, "n_tasks": lambda: 2,
        "threads": lambda: 2, "degree": lambda: 3, "density": lambda: 0.2, "seed": lambda: 0,
        "serial_fraction": lambda: 0.1, "peak_gflops": lambda: 10.0,
        "bandwidth_gbps": lambda: 5.0, "cpu_gflops": lambda: 10.0, "gpu_gflops": lambda: 100.0,
        "link_gbps": lambda: 10.0, "stale_rate": lambda: 0.1, "lost_rate": lambda: 0.01,
        "lam": lambda: 0.01, "gamma": lambda: 1.0, "coef0": lambda: 0.0,
        "threads_per_block": lambda: 32, "blocks": lambda: 2, "thread_idx": lambda: 0,
        "block_idx": lambda: 0, "block_dim": lambda: 32, "grid_dim": lambda: 2,
        "shared_bytes": lambda: 49152, "itemsize": lambda: 8, "tile": lambda: 4,
        "image_shape": lambda: (1, 2, 6, 6), "filter_shape": lambda: (2, 2, 3, 3),
        "engine": lambda: "simulated", "variant": lambda: "serial", "work": lambda: "python",
        "pool": lambda: "sequential", "backend": lambda: "sequential", "mode": lambda: "async",
        "lesson": lambda: "00", "statement": lambda: "a statement", "value": lambda: 1.0,
        "name": lambda: "data.csv", "path": lambda: "house.csv", "figures": lambda: {},
        "f": lambda: {}, "splits": lambda: 3, "Cs": lambda: [1.0], "gammas": lambda: [1.0],
        "b_": None,
        "func": lambda: (lambda *a, **k: None), "run": lambda: (lambda *a: None),
        "pyfunc": lambda: (lambda x, y: x * y), "signature": lambda: "f8(f8, f8)",
        "timings": lambda: [], "n_threads": lambda: 1, "alpha_i": lambda: 0.0,
        "alpha_j": lambda: 0.0, "y_i": lambda: 1.0, "y_j": lambda: -1.0, "G_i": lambda: -1.0,
        "G_j": lambda: -1.0, "K_ii": lambda: 1.0, "K_jj": lambda: 1.0, "K_ij": lambda: 0.5,
        "C": lambda: 1.0, "z": lambda: np.zeros(3), "shape": lambda: (3,),
        "indptr": lambda: np.array([0, 2, 3]), "indices": lambda: np.array([0, 1, 1]),
        "memmap": lambda: False, "runs": lambda: [], "i": lambda: 0, "ax": lambda: None,
        "out": lambda: np.empty(16), "dtype": lambda: np.float64, "n_jobs": lambda: 1,
        "params": lambda: {}, "train": lambda: np.arange(12), "test": lambda: np.arange(12, 24),
        "grid": lambda: {"clf__C": [0.1, 1.0]}, "distributions": lambda: {"clf__C": [0.1, 1.0]},
        "n_candidates": lambda: 2, "tasks": lambda: [(1,), (2,)],
        "candidates": lambda: [{"clf__C": 1.0}], "count": lambda: 10,
    }
    b.pop("b_")

    def problem():
        from mlpar.algorithms.sgd.sparse_data import make_sparse_problem

        return make_sparse_problem(40, 20, 0.2, seed=0)

    def model():
        from mlpar.algorithms.svm.smo import fit_smo

        return fit_smo(X, y)

    def estimator():
        from mlpar.algorithms.model_selection.cross_validation import make_model

        return make_model("logistic")

    def engine():
        from mlpar.cluster.engines import make_engine

        return make_engine("simulated", 2)

    def timings():
        from mlpar.core import timing

        return [timing.measure(lambda: None, name="a", repeat=1)]

    # Per-module meanings of a name ("mlpar.x.y:name" overrides "name" in module mlpar.x.y).
    b["mlpar.cpu.elementwise:y"] = lambda: r.standard_normal(16)
    b["mlpar.gpu.cuda_kernels:y"] = lambda: r.standard_normal(16)
    b["mlpar.gpu.transfers:y"] = lambda: r.standard_normal(16)
    # Lesson 10 (mlpar.gpu): a matmul step's name, a blocking shape, SMs, stream chunks, versions.
    for name, value in (("step", "wide"), ("bm", 16), ("bn", 16), ("bk", 4), ("tm", 4),
                        ("tn", 4), ("multiprocessors", 132), ("chunks", 2),
                        ("distribution", "numpy"), ("version", "2.4.6")):
        b.setdefault(name, lambda value=value: value)
    b["mlpar.cpu.matmul:variant"] = lambda: "blas"
    b["mlpar.algorithms.svm.kernel_matrix:kernel"] = lambda: "rbf"
    b["mlpar.algorithms.distributed.house_prices:raw"] = lambda: r.uniform(1, 9, (10, 4))
    b["mlpar.algorithms.svm.pegasos:b"] = lambda: 0.0
    b["mlpar.cluster.cost_model:engine"] = engine
    b["mlpar.algorithms.distributed.mapreduce:engine"] = engine
    b["mlpar.core.timing:timings"] = timings
    b["problem"] = problem
    b["model"] = model
    for module in ("cross_validation", "search", "speedup", "exhaustive"):
        b[f"mlpar.algorithms.model_selection.{module}:model"] = estimator
    b["mlpar.algorithms.distributed.parameter_server:engine"] = engine

    # Lessons 07 (gossip) and 08 (pipelines), and a few measured figures.
    def ring():
        from mlpar.algorithms.distributed import topologies

        return topologies.topology_matrix("ring", 4)

    def ring_graph():
        from mlpar.algorithms.distributed import topologies

        return topologies.graph("ring", 4)

    def schedule():
        from mlpar.algorithms.pipeline import schedules

        return schedules.gpipe(2, 4)

    def cost():
        from mlpar.cluster.cost_model import CostModel

        return CostModel()

    def cluster():
        from mlpar.cluster.simulated_cluster import SimulatedCluster

        return SimulatedCluster(2)

    def net():
        from mlpar.cluster.peer_network import PeerNetwork

        return PeerNetwork(4)

    b.update({
        "W": ring, "g": ring_graph, "topology": lambda: "ring", "n_nodes": lambda: 4,
        "rho_value": lambda: 0.5, "eps": lambda: 1e-3, "lr": lambda: 0.1, "n_rounds": lambda: 2,
        "kernels": lambda: r.standard_normal((2, 3, 3)), "width": lambda: 16, "n_tiles": lambda: 2,
        "schedule": schedule, "v": lambda: 2, "stage": lambda: 0, "n_stages": lambda: 2,
        "widths": lambda: [4, 4, 4], "n_layers": lambda: 4, "link": cost, "nbytes": lambda: 64,
        "latency": lambda: 0.0, "amdahl_fraction": lambda: 0.1, "reads": lambda: 2,
        "writes": lambda: 1, "seconds": lambda: 1.0, "naive": lambda: 2.0, "pipelined": lambda: 1.0,
        "measured": lambda: 1.0, "predicted": lambda: 1.0, "side": lambda: 64, "n_fits": lambda: 2,
        "repeat": lambda: 2, "cluster": cluster, "net": net, "eng": engine,
        "vectors": lambda: [np.arange(4.0) for _ in range(4)],
    })
    b["mlpar.algorithms.pipeline.simulator:value"] = lambda: 1.0
    b.update({"t_f": lambda: 1.0, "t_b": lambda: 2.0, "t_w": lambda: 1.0, "cost": cost,
              "records": lambda: [1, 2, 3, 4], "mapper": lambda: (lambda r: [(r % 2, r)]),
              "reducer": lambda: (lambda key, values: sum(values))})

    def mlp():
        from mlpar.algorithms.pipeline.staged_mlp import init_mlp

        return init_mlp([3, 4, 3], seed=0)

    b["mlpar.algorithms.pipeline.staged_mlp:params"] = mlp
    b["mlpar.cluster.cost_model:alpha"] = lambda: 1e-4  # seconds per message, not SVM's α
    b["mlpar.algorithms.pipeline.staged_mlp:Y"] = lambda: X.copy()  # 3 outputs, one per row
    return b


def _value(kind: str, case: str, baseline):
    import numpy as np

    simple = {"none": None, "str": "3", "str_no": "no", "int_2": 2, "float_1": 1.0,
              "int_3": 3, "float": 2.5, "bool": True, "object": object(), "unknown": "no-such"}
    if case in simple and not (kind == "array" and case == "str"):
        return simple[case]
    if kind in ("int", "seed"):
        return {"neg": -1, "zero": 0, "huge": 10**12, "nan": float("nan")}[case]
    if kind == "float":
        return {"nan": float("nan"), "inf": float("inf"), "neg": -1.0, "zero": 0.0,
                "huge": 1e300}[case]
    if kind == "array":
        base = np.asarray(baseline() if baseline else np.ones((4, 3)))
        if case == "str":
            return "abc"
        if case == "obj_array":
            return base.astype(object)
        if case == "str_array":
            return base.astype(str)
        if case == "empty":
            return base[:0]
        if case in ("nan", "inf"):
            out = base.astype(np.float64)
            if out.size:
                out.flat[0] = np.nan if case == "nan" else np.inf
            return out
        if case == "noncontig":
            big = np.repeat(base, 2, axis=-1) if base.ndim else base
            return big[..., ::2] if base.ndim else base
        if case == "zero_stride":
            return np.broadcast_to(base.flat[0] if base.size else 0.0, base.shape)
        if case == "huge_view":
            # 8 TB of virtual size, 8 real bytes: a function that copies or maps it all hangs
            return np.broadcast_to(np.array(1.0, dtype=base.dtype), (10**12,))
        if case == "fortran":
            return np.asfortranarray(base)
        if case == "int_dtype":
            return base.astype(np.int64)
        if case == "float32":
            return base.astype(np.float32)
        if case == "ndim_up":
            return base[None]
    raise KeyError((kind, case))


def _catalogue(report):
    baselines = _baselines()
    calls = {}
    for qual, func in _public_functions(report):
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            report["unbuildable"].append([qual, f"no signature: {exc}"])
            continue
        params = [p for p in sig.parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        missing = [p.name for p in params if p.default is p.empty and p.name not in baselines]
        if missing:
            report["unbuildable"].append([qual, f"no plausible value for {', '.join(missing)}"])
            continue
        for p in params:
            kind = kind_of(p)
            for case in CASES[kind]:
                s = strength(qual, p, kind, case)
                if s != "skip":
                    calls[f"{qual}|{p.name}|{kind}|{case}"] = s
    return calls, dict(_public_functions({"import_errors": []})), baselines


def _shm_entries() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def _empty_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not any(path.iterdir())
    except OSError:
        return True  # gone meanwhile


def _children():
    import psutil

    out = set()
    for c in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(c.cmdline()):
                out.add(c.pid)
        except psutil.Error:
            pass
    return out


def _close_joblib_pool() -> None:
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None and hasattr(executor, "terminate"):
        executor.terminate(kill_workers=False)
        reusable_executor._executor = None


def _run_one(func, qual, pname, kind, case, baselines):
    import numpy as np  # noqa: F401

    try:
        return _call(func, qual, pname, kind, case, baselines)
    except _Unbuilt as exc:
        return "unbuilt", str(exc)


class _Unbuilt(Exception):
    """The walker could not build this bad value for this parameter (reported, not a pass)."""


def _call(func, qual, pname, kind, case, baselines):
    kwargs = {}
    for p in inspect.signature(func).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name == pname:
            module = qual.rsplit(".", 1)[0]
            try:
                kwargs[p.name] = _value(kind, case, baselines.get(f"{module}:{pname}",
                                                                 baselines.get(pname)))
            except Exception as exc:  # noqa: BLE001
                raise _Unbuilt(f"{case} for {pname}: {type(exc).__name__}: {exc}") from None
        elif p.default is p.empty:
            module = qual.rsplit(".", 1)[0]
            kwargs[p.name] = baselines.get(f"{module}:{p.name}", baselines.get(p.name))()
    for extra, value in EXTRA_KWARGS.get(qual, {}).items():
        kwargs.setdefault(extra, value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = func(**kwargs)
            if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
                with result:  # a context manager checks its arguments when entered
                    pass
        except (ValueError, TypeError) as exc:
            text = str(exc)
            return ("named" if pname in text else "unclear"), f"{type(exc).__name__}: {text[:300]}"
        except Exception as exc:  # noqa: BLE001  (this is what is being measured)
            return "crashed", f"{type(exc).__name__}: {str(exc)[:300]}"
    for w in caught:
        if pname in str(w.message):
            return "warned", f"{w.category.__name__}: {str(w.message)[:300]}"
    return "accepted", ""


def child_main(argv):
    _child_setup()
    results_path = argv[1]  # argv: --run RESULTS
    keys = json.loads(sys.stdin.read())
    report = {"import_errors": [], "unbuildable": []}
    calls, functions, baselines = _catalogue(report)
    with open(results_path, "a") as out:
        if isinstance(keys, dict):  # the first child: it lists the catalogue and draws the sample
            report["calls"] = calls
            keys = chosen_keys(calls, keys["sample"], keys["only"])
            out.write(json.dumps({"listing": report, "keys": keys}) + "\n")
            out.flush()
        for key in keys:
            qual, pname, kind, case = key.split("|")
            out.write(json.dumps({"start": key}) + "\n")
            out.flush()
            shm_before, kids_before = _shm_entries(), _children()
            outcome, detail = _run_one(functions[qual], qual, pname, kind, case, baselines)
            _close_joblib_pool()  # its per-call /dev/shm folders live until the pool closes
            deadline = time.monotonic() + 3
            while (left := _children() - kids_before) and time.monotonic() < deadline:
                time.sleep(0.05)
            pid = str(os.getpid())
            # Empty joblib folders of this process are removed by joblib's exit handler (as in
            # tests/conftest.py); anything else with our pid in its name is left behind.
            new_shm = sorted(e for e in _shm_entries() - shm_before if pid in e
                             and not _empty_dir(Path("/dev/shm") / e))
            extra = []
            if left:
                extra.append(f"left {len(left)} child process(es)")
                import psutil

                for p in left:  # do not let one leak spoil the next calls' census
                    try:
                        psutil.Process(p).kill()
                    except psutil.Error:
                        pass
            if new_shm:
                extra.append(f"left /dev/shm entries {new_shm[:3]}")
            out.write(json.dumps({"done": key, "outcome": outcome, "detail": detail,
                                  "leaks": extra}) + "\n")
            out.flush()


# --- the parent: sampling, batches, time limits ---------------------------------------------


def _child_env(tmp: Path) -> dict:
    env = dict(os.environ)
    (tmp / "home").mkdir(exist_ok=True)
    (tmp / "tmp").mkdir(exist_ok=True)
    # the repository first, then whatever the path held (the GPU machine carries numpy there)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env.update(HOME=str(tmp / "home"), TMPDIR=str(tmp / "tmp"), MPLBACKEND="Agg",
               PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
    return env


def _stop(proc) -> None:
    """Kill a hung child, then give its pool's resource tracker and workers a moment to tidy
    up (they notice the parent is gone); only then kill what is left of its process group."""
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass


def run_calls(keys: list[str] | dict, tmp: Path, call_timeout: float) -> dict[str, dict]:
    """Run ``keys`` in children; a call silent for ``call_timeout`` s is hung (child killed).

    ``keys`` may instead be ``{"sample": ..., "only": ...}``: then the first child lists the
    catalogue and draws the sample itself (importing every module and building the catalogue
    takes seconds: once, not in a listing child and again in a calling one); the listing
    comes back under the key ``None`` and the drawn keys as ``listing["keys"]``."""
    results: dict = {}
    todo = keys if isinstance(keys, dict) else list(keys)
    while todo:
        path = tmp / f"results-{time.monotonic_ns()}.jsonl"
        proc = subprocess.Popen([sys.executable, __file__, "--run", str(path)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=tmp, env=_child_env(tmp),
                                text=True, start_new_session=True)
        proc.stdin.write(json.dumps(todo))
        proc.stdin.close()
        current, last, seen = None, time.monotonic(), 0
        startup = 120.0  # the first call also pays for imports and numba compilation
        while True:
            text = path.read_text() if path.exists() else ""
            lines = text.split("\n")[:-1]  # complete lines only: the child may be mid-write
            for line in lines[seen:]:
                rec = json.loads(line)
                if "listing" in rec:
                    results[None] = dict(rec["listing"], keys=rec["keys"])
                    todo = rec["keys"]
                elif "start" in rec:
                    current = rec["start"]
                else:
                    results[rec["done"]] = rec
                    current = None
                last = time.monotonic()
            if len(lines) > seen:
                startup = 0.0
            seen = len(lines)
            if proc.poll() is not None:
                if isinstance(todo, dict):
                    raise RuntimeError(f"listing the catalogue failed, exit code {proc.returncode}")
                if current is not None:
                    results[current] = {"done": current, "outcome": "crashed", "leaks": [],
                                        "detail": f"interpreter died, exit code {proc.returncode}"}
                break
            if time.monotonic() - last > call_timeout + startup:
                _stop(proc)
                if isinstance(todo, dict):
                    raise RuntimeError("listing the catalogue gave no answer")
                if current is not None:
                    results[current] = {"done": current, "outcome": "hung", "leaks": [],
                                        "detail": f"no answer in {call_timeout:g} s"}
                else:  # died before starting a call: do not loop forever
                    for k in todo:
                        results.setdefault(k, {"done": k, "outcome": "crashed", "leaks": [],
                                               "detail": "child did not start"})
                break
            time.sleep(0.05)
        todo = [k for k in todo if k not in results]
    return results


def verdict(key: str, strength_: str, rec: dict) -> str:
    """'ok' or the failure class: hung, crashed, accepted (hard value), unclear, leaked."""
    outcome = rec["outcome"]
    if outcome == "unbuilt":
        return "unbuilt"  # reported as a warning below, never counted as a pass
    if outcome in ("hung", "crashed", "unclear"):
        return outcome
    if rec["leaks"]:
        return "leaked"
    if outcome == "accepted" and strength_ == HARD:
        return "accepted"
    return "ok"


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, cwd=REPO).stdout


@pytest.fixture(scope="module")
def walk():
    """The catalogue and the sample's outcomes, from one child that lists and then calls (and
    more only after a hung call), with the repository's git status before and after."""
    sample = os.environ.get("MLPAR_BAD_INPUT_SAMPLE", "120")
    # generous: a first call may compile numba code on a loaded two-core machine
    call_timeout = float(os.environ.get("MLPAR_BAD_INPUT_TIMEOUT", "20"))
    only = os.environ.get("MLPAR_BAD_INPUT_ONLY")  # comma-separated module prefixes
    status_before = _git_status()
    with tempfile.TemporaryDirectory(prefix="mlpar-bad-input-") as tmp:
        results = run_calls({"sample": sample, "only": only}, Path(tmp), call_timeout)
    listing = results.pop(None)
    return {"listing": listing, "keys": listing.pop("keys"), "results": results,
            "status": (status_before, _git_status())}


@pytest.fixture(scope="module")
def listing(walk):
    return walk["listing"]


def _draw(key: str) -> str:
    """A fixed pseudo-random rank for one call, from its own name only."""
    return hashlib.sha256(f"mlpar-bad-input|{key}".encode()).hexdigest()


def sample_keys(calls: dict, sample: str) -> list[str]:
    """All keys, or a seeded sample: three hard values (quick refusals) to one soft value
    (which may legitimately run the function's whole default workload).

    Each call's rank comes from a hash of its own name, and the sample takes the lowest ranks:
    adding a function to the package adds its calls to the draw without reshuffling the rest,
    so a new module cannot silently swap which old calls a CI run checks.
    """
    keys = sorted(calls)
    if sample == "all":
        return keys
    hard = sorted((k for k in keys if calls[k] == HARD), key=_draw)
    soft = sorted((k for k in keys if calls[k] == SOFT), key=_draw)
    n_soft = min(int(sample) // 4, len(soft))
    return sorted(hard[:max(int(sample) - n_soft, 0)] + soft[:n_soft])


def chosen_keys(calls: dict, sample: str, only: str | None) -> list[str]:
    """``sample_keys``, kept to the modules ``only`` names (comma-separated prefixes) if set."""
    keys = sample_keys(calls, sample)
    if only:
        keys = [k for k in keys if k.startswith(tuple(only.split(",")))]
    return keys


def test_public_functions_refuse_bad_arguments(walk):
    listing, keys, results = walk["listing"], walk["keys"], walk["results"]
    calls = listing["calls"]
    assert keys == chosen_keys(calls, os.environ.get("MLPAR_BAD_INPUT_SAMPLE", "120"),
                               os.environ.get("MLPAR_BAD_INPUT_ONLY"))
    for module, error in listing["import_errors"]:
        warnings.warn(f"bad-input walker could not import {module}: {error}", stacklevel=1)
    for qual, reason in listing["unbuildable"]:
        warnings.warn(f"bad-input walker skipped {qual}: {reason}", stacklevel=1)

    counts = collections.Counter()
    failures, known_hit, known_seen = [], set(), set()
    for key in keys:
        v = verdict(key, calls[key], results[key])
        counts[v] += 1
        qual, param = key.split("|")[:2]
        module = qual.rsplit(".", 1)[0]
        known = next((k for k in (qual, f"{qual}|{param}", module) if k in KNOWN), None)
        if known:
            known_seen.add(known)
        if v == "unbuilt":
            warnings.warn(f"bad-input walker could not build {key}: {results[key]['detail']}",
                          stacklevel=1)
            continue
        if v != "ok":
            if known:
                known_hit.add(known)
            else:
                failures.append(f"{v:9} {key}  {results[key]['detail']} {results[key]['leaks']}")
    summary = (f"{len(calls)} calls in the catalogue ({len(keys)} run): "
               + ", ".join(f"{k} {counts[k]}" for k in
                           ("ok", "hung", "crashed", "accepted", "unclear", "leaked",
                            "unbuilt")))
    print(summary)
    if report := os.environ.get("MLPAR_BAD_INPUT_REPORT"):
        Path(report).write_text(json.dumps(
            {"summary": summary, "counts": counts, "results": results, "strength": calls,
             "unbuildable": listing["unbuildable"], "import_errors": listing["import_errors"]},
            indent=1))
    for qual in sorted(known_seen - known_hit):
        warnings.warn(f"{qual} now passes the bad-input walk: remove it from KNOWN",
                      stacklevel=1)
    status_before, status_after = walk["status"]
    assert status_after == status_before, "a call wrote files inside the repository"
    assert not failures, summary + "\n" + "\n".join(sorted(failures)[:80])


def test_walker_finds_every_module_and_reports_what_it_skips(listing):
    """The catalogue covers the package; nothing is dropped without a line saying why."""
    walked = {key.split("|")[0].rsplit(".", 1)[0] for key in listing["calls"]}
    for needed in ("mlpar.cpu.spinlock", "mlpar.cpu.gil", "mlpar.core.splits",
                   "mlpar.algorithms.svm.smo", "mlpar.algorithms.distributed.mapreduce"):
        assert needed in walked, f"{needed} is not walked"
    assert not listing["import_errors"], listing["import_errors"]
    for reason in [*EXCLUDED_MODULES.values(), *EXCLUDED_PREFIXES.values(),
                   *EXCLUDED_FUNCTIONS.values()]:
        assert len(reason) > 10, "every exclusion needs a reason"


if __name__ == "__main__":
    child_main(sys.argv[1:])
