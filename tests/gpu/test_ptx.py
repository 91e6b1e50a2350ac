"""Lesson 10 on numba's real CUDA target, checked without a GPU: kernels compile, warnings.

Every lesson-10 kernel compiles for a real GPU (sm_90), and ``small_grids`` silences the very
occupancy warning numba's real target emits (it warns when a launch is configured, before any
device is touched).

The simulator runs kernels as Python, so it never type-checks them for the CUDA target: a
kernel can pass every simulator test and still fail to compile on a GPU. numba can compile to
PTX without a device when it finds NVIDIA's NVVM library (``pip install nvidia-cuda-nvcc-cu12``
and ``CUDA_HOME`` pointing at its ``nvidia/cuda_nvcc`` folder, or a CUDA toolkit). Where it
cannot, these tests are skipped with that reason. They also check what the compiler made of
the float32 kernels: no float64 arithmetic (a literal ``0`` in a padded load used to force it)
and, where ``ptxas`` is on hand, no register spills.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent('''
    import json, os, re, subprocess, sys, tempfile
    import numpy as np
    from numba import cuda, float32, float64
    from numba.cuda.cudadrv import nvvm
    if not nvvm.is_available():
        print("RESULT " + json.dumps({"nvvm": False}))
        sys.exit(0)
    from mlpar.gpu import backend
    backend.choose_cuda_backend = lambda prefer="auto": "gpu"  # compile only: no device needed
    from mlpar.gpu import cuda_kernels as ck, matmul as mm

    py = lambda k: getattr(k, "py_func", k)
    ptxas = sys.argv[1] if len(sys.argv) > 1 else ""
    out = {"nvvm": True, "kernels": {}}
    for dt, nb in ((np.float32, float32), (np.float64, float64)):
        v, m = nb[::1], nb[:, ::1]
        jobs = [("product", ck.product_kernel, (v, v, v)), ("sum", ck.sum_kernel(128, dt), (v, v)),
                ("naive", ck.naive_matmul_kernel(dt), (m, m, m)),
                ("tiled", ck.tiled_matmul_kernel(16, dt), (m, m, m))]
        jobs.append(("register", mm.register_blocked_kernel(mm.REGISTER_SHAPE, dt), (m, m, m)))
        # every shape tune() may pick in float32, the default one in float64 (compiling is slow)
        for s in dict.fromkeys([mm.WIDE_SHAPE, *(mm.TUNE_SHAPES if dt == np.float32 else ())]):
            jobs.append((f"wide {s.bm}x{s.bn}x{s.bk}", mm.wide_kernel(s, dt), (m, m, m)))
        for name, kernel, sig in jobs:
            ptx, _ = cuda.compile_ptx(py(kernel), sig, cc=(9, 0))
            spills = registers = None
            if ptxas:
                with tempfile.TemporaryDirectory() as tmp:
                    src = os.path.join(tmp, "k.ptx")
                    # an older ptxas than the NVVM that wrote the PTX refuses its version line only
                    open(src, "w").write(ptx.replace(".version 9.0", ".version 8.0"))
                    done = subprocess.run([ptxas, "-arch=sm_90", "-v", src, "-o",
                                           os.path.join(tmp, "k.cubin")], capture_output=True,
                                          text=True)
                    spills = (done.stderr.count(" 0 bytes spill stores")
                              if done.returncode == 0 else done.stderr[-300:])
                    used = re.search(r"Used (\\d+) registers", done.stderr)
                    registers = int(used.group(1)) if used else None
            out["kernels"][f"{np.dtype(dt).name} {name}"] = {
                "f64": ptx.count(".f64"), "spills": spills, "registers": registers,
                "vector_global_loads": ptx.count("ld.global.v"),
                "global_loads": ptx.count("ld.global.")}
    print("RESULT " + json.dumps(out))
''')


@pytest.fixture(scope="module")
def compiled():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    home = os.environ.get("CUDA_HOME", "")
    ptxas = shutil.which("ptxas") or (str(Path(home, "bin", "ptxas")) if home else "")
    args = [ptxas] if ptxas and Path(ptxas).exists() else []
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads([s for s in done.stdout.splitlines() if s.startswith("RESULT ")][-1][7:])
    if not result["nvvm"]:
        pytest.skip("numba finds no NVVM library to compile for a GPU here: pip install "
                    "nvidia-cuda-nvcc-cu12 and set CUDA_HOME to its nvidia/cuda_nvcc folder")
    return result["kernels"]


def test_every_kernel_compiles_for_the_gpu(compiled):
    steps = {name.split()[1] for name in compiled}
    assert steps == {"product", "sum", "naive", "tiled", "register", "wide"}
    assert len(compiled) == (4 + 1 + 5) + (4 + 1 + 1)  # float32 tries 5 shapes, float64 one


def test_float32_kernels_do_no_float64_arithmetic(compiled):
    doubles = {name: k["f64"] for name, k in compiled.items() if name.startswith("float32")}
    assert doubles == dict.fromkeys(doubles, 0)


def test_no_register_spills_where_ptxas_can_tell(compiled):
    checked = {name: k["spills"] for name, k in compiled.items() if k["spills"] is not None}
    if not checked:
        pytest.skip("no ptxas here (it comes with nvidia-cuda-nvcc-cu12 or a CUDA toolkit)")
    assert checked == dict.fromkeys(checked, 1), checked  # one kernel each, "0 bytes spill"


def test_small_grids_silences_numbas_own_occupancy_warning_and_nothing_more():
    # numba's real CUDA target warns when a launch is configured (kernel[grid, block]), before
    # any device is touched: so the filter is tested against the warning numba really emits.
    code = textwrap.dedent('''
        import json, re, warnings
        from mlpar.gpu import backend
        backend.choose_cuda_backend = lambda prefer="auto": "gpu"
        from mlpar.gpu import cuda_kernels as ck

        def seen(grid, quiet):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if quiet:
                    with ck.small_grids():
                        ck.product_kernel[grid, 128]
                else:
                    ck.product_kernel[grid, 128]
            # numba-cuda 0.30 wraps the text in a terminal's bold escape: compare the text
            text = [re.sub(r"\\x1b\\[[0-9;]*m", "", str(w.message)) for w in caught]
            return [f"{w.category.__name__}: {t}" for w, t in zip(caught, text)]

        print(json.dumps([seen(3, False), seen(3, True), seen(132 * 32, False),
                          seen((8, 8), False)]))
    ''')
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    small, quiet, full, grid_2d = json.loads(done.stdout.strip().splitlines()[-1])
    assert small == ["NumbaPerformanceWarning: Grid size 3 will likely result in GPU "
                     "under-utilization due to low occupancy."]
    assert quiet == [] and full == []
    assert grid_2d == ["NumbaPerformanceWarning: Grid size 64 will likely result in GPU "
                       "under-utilization due to low occupancy."]


def test_the_lessons_register_table_is_what_ptxas_reports(compiled):
    # Lesson 10 prints occupancy from these counts on the simulator: they must be the compiler's.
    from mlpar.gpu import backend

    names = {"product": "float32 product", "naive": "float32 naive",
             "tiled 16×16": "float32 tiled", "register 64×64, 4×4": "float32 register",
             "wide 128×128, 8×8": "float32 wide 128x128x8"}
    found = {label: compiled[key]["registers"] for label, key in names.items()}
    if None in found.values():
        pytest.skip("no ptxas here (it comes with nvidia-cuda-nvcc-cu12 or a CUDA toolkit)")
    assert found == backend.PTXAS_REGISTERS_SM90


def test_step_3_issues_scalar_global_loads_as_the_lesson_says(compiled):
    # The lesson says step 3's runs of 4 still compile to scalar loads: if numba ever emits
    # ld.global.v4 for them, this fails and the lesson's text must change with it.
    wide = {name: k for name, k in compiled.items() if name.startswith("float32 wide")}
    assert wide and all(k["vector_global_loads"] == 0 and k["global_loads"] > 0
                        for k in wide.values())
