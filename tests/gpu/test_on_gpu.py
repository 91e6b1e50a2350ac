"""Lesson 10 on a real GPU: kernels, occupancy warnings, pinned memory, streams, the benchmark.

Marked ``gpu`` and skipped where ``mlpar.gpu.backend.gpu_present()`` finds no NVIDIA GPU (CI,
the simulator machines); on a GPU they run in a fresh interpreter that chooses the GPU path
before numba is imported (pytest may already have imported numba for other tests).
"""

import textwrap

import pytest

from mlpar.gpu import backend

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not backend.gpu_present(),
                       reason="needs an NVIDIA GPU and driver; none here (no /dev/nvidiaN, no "
                              "working nvidia-smi), so lesson 10 runs on the simulator"),
]

SCRIPT = textwrap.dedent('''
    import json, warnings
    from mlpar.gpu import backend as gpu
    gpu.choose_cuda_backend("gpu")
    import numpy as np
    from mlpar.gpu import cuda_kernels as ck, matmul as mm, transfers as tr
    from mlpar.benchmarks import gpu as bench

    rng = np.random.default_rng(0)
    out = {"backend": ck.BACKEND}
    x = rng.standard_normal(1 << 20).astype(np.float32)
    y = rng.standard_normal(1 << 20).astype(np.float32)
    # big enough that every kernel's grid has >= 128 blocks (numba's low-occupancy threshold),
    # and sides that are not multiples of any tile
    a = rng.standard_normal((2048, 260)).astype(np.float32)
    b = rng.standard_normal((260, 1040)).astype(np.float32)
    close = lambda got, want: bool(np.allclose(got, want, rtol=1e-4, atol=1e-4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out["product"] = bool(np.array_equal(ck.elementwise_product(x, y), x * y))
        out["sum"] = bool(np.isclose(ck.reduce_sum(x), x.sum(dtype=np.float64), rtol=1e-4))
        out["tiled"] = close(ck.tiled_matmul(a, b), a @ b)
        out["register"] = close(mm.register_blocked_matmul(a, b), a @ b)
        out["wide"] = close(mm.wide_matmul(a, b), a @ b)
        out["tuned shapes"] = [close(mm.wide_matmul(a, b, shape=s), a @ b) for s in mm.TUNE_SHAPES]
        timed = tr.time_product(x, y, repeat=2)
        out["timing shares"] = 0 < timed.transfer_share < 1
        ov = tr.overlapped_product(x, y, chunks=4, repeat=2)
        out["overlap"] = bool(np.array_equal(ov.result, x * y))
        out["pinned"] = tr.link_rates(1 << 24, repeat=3).pinned_to_device > 0
    # launches that fill the device (and the reduction's one-block step) print nothing
    out["warnings at full grids"] = [str(w.message) for w in caught]
    shown = ck.occupancy_warnings(3, 128)
    out["small grid warns"] = len(shown) == 1 and "Grid size 3" in shown[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ck.small_grids():
            ck.elementwise_product(x[:300], y[:300], blocks=3)
    out["small_grids silences"] = [str(w.message) for w in caught]
    f = bench.run(quick=True)
    out["bench"] = [f["backend"], f["overlap_correct"], f["wide_matmul_gflops"] > 0]
    print("RESULT " + json.dumps(out))
''')


@pytest.fixture(scope="module")
def results(fresh_python):
    return fresh_python(SCRIPT, timeout=600)


def test_kernels_equal_numpy_on_the_gpu(results):
    assert results["backend"] == "gpu"
    for case in ("product", "sum", "tiled", "register", "wide", "timing shares", "overlap",
                 "pinned"):
        assert results[case] is True, case
    assert results["tuned shapes"] == [True] * len(results["tuned shapes"])


def test_occupancy_warning_appears_only_where_the_lesson_shows_it(results):
    assert results["warnings at full grids"] == []
    assert results["small grid warns"] is True
    assert results["small_grids silences"] == []


def test_benchmark_runs_on_the_gpu(results):
    assert results["bench"] == ["gpu", True, True]
