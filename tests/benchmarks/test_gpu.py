"""The "gpu" benchmark family: it runs on the simulator where there is no GPU and says so."""

import json
import os
import subprocess
import sys

import pytest

from mlpar.benchmarks import gpu as bench

FIGURES = {
    "backend": "gpu", "device": "Some GPU", "dtype": "float32", "n": 1024,
    "product_kernel_gbps": 500.0, "device_copy_gbps": 800.0, "product_share_of_copy": 0.625,
    "product_to_device_s": 1e-3, "product_kernel_s": 1e-4, "product_to_host_s": 5e-4,
    "product_transfer_share": 0.9375, "link_gbps": 12.0, "matmul_side": 512, "tile": 16,
    "tiled_matmul_gflops": 900.0, "naive_matmul_gflops": 300.0, "matmul_transfer_share": 0.5,
    "cublas_via": None, "cublas_gflops": None, "tiled_share_of_cublas": None,
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
    assert "SIMULATOR" in done.stdout and "not GPU figures" in done.stdout


def test_report_on_a_gpu_without_cublas_bindings():
    text = bench.report(FIGURES)
    assert text.splitlines()[0] == "GPU: Some GPU"
    assert "62.5 % of device copy" in text
    assert "neither CuPy nor PyTorch" in text
    with_blas = dict(FIGURES, cublas_via="CuPy (cuBLAS)", cublas_gflops=1800.0,
                     tiled_share_of_cublas=0.5)
    assert "CuPy (cuBLAS): 1.8e+03 GFLOP/s; tiled reaches 50 % of it" in bench.report(with_blas)


def test_bad_arguments():
    with pytest.raises(TypeError, match="quick"):
        bench.run(quick="yes")
    with pytest.raises(TypeError, match="figures"):
        bench.report([1, 2])
    with pytest.raises(ValueError, match="backend"):
        bench.report(dict(FIGURES, backend="tpu"))
