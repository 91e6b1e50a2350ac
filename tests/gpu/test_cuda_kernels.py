"""mlpar.gpu.cuda_kernels on numba's CUDA simulator, whatever this test process imported before.

numba picks the simulator only if told before its first import, and pytest may already have
imported numba for other tests; so one fresh interpreter runs every kernel (tiny sizes: the
simulator runs each CUDA thread as a Python thread) and reports back as JSON.
"""

import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import json
    from mlpar.gpu import backend as gpu
    gpu.choose_cuda_backend("simulator")
    import numpy as np
    from mlpar.gpu import cuda_kernels as ck
    from mlpar.gpu import matmul as mm
    from mlpar.gpu import transfers as tr

    rng = np.random.default_rng(0)
    out = {"backend": ck.BACKEND}

    def close(got, want, dtype):
        tol = 1e-5 if dtype == np.float32 else 1e-12
        return bool(got.dtype == want.dtype and got.shape == want.shape
                    and np.allclose(got, want, rtol=tol, atol=tol))

    for dtype in (np.float64, np.float32):
        name = np.dtype(dtype).name
        x = rng.standard_normal(100).astype(dtype)
        y = rng.standard_normal(100).astype(dtype)
        # 2 blocks of 32 threads over 100 elements: every thread loops 1 or 2 times
        out[f"product {name} grid-stride"] = close(
            ck.elementwise_product(x, y, threads_per_block=32, blocks=2), x * y, dtype)
        out[f"product {name} default grid"] = close(ck.elementwise_product(x, y), x * y, dtype)
        s = ck.reduce_sum(x, threads_per_block=32, blocks=2)
        out[f"sum {name}"] = close(np.asarray(s), np.asarray(x.sum(dtype=np.float64),
                                                             dtype=dtype), dtype)
    one = np.array([2.5])
    out["product n=1"] = close(ck.elementwise_product(one, one, blocks=3), one * one, np.float64)
    out["sum n=1"] = float(ck.reduce_sum(one, threads_per_block=32)) == 2.5
    # more blocks than elements: the idle threads must add nothing
    out["sum idle threads"] = float(ck.reduce_sum(np.ones(40), threads_per_block=32,
                                                  blocks=3)) == 40.0

    shapes = {"5x3 @ 3x6 tile 4": ((5, 3), (3, 6), 4), "4x4 @ 4x4 tile 2": ((4, 4), (4, 4), 2),
              "7x9 @ 9x2 tile 4": ((7, 9), (9, 2), 4), "1x1 @ 1x1 tile 4": ((1, 1), (1, 1), 4)}
    for label, (sa, sb, tile) in shapes.items():
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        out[f"tiled {label}"] = close(ck.tiled_matmul(a, b, tile=tile), a @ b, np.float64)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    out["tiled float32 6x5 @ 5x3 tile 4"] = close(ck.tiled_matmul(a, b, tile=4), a @ b,
                                                  np.float32)
    out["naive 5x3 @ 3x6"] = close(ck.naive_matmul(a[:5, :3].copy(), b[:3, :].copy(), tile=4),
                                   a[:5, :3] @ b[:3, :], np.float32)

    tp = tr.time_product(x, y, threads_per_block=32, repeat=1)
    tm = tr.time_matmul(a, b, tile=4, repeat=1)
    out["timings"] = [tp.backend, tp.to_device_s > 0, tp.kernel_s > 0, tp.to_host_s > 0,
                      0 < tp.transfer_share < 1, tp.link_bytes == 3 * x.nbytes,
                      tm.flops == 2 * 6 * 5 * 3, tm.link_bytes == (30 + 15 + 18) * 4,
                      "simulator" in repr(tm)]

    # steps 2 and 3 of the matmul: default and odd shapes, sizes not multiples of the tiles
    for label, (sa, sb) in {"16x16 @ 16x16": ((16, 16), (16, 16)),
                            "13x11 @ 11x9": ((13, 11), (11, 9)),
                            "20x7 @ 7x33": ((20, 7), (7, 33)), "1x1 @ 1x1": ((1, 1), (1, 1))}.items():
        a2, b2 = rng.standard_normal(sa), rng.standard_normal(sb)
        for shape in (None, gpu.Blocking(8, 16, 4, 2, 4)):
            tag = "default" if shape is None else "8x16"
            out[f"register {label} {tag}"] = close(mm.register_blocked_matmul(a2, b2, shape=shape),
                                                   a2 @ b2, np.float64)
            out[f"wide {label} {tag}"] = close(mm.wide_matmul(a2, b2, shape=shape), a2 @ b2,
                                               np.float64)
    out["wide float32"] = close(mm.wide_matmul(a, b), a @ b, np.float32)
    out["register float32"] = close(mm.register_blocked_matmul(a, b), a @ b, np.float32)
    out["gflops"] = [mm.kernel_gflops(s, a, b, tile=4, repeat=1) > 0 for s in mm.STEPS]
    out["cublas on simulator"] = list(mm.cublas_gflops(a, b, repeat=1)) == [None, None]
    small = [gpu.Blocking(8, 16, 4, 2, 4), mm.SIMULATOR_SHAPE]
    tuned = mm.tune(a, b, shapes=small, repeat=1)  # checked, not ranked, on the simulator
    out["tune"] = [[s == t for (s, _), t in zip(tuned, small)], [r != r for _, r in tuned]]

    # pinned memory and streams: correct on the simulator (their times are not GPU times)
    xo = rng.standard_normal(103)
    yo = rng.standard_normal(103)
    ov = tr.overlapped_product(xo, yo, chunks=3, threads_per_block=32, repeat=1)
    out["overlap"] = [bool(np.array_equal(ov.result, xo * yo)), ov.chunks, ov.speedup > 0,
                      "simulator" in repr(ov)]
    lr = tr.link_rates(1 << 12, repeat=1)
    out["link rates"] = [lr.nbytes == 4096, lr.pinned_gain > 0, "simulator" in repr(lr)]
    tpin = tr.time_product(xo, yo, threads_per_block=32, repeat=1, pinned=True)
    out["pinned timing"] = 0 < tpin.transfer_share < 1
    tmpin = tr.time_matmul(a, b, tile=4, repeat=1, pinned=True)
    out["pinned matmul timing"] = [0 < tmpin.transfer_share < 1, tmpin.link_bytes == tm.link_bytes]
    out["device copy on the simulator"] = tr.device_copy_gbps(1 << 12, repeat=1) > 0
    out["chunks"] = tr.chunk_bounds(10, 3)
    out["simulator never warns"] = ck.occupancy_warnings(3, 32) == []

    # small_grids silences numba's occupancy warning, of numba's class and of numba-cuda's own
    # copy of it (faked here), and nothing else; outside the block the warning is back
    import re, sys, types, warnings
    fake = types.ModuleType("numba.cuda.core.errors")
    fake.NumbaPerformanceWarning = type("NumbaPerformanceWarning", (UserWarning,), {})
    sys.modules["numba.cuda.core.errors"] = fake
    ck.PERFORMANCE_WARNINGS = ck._performance_warning_classes()
    text = "Grid size 3 will likely result in GPU under-utilization due to low occupancy."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ck.small_grids():
            for category in ck.PERFORMANCE_WARNINGS:
                warnings.warn(text, category)
                warnings.warn("Host array used in CUDA kernel will incur copy overhead",
                              category)
            warnings.warn("something else", UserWarning)
        warnings.warn(text, fake.NumbaPerformanceWarning)
    # numba-cuda 0.30 wraps a NumbaWarning's text in a terminal's bold escape: compare the text
    plain = lambda w: re.sub(r"\\x1b\\[[0-9;]*m", "", str(w.message))
    out["small grids"] = [len(ck.PERFORMANCE_WARNINGS), [plain(w)[:10] for w in caught]]

    f = np.zeros(8)
    bad = {
        "non-contiguous": lambda: ck.elementwise_product(np.zeros(16)[::2], f),
        "shapes": lambda: ck.elementwise_product(f, np.zeros(9)),
        "dtypes": lambda: ck.elementwise_product(f, f.astype(np.float32)),
        "integers": lambda: ck.reduce_sum(np.arange(8)),
        "2-D for product": lambda: ck.elementwise_product(f.reshape(2, 4), f.reshape(2, 4)),
        "empty": lambda: ck.reduce_sum(np.zeros(0)),
        "block 48": lambda: ck.elementwise_product(f, f, threads_per_block=48),
        "block 0": lambda: ck.elementwise_product(f, f, threads_per_block=0),
        "block 96 sum": lambda: ck.reduce_sum(f, threads_per_block=96),
        "blocks 0": lambda: ck.elementwise_product(f, f, blocks=0),
        "inner mismatch": lambda: ck.tiled_matmul(np.zeros((3, 4)), np.zeros((5, 2))),
        "matmul 1-D": lambda: ck.tiled_matmul(f, f),
        "matmul transposed view": lambda: ck.tiled_matmul(np.zeros((4, 3)).T, np.zeros((4, 2))),
        "tile 33": lambda: ck.tiled_matmul(np.zeros((2, 2)), np.zeros((2, 2)), tile=33),
        "repeat 0": lambda: tr.time_product(f, f, repeat=0),
        "dtype None": lambda: ck.sum_kernel(32, None),
        "dtype int": lambda: ck.tiled_matmul_kernel(4, np.int64),
        "blocks huge": lambda: ck.elementwise_product(f, f, blocks=10**12),
        "nbytes huge": lambda: tr.device_copy_gbps(10**15),
        "shape not Blocking": lambda: mm.wide_matmul(np.zeros((2, 2)), np.zeros((2, 2)),
                                                     shape=(16, 16, 4, 4, 4)),
        "shape tm": lambda: mm.register_blocked_matmul(
            np.zeros((2, 2)), np.zeros((2, 2)), shape=gpu.Blocking(16, 16, 4, 3, 4)),
        "wide bk": lambda: mm.wide_matmul(np.zeros((2, 2)), np.zeros((2, 2)),
                                          shape=gpu.Blocking(16, 16, 6, 4, 4)),
        "chunks": lambda: tr.overlapped_product(f, f, chunks=9),
        "step": lambda: mm.kernel_gflops("cublas", f, f),
    }
    errors = {}
    for label, func in bad.items():
        try:
            func()
            errors[label] = ["no error", ""]
        except Exception as e:
            errors[label] = [type(e).__name__, str(e)]
    out["errors"] = errors
    print("RESULT " + json.dumps(out))
