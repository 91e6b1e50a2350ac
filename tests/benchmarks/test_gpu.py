"""The "gpu" benchmark family: it runs on the simulator where there is no GPU and says so."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from mlpar.benchmarks import gpu as bench

FIGURES = {
    "backend": "gpu", "device": "Some GPU", "dtype": "float32", "n": 1024,
    "product_kernel_gbps": 500.0, "device_copy_gbps": 800.0, "product_share_of_copy": 0.625,
    "product_to_device_s": 1e-3, "product_kernel_s": 1e-4, "product_to_host_s": 5e-4,
    "product_transfer_share": 0.9375, "link_gbps": 12.0, "matmul_side": 512, "tile": 16,
    "tiled_matmul_gflops": 900.0, "naive_matmul_gflops": 300.0, "matmul_transfer_share": 0.5,
    "register_matmul_gflops": 2000.0, "wide_matmul_gflops": 4000.0,
    "wide_shape": "block 128×128 of C, k-step 8, 8×8 per thread (256 threads)",
    "cublas_via": None, "cublas_gflops": None, "tiled_share_of_cublas": None,
    "wide_share_of_cublas": None, "kernel_timer": "host clock (simulator)", "ladder": [],
    "resources": [], "pageable_to_device_gbps": 6.0, "pinned_to_device_gbps": 24.0,
    "pageable_to_host_gbps": 5.0, "pinned_to_host_gbps": 25.0,
    "pinned_product_transfer_share": 0.8, "overlap_chunks": 4, "overlap_correct": True,
    "overlap_speedup": 1.6,
}


def test_quick_run_without_gpu_is_labelled_simulator():
    # numba is imported first, as `python -m mlpar.bench all` does through other families:
    # run() must notice that the simulator can no longer be chosen here and measure in a
    # fresh interpreter instead.
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["CUDA_VISIBLE_DEVICES"] = "-1"
    code = ("import json, numba; from mlpar.benchmarks import gpu as b; f = b.run(quick=True); "
            "print(json.dumps(f)); print(b.report(f))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.splitlines()[0])
    assert figures["backend"] == "simulator" and figures["cublas_gflops"] is None
    assert set(figures) == set(FIGURES)
    assert figures["product_kernel_gbps"] > 0 and 0 < figures["product_transfer_share"] < 1
    assert figures["overlap_correct"] is True and figures["wide_matmul_gflops"] > 0
    assert "SIMULATOR" in done.stdout and "not GPU figures" in done.stdout


def test_report_on_a_gpu_without_cublas_bindings():
    text = bench.report(FIGURES)
    assert text.splitlines()[0] == "GPU: Some GPU"
    assert "62.5 % of device copy" in text
    assert "neither CuPy nor PyTorch" in text
    with_blas = dict(FIGURES, cublas_via="CuPy (cuBLAS)", cublas_gflops=1800.0,
                     tiled_share_of_cublas=0.5, wide_share_of_cublas=4000.0 / 1800.0)
    assert ("CuPy (cuBLAS): 1.8e+03 GFLOP/s; tiled reaches 50 %, step 3 222 % of it"
            in bench.report(with_blas))
    assert "from pinned: 24 GB/s to device" in text and "4 chunks on streams: 1.6×" in text
    assert "register-blocked 2e+03, step 3 4e+03 GFLOP/s (block 128×128" in text


def test_bad_arguments():
    with pytest.raises(TypeError, match="quick"):
        bench.run(quick="yes")
    with pytest.raises(TypeError, match="figures"):
        bench.report([1, 2])
    with pytest.raises(ValueError, match="backend"):
        bench.report(dict(FIGURES, backend="tpu"))


def test_report_prints_the_ladder_the_cublas_precision_and_the_occupancy():
    figures = dict(FIGURES, kernel_timer="CUDA events", ladder=[
        {"side": 1024, "naive": 500.0, "tiled": 1000.0, "register": 4000.0, "wide": 8000.0,
         "cublas_via": "PyTorch 2.11 (cuBLAS, FP32 on CUDA cores, TF32 off)",
         "cublas_fp32": 16000.0, "cublas_tf32_via": "x", "cublas_tf32": 90000.0}],
        resources=[{"kernel": "wide", "threads": 256, "registers": 126, "shared_bytes": 8192,
                    "occupancy": 0.25, "limiter": "registers"}])
    text = bench.report(figures)
    assert "kernel times by: CUDA events" in text
    assert ("1024² fp32 GFLOP/s (% of cuBLAS FP32): naive 500 (3.12 %), tiled 1000 (6.25 %), "
            "register 4000 (25 %), wide 8000 (50 %); PyTorch 2.11 (cuBLAS, FP32 on CUDA cores, "
            "TF32 off) 1.6e+04; TF32 9e+04") in text
    assert "wide: 256 threads/block, 126 registers/thread, 8192 B shared: occupancy 25 % " \
           "(registers)" in text


def test_event_seconds_is_nan_on_the_simulator_and_checks_its_arguments(fresh_python):
    # In a fresh interpreter with the simulator chosen: this process may have imported numba.
    result = fresh_python(textwrap.dedent('''
        import json, math, os
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        from mlpar.gpu import backend
        backend.choose_cuda_backend("simulator")
        from mlpar.gpu import cuda_kernels as ck
        out = {"nan": math.isnan(ck.event_seconds(lambda: None, 2))}
        for name, call in (("launch", lambda: ck.event_seconds(5)),
                           ("launches", lambda: ck.event_seconds(lambda: None, 2, launches=0))):
            try:
                call()
                out[name] = "accepted"
            except (TypeError, ValueError) as err:
                out[name] = str(err)
        print("RESULT " + json.dumps(out))
    '''))
    assert result["nan"] is True
    assert result["launch"].startswith("launch") and result["launches"].startswith("launches")
