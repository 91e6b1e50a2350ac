"""mlpar.gpu.backend: the backend choice (each case in a fresh interpreter) and the launch arithmetic."""

import json
import math
import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.gpu import backend as gpu
from mlpar.gpu import plots as gpu_plots

matplotlib.use("Agg")


def run_fresh(code: str, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter (numba not yet imported there), env overrides applied."""
    environ = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    environ.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, timeout=120)


def test_choose_simulator_before_numba_sets_it_up():
    done = run_fresh(
        "import os, sys, json\n"
        "from mlpar.gpu import backend as gpu, plots as gpu_plots\n"
        "import mlpar.exercises.l10_gpu, mlpar.benchmarks.gpu\n"
        "before = 'numba' in sys.modules\n"
        "first = gpu.choose_cuda_backend('simulator')\n"
        "from numba import cuda\n"
        "again = gpu.choose_cuda_backend()\n"
        "try:\n"
        "    gpu.choose_cuda_backend('gpu'); err = ''\n"
        "except RuntimeError as e:\n"
        "    err = str(e)\n"
        "print(json.dumps([before, first, again, os.environ['NUMBA_ENABLE_CUDASIM'],\n"
        "                  gpu.active_backend(), err]))\n"
    )
    assert done.returncode == 0, done.stderr
    before, first, again, env, active, err = json.loads(done.stdout)
    assert before is False  # importing these modules must not import numba
    assert (first, again, env, active) == ("simulator", "simulator", "1", "simulator")
    assert "already imported" in err and "restart" in err


def test_numba_imported_first_without_simulator_is_refused():
    done = run_fresh(
        "import numba\nfrom mlpar.gpu import backend as gpu\ngpu.choose_cuda_backend('simulator')\n")
    assert done.returncode != 0
    assert "RuntimeError" in done.stderr and "choose_cuda_backend() before" in done.stderr


def test_auto_without_gpu_picks_simulator_and_gpu_is_refused():
    code = ("from mlpar.gpu import backend as gpu\nprint(gpu.gpu_present(), gpu.choose_cuda_backend())\n"
            "gpu.choose_cuda_backend('gpu')\n")
    done = run_fresh(code, CUDA_VISIBLE_DEVICES="-1")
    assert done.stdout.split() == ["False", "simulator"]
    # the second call is refused: numba is not imported yet, but there is no GPU to take
    assert "found none" in done.stderr


def test_exported_simulator_variable_is_honoured():
    done = run_fresh("from mlpar.gpu import backend as gpu\nprint(gpu.choose_cuda_backend())",
                     NUMBA_ENABLE_CUDASIM="1")
    assert done.stdout.strip() == "simulator"


def test_kernels_module_refuses_unusable_numba_state():
    done = run_fresh("import numba\nimport mlpar.gpu.cuda_kernels\n", CUDA_VISIBLE_DEVICES="-1")
    assert done.returncode != 0 and "RuntimeError" in done.stderr


def test_bad_preference_is_rejected_before_any_side_effect():
    with pytest.raises(ValueError, match="prefer: expected one of"):
        gpu.choose_cuda_backend("cpu")


@pytest.mark.parametrize("value", [32, 64, 256, 1024])
def test_block_size_accepts_warp_multiples(value):
    assert gpu.block_size("threads_per_block", value) == value


@pytest.mark.parametrize("value, match", [
    (0, "positive integer"), (-32, "positive integer"), (48, "multiple of 32"),
    (2048, "up to 1024"), (33, "multiple of 32"),
])
def test_block_size_rejects_bad_values(value, match):
    with pytest.raises(ValueError, match=match):
        gpu.block_size("threads_per_block", value)


def test_block_size_types_and_power_of_two():
    with pytest.raises(TypeError, match="threads_per_block"):
        gpu.block_size("threads_per_block", 64.0)
    with pytest.raises(ValueError, match="power of two.*try 64"):
        gpu.block_size("threads_per_block", 96, power_of_two=True)
    assert gpu.block_size("tpb", 128, power_of_two=True) == 128


def test_blocks_to_cover():
    assert [gpu.blocks_to_cover(n, 32) for n in (0, 1, 32, 33, 64, 65)] == [1, 1, 1, 2, 2, 3]
    with pytest.raises(ValueError, match="n: expected an integer >= 0"):
        gpu.blocks_to_cover(-1, 32)


def test_grid_stride_indices_examples():
    assert gpu.grid_stride_indices(3, 1, 8, 2, 40) == [11, 27]
    assert gpu.grid_stride_indices(0, 0, 4, 1, 10) == [0, 4, 8]
    assert gpu.grid_stride_indices(5, 1, 8, 2, 12) == []
    with pytest.raises(ValueError, match="thread_idx: expected an integer <= 7"):
        gpu.grid_stride_indices(8, 0, 8, 2, 40)
    with pytest.raises(ValueError, match="block_idx"):
        gpu.grid_stride_indices(0, 2, 8, 2, 40)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(1, 40), st.integers(1, 6))
def test_every_element_is_visited_once_and_owners_invert_indices(n, tpb, blocks):
    block, thread, step = gpu.grid_stride_owners(n, tpb, blocks)
    visits = np.zeros(n, dtype=int)
    for b in range(blocks):
        for t in range(tpb):
            idx = gpu.grid_stride_indices(t, b, tpb, blocks, n)
            visits[idx] += 1
            assert np.all(block[idx] == b) and np.all(thread[idx] == t)
            assert list(step[idx]) == list(range(len(idx)))
    assert np.all(visits == 1)


def test_largest_tile():
    assert gpu.largest_tile(48 * 1024, 8) == 32  # 2·32²·8 = 16 KiB and 32² = 1024 threads
    assert gpu.largest_tile(8 * 1024, 8) == 16  # 2·32²·8 would need 16 KiB
    assert gpu.largest_tile(1024, 4) == 8  # 2·16²·4 = 2 KiB > 1 KiB
    assert gpu.largest_tile(16, 8) == 1
    assert gpu.largest_tile(48 * 1024, 4, max_threads=256) == 16
    with pytest.raises(ValueError, match="shared_bytes: expected at least 16"):
        gpu.largest_tile(8, 8)


def test_matmul_global_loads():
    assert gpu.matmul_global_loads(64, 32, 48) == 2 * 64 * 32 * 48
    assert gpu.matmul_global_loads(64, 32, 48, tile=16) == 2 * 64 * 32 * 48 // 16
    # padding: a 5×5 problem with tile 4 runs 2×2 blocks over 2 k-steps of full tiles
    assert gpu.matmul_global_loads(5, 5, 5, tile=4) == 4 * 2 * 2 * 16
    with pytest.raises(ValueError, match="tile"):
        gpu.matmul_global_loads(4, 4, 4, tile=0)


@given(st.floats(1, 1e3), st.floats(1.01, 100), st.floats(0.1, 100))
def test_break_even_balances_host_and_offload_times(cpu, factor, link):
    gpu_rate = cpu * factor
    intensity = gpu.break_even_intensity(cpu, gpu_rate, link)
    flops, nbytes = intensity * 1e9, 1e9  # any F/B at the break-even point
    host = flops / (cpu * 1e9)
    offload = nbytes / (link * 1e9) + flops / (gpu_rate * 1e9)
    assert math.isclose(host, offload, rel_tol=1e-9)


def test_break_even_limits_and_errors():
    assert gpu.break_even_intensity(100, 100, 10) == math.inf
    assert gpu.break_even_intensity(100, 50, 10) == math.inf
    assert math.isclose(gpu.break_even_intensity(100, 1e12, 10), 10, rel_tol=1e-6)
    with pytest.raises(ValueError, match="link_gbps"):
        gpu.break_even_intensity(100, 1000, 0)


def test_pictures_draw_and_validate():
    import matplotlib.pyplot as plt

    ax = gpu_plots.plot_grid_stride(40, 8, 3)
    assert len(ax.texts) == 40
    axes = gpu_plots.plot_tiles(10, 7, 9, 4, block=(2, 2), step=1)
    assert len(axes) == 3
    ax = gpu_plots.plot_offload_roofline(50, 10, 2, 8100, [("k", 0.1, 1.0)],
                                         marks=[("product", 1 / 12)], source="T4, published")
    labels = [line.get_label() for line in ax.get_lines()]
    assert "host roofline (measured)" in labels
    assert "offloaded: link roof, device rate\n(T4, published)" in labels
    assert "device roofline (device memory, measured)" not in labels
    assert any(t.get_text() == "product" for t in ax.texts)
    assert any("offload pays beyond" in t.get_text() for t in ax.texts)
    plt.close("all")
    with pytest.raises(ValueError, match="block"):
        gpu_plots.plot_tiles(10, 7, 9, 4, block=(3, 0))
    with pytest.raises(ValueError, match="step"):
        gpu_plots.plot_tiles(10, 7, 9, 4, step=2)
    with pytest.raises(ValueError, match="link_gbps"):
        gpu_plots.plot_offload_roofline(50, 10, -1, 100)
    with pytest.raises(ValueError, match="intensity of product"):
        gpu_plots.plot_offload_roofline(50, 10, 1, 100, marks=[("product", 0)])
    # On a GPU the kernel points sit at device-memory intensity: the device's roofline is drawn.
    ax = gpu_plots.plot_offload_roofline(50, 10, 25, 50_000, [("kernel", 1 / 12, 250.0)],
                                         device_gbps=3000.0)
    device = [line for line in ax.get_lines()
              if line.get_label() == "device roofline (device memory, measured)"]
    assert len(device) == 1
    x, y = device[0].get_data()
    assert np.allclose(y, np.minimum(50_000, 3000.0 * x))
    plt.close("all")
    with pytest.raises(ValueError, match="device_gbps"):
        gpu_plots.plot_offload_roofline(50, 10, 1, 100, device_gbps=0)


def test_published_figures_name_their_source():
    assert gpu.T4.fp32_gflops > 0 and gpu.T4.link_gbps > 0
    assert "data sheet" in gpu.T4.source


def test_occupancy_arithmetic_of_the_lesson():
    # a grid of 3 blocks on an H100 leaves 129 of its 132 multiprocessors without work
    assert gpu.idle_multiprocessors(3, gpu.H100_MULTIPROCESSORS) == 129
    assert gpu.idle_multiprocessors(500, 132) == 0
    assert gpu.blocks_to_fill(132) == 132 and gpu.blocks_to_fill(132, 4) == 528
    assert gpu.NUMBA_LOW_OCCUPANCY_BLOCKS == 128
    with pytest.raises(ValueError, match="multiprocessors"):
        gpu.idle_multiprocessors(3, 0)
    with pytest.raises(TypeError, match="blocks_per_multiprocessor"):
        gpu.blocks_to_fill(132, 1.5)


def test_blocking_shapes():
    shape = gpu.blocking(128, 128, 8, 8, 8)
    assert shape.threads == 256 and shape.shared_bytes(4) == 8192
    assert str(shape) == "block 128×128 of C, k-step 8, 8×8 per thread (256 threads)"
    # each element of A is read once per block column, of B once per block row
    assert shape.global_loads(256, 64, 256) == 4 * 8 * (128 + 128) * 8
    assert gpu.blocking(16, 16, 4, 4, 4).threads == 16  # one part-filled warp is allowed
    assert gpu.blocking(8, 16, 4, 2, 4, wide=True).threads == 16


@pytest.mark.parametrize("args, kwargs, match", [
    ((128, 128, 8, 3, 8), {}, "tm: expected a divisor of bm = 128, got 3"),
    ((128, 128, 8, 8, 6), {}, "tn: expected a divisor of bn = 128"),
    ((128, 128, 8, 2, 2), {}, "at most 1024 and whole warps"),  # 4096 threads
    ((96, 64, 8, 8, 16), {}, "whole warps of 32"),  # 12 · 4 = 48 threads
    ((128, 128, 64, 8, 8), {}, "bk: expected .* <= 49152 bytes"),  # 64 KiB of float32
    ((128, 128, 6, 8, 8), {"wide": True}, "multiples of 4"),
    ((0, 128, 8, 8, 8), {}, "bm: expected a positive integer"),
])
def test_blocking_refuses_shapes_a_gpu_cannot_run(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gpu.blocking(*args, **kwargs)


@pytest.mark.parametrize("threads, registers, shared, blocks, share, limiter", [
    (256, 32, 2048, 8, 1.0, "threads"),        # the tiled kernel: 8 blocks, every warp slot
    (256, 126, 4096, 2, 0.25, "registers"),    # register blocking: 126 × 32 → 4096 per warp
    (256, 198, 8192, 1, 0.125, "registers"),   # 198 registers: one block of 8 warps
    (128, 28, 0, 16, 1.0, "threads"),          # the product: 16 blocks of 4 warps
    (32, 16, 0, 32, 0.5, "blocks"),            # tiny blocks hit the 32-block limit first
    (256, 32, 60 * 1024, 3, 0.375, "shared memory"),  # 3 × (60 + 1) KiB fit in 228 KiB
])
def test_occupancy_is_resident_warps_over_the_maximum(threads, registers, shared, blocks, share,
                                                      limiter):
    got = gpu.occupancy(threads, registers, shared)
    assert (got.blocks, got.occupancy, got.limiter) == (blocks, share, limiter)
    assert got.warps == blocks * -(-threads // 32)


@pytest.mark.parametrize("args, match", [
    ((0, 32), "threads_per_block"), ((2048, 32), "threads_per_block"),
    ((256, 0), "registers_per_thread"), ((256, 300), "registers_per_thread"),
    ((256, 32, -1), "shared_bytes"), ((256, 32, "4k"), "shared_bytes"),
])
def test_occupancy_refuses_bad_input(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        gpu.occupancy(*args)