''')


@pytest.fixture(scope="module")
def results(fresh_python):
    return fresh_python(SCRIPT, timeout=600)


def test_runs_on_the_simulator(results):
    assert results["backend"] == "simulator"


@pytest.mark.parametrize("case", [
    "product float64 grid-stride", "product float64 default grid", "sum float64",
    "product float32 grid-stride", "product float32 default grid", "sum float32",
    "product n=1", "sum n=1", "sum idle threads",
])
def test_elementwise_and_reduction_equal_numpy(results, case):
    assert results[case] is True


@pytest.mark.parametrize("case", [
    "tiled 5x3 @ 3x6 tile 4", "tiled 4x4 @ 4x4 tile 2", "tiled 7x9 @ 9x2 tile 4",
    "tiled 1x1 @ 1x1 tile 4", "tiled float32 6x5 @ 5x3 tile 4", "naive 5x3 @ 3x6",
])
def test_matmul_equals_numpy_including_sizes_not_multiple_of_tile(results, case):
    assert results[case] is True


def test_offload_timing_separates_stages(results):
    assert results["timings"] == ["simulator"] + [True] * 8


@pytest.mark.parametrize("label, kind, words", [
    ("non-contiguous", "ValueError", "x: expected a C-contiguous array"),
    ("shapes", "ValueError", "y: expected shape (8,) to match x"),
    ("dtypes", "TypeError", "y: expected dtype float64"),
    ("integers", "TypeError", "x: expected dtype float32 or float64"),
    ("2-D for product", "ValueError", "x: expected a 1-D array"),
    ("empty", "ValueError", "x: expected at least 1 elements"),
    ("block 48", "ValueError", "threads_per_block: expected a positive multiple of 32"),
    ("block 0", "ValueError", "threads_per_block: expected a positive integer"),
    ("block 96 sum", "ValueError", "threads_per_block: expected a power of two"),
    ("blocks 0", "ValueError", "blocks: expected a positive integer"),
    ("inner mismatch", "ValueError", "b: expected 4 rows to match a's 4 columns"),
    ("matmul 1-D", "ValueError", "a: expected a 2-D array"),
    ("matmul transposed view", "ValueError", "a: expected a C-contiguous array"),
    ("tile 33", "ValueError", "tile: expected tile × tile <= 1024"),
    ("repeat 0", "ValueError", "repeat: expected a positive integer"),
    ("dtype None", "TypeError", "dtype: expected float32 or float64"),
    ("dtype int", "TypeError", "dtype: expected float32 or float64"),
    ("blocks huge", "ValueError", "blocks: expected at most 512 blocks of 128 threads on the "
                                  "simulator"),
    ("nbytes huge", "ValueError", "nbytes: expected a positive integer"),
    ("shape not Blocking", "TypeError", "shape: expected a mlpar.gpu.backend.Blocking"),
    ("shape tm", "ValueError", "tm: expected a divisor of bm = 16, got 3"),
    ("wide bk", "ValueError", "bk: expected bm, bn and bk to be multiples of 4"),
    ("chunks", "ValueError", "chunks: expected a positive integer"),
    ("step", "ValueError", "step: expected one of"),
])
def test_bad_input_raises_clear_errors(results, label, kind, words):
    got_kind, message = results["errors"][label]
    assert got_kind == kind, message
    assert words in message


@pytest.mark.parametrize("case", [
    f"{step} {label} {tag}" for step in ("register", "wide")
    for label in ("16x16 @ 16x16", "13x11 @ 11x9", "20x7 @ 7x33", "1x1 @ 1x1")
    for tag in ("default", "8x16")] + ["wide float32", "register float32"])
def test_register_blocked_and_wide_matmul_equal_numpy(results, case):
    assert results[case] is True


def test_every_step_is_timed_and_cublas_is_absent_on_the_simulator(results):
    assert results["gflops"] == [True] * 4
    assert results["cublas on simulator"] is True
    assert results["tune"] == [[True, True], [True, True]]  # same order, NaN rates


def test_pinned_memory_and_streams_give_numpys_product(results):
    assert results["overlap"] == [True, 3, True, True]
    assert results["link rates"] == [True, True, True]
    assert results["pinned timing"] is True
    assert results["pinned matmul timing"] == [True, True]
    assert results["device copy on the simulator"] is True
    assert results["chunks"] == [[0, 3], [3, 6], [6, 10]]


def test_simulator_prints_no_occupancy_warning(results):
    assert results["simulator never warns"] is True


def test_small_grids_filters_only_the_occupancy_warning_of_either_package(results):
    count, seen = results["small grids"]
    assert count == 2
    assert seen == ["Host array", "Host array", "something ", "Grid size "]

