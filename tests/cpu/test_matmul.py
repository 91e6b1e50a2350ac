"""Every matmul variant equals numpy's product; bad operands raise clear errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.core import threads as numba_threads
from mlpar.cpu import matmul as mm

VARIANTS = sorted(mm.VARIANTS)
# fastmath reorders the packed kernel's sums, and BLAS has its own order: compare to rounding.
RTOL, ATOL = 1e-10, 1e-10


@pytest.mark.parametrize("variant", VARIANTS)
def test_square_product_equals_numpy(variant):
    a, b = mm.random_matrices(48, seed=1)
    np.testing.assert_allclose(mm.matmul(a, b, variant, block=16), a @ b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 23), m=st.integers(1, 23), p=st.integers(1, 23), block=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_any_shape_and_block_equals_numpy(variant, n, m, p, block, seed):
    # Sizes that are not multiples of the block (or of the packed kernel's 4) exercise the
    # edge tiles, where off-by-one errors live.
    a, b = mm.random_matrices(n, m, p, seed=seed)
    got = mm.matmul(a, b, variant, block=block)
    assert got.shape == (n, p)
    np.testing.assert_allclose(got, a @ b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("variant", ["blocked", "parallel", "packed"])
def test_parallel_variants_agree_on_one_and_all_threads(variant):
    from mlpar.core.threads import max_threads, using_threads

    a, b = mm.random_matrices(70, 33, 41, seed=3)
    with using_threads(1):
        one = mm.matmul(a, b, variant, block=16)
    with using_threads(max_threads()):
        many = mm.matmul(a, b, variant, block=16)
    # Each element is summed by one thread in a fixed order, so the results are identical.
    np.testing.assert_array_equal(one, many)


def test_inputs_are_not_modified():
    a, b = mm.random_matrices(9, 7, 5, seed=2)
    a0, b0 = a.copy(), b.copy()
    for variant in VARIANTS:
        mm.matmul(a, b, variant, block=4)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_mismatched_inner_dimension_is_rejected(variant):
    a, _ = mm.random_matrices(4, 3, 2)
    with pytest.raises(ValueError, match=r"b: expected 3 rows to match the 3 columns of a"):
        mm.matmul(a, np.ones((5, 2)), variant)


@pytest.mark.parametrize(
    "a, error, message",
    [
        (np.ones(4), ValueError, r"a: expected a 2-D array, got 1-D"),
        (np.ones((2, 2), dtype=np.float32), TypeError, r"a: expected dtype float64, got float32"),
        ([[1.0, 2.0]], TypeError, r"a: expected a numpy array, got list"),
        (np.ones((4, 4))[:, ::2], ValueError, r"a: expected a C-contiguous array"),
        (np.ones((0, 2)), ValueError, r"a: expected at least 1 elements"),
    ],
)
def test_bad_operand_is_rejected(a, error, message):
    with pytest.raises(error, match=message):
        mm.matmul_ikj(a, np.ones((2, 2)))


def test_bad_block_and_variant_are_rejected():
    a, b = mm.random_matrices(4)
    with pytest.raises(ValueError, match=r"block: expected a positive integer, got 0"):
        mm.matmul_blocked(a, b, 0)
    with pytest.raises(TypeError, match=r"block: expected a positive integer, got float"):
        mm.matmul_parallel(a, b, 8.0)
    with pytest.raises(ValueError, match=r"variant: expected one of .*'blas'.*, got 'cuda'"):
        mm.matmul(a, b, "cuda")


def test_flops_count_multiply_and_add():
    assert mm.matmul_flops(2, 3, 4) == 48
    with pytest.raises(ValueError, match=r"m: expected a positive integer, got 0"):
        mm.matmul_flops(2, 0, 4)


def test_random_matrices_are_seeded():
    a1, b1 = mm.random_matrices(5, 3, seed=7)
    a2, b2 = mm.random_matrices(5, 3, seed=7)
    assert a1.shape == (5, 3) and b1.shape == (3, 5)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(a1, mm.random_matrices(5, 3, seed=8)[0])


def test_measure_variants_compares_every_variant_at_one_size():
    table = mm.measure_variants(16, ("ikj", "parallel", "blas"), block=4, repeat=1)
    assert [t.name for t in table.timings] == ["ikj", "parallel(4)", "blas"]
    assert all(t.flops == 2 * 16**3 and t.gflops > 0 for t in table.timings)
    assert mm.measure_variant("python", 8, repeat=1).flops == 2 * 8**3
    with pytest.raises(ValueError, match="variants: expected at least one"):
        mm.measure_variants(16, ())


def test_ikj_is_one_tile_of_the_blocked_kernel():
    # ikj and blocked share the tile code: with one block as large as the matrix they agree
    # bit for bit, so any difference in speed between them is the blocking alone.
    a, b = mm.random_matrices(37, 29, 31, seed=4)
    np.testing.assert_array_equal(mm.matmul_ikj(a, b), mm.matmul_blocked(a, b, 64))


def test_blocking_sweep_reports_both_variants_per_size():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = mm.measure_blocking((16, 32), rows=8, block=8, repeat=1)
    assert sweep.sizes == (16, 32) and len(sweep.ikj) == len(sweep.blocked) == 2
    assert sweep.b_bytes == (8 * 16 * 16, 8 * 32 * 32)
    assert sweep.gain() == sweep.blocked[-1] / sweep.ikj[-1] > 0
    ax = sweep.plot(cache_bytes=[("L2", 4096)])
    assert len(ax.lines) == 3 and [t.get_text() for t in ax.get_xticklabels()] != []
    plt.close("all")
    with pytest.raises(ValueError, match="sizes: expected at least one"):
        mm.measure_blocking(())
    with pytest.raises(ValueError, match="rows: expected a positive integer"):
        mm.measure_blocking((8,), rows=0)


def test_blas_thread_measurement_restores_the_thread_count():
    from threadpoolctl import threadpool_info

    before = [p["num_threads"] for p in threadpool_info()]
    table = mm.measure_blas_threads(32, (1, 1, 2), repeat=1)
    assert [t.name for t in table.timings] == ["BLAS, 1 thread(s)", "BLAS, 2 thread(s)"]
    assert [p["num_threads"] for p in threadpool_info()] == before
    with pytest.raises(ValueError, match="thread_counts: expected a positive integer, got 0"):
        mm.measure_blas_threads(32, (0,))
    with pytest.raises(ValueError, match="thread_counts: expected at least one"):
        mm.measure_blas_threads(32, ())


def test_blas_peak_is_a_positive_rate():
    assert mm.blas_peak(64, repeat=1) > 0
    assert mm.blas_peak(64, 1, repeat=1) > 0
    assert mm.blas_threads() >= 1


def test_plot_gflops_draws_one_bar_per_variant():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = mm.measure_variants(16, ("ikj", "blas"), repeat=1)
    ax = mm.plot_gflops(table, peak_gflops=10.0)
    assert len(ax.patches) == 2
    with pytest.raises(ValueError, match="peak_gflops"):
        mm.plot_gflops(table, peak_gflops=0.0)
    plt.close("all")


def test_ijk_on_b_transposed_is_right_with_and_without_fastmath():
    from mlpar.cpu import matmul_loops as ml

    a, b = mm.random_matrices(13, 7, 9, seed=1)
    assert np.allclose(ml.matmul_ijk_transposed(a, b), a @ b)
    assert np.allclose(ml.matmul_ijk_transposed(a, b, fastmath=True), a @ b)
    rates = mm.measure_chains(16, repeat=1)
    assert list(rates) == list(mm.CHAIN_LOOPS) and all(r > 0 for r in rates.values())


# -- the lesson's widget through every option its text suggests (issue 31 §4) -----------------

def test_widget_every_block_and_thread_count():
    from mlpar.core import threads

    # the widget's block sizes, at the smallest n and one n that is not a multiple of them; its
    # thread counts at the ends and the first that splits rows unevenly, not every one between:
    # on a 16-core machine every count took 104 s
    counts = sorted({1, 2, 3, threads.max_threads()} & set(range(1, threads.max_threads() + 1)))
    for n in (64, 96):
        for block in (8, 16, 32, 64, 128, 256):
            for k in counts:
                seen = mm.explore(n, block, k, repeat=1)
                assert list(seen) == list(mm.EXPLORE_VARIANTS)
                assert all(t.gflops > 0 for t in seen.values())
    with pytest.raises(ValueError, match="n_threads"):
        mm.explore(64, 8, threads.max_threads() + 1)


def test_gflops_chart_labels_shares_as_whole_percents():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlpar.core import timing

    table = timing.compare([timing.Timing("blas", (1.0,), 0.0, flops=101e9),
                            timing.Timing("ikj", (1.0,), 0.0, flops=5e9)])
    ax = mm.plot_gflops(table, 100.0)
    labels = [t.get_text() for t in ax.texts]
    plt.close(ax.figure)
    assert "101 (101% of peak)" in labels and "5 (5% of peak)" in labels


@pytest.mark.parametrize("panel_bytes", [1, 8 * 4 * 30, 8 * 12 * 30])
def test_packed_walks_b_in_panels_of_any_width(monkeypatch, panel_bytes):
    # Panels of 4, 4 and 12 columns of B for m = 30, with p = 41 not a multiple of any of them:
    # the last panel is narrower, and no column may be skipped or summed twice.
    from mlpar.cpu import matmul_packed as mp

    monkeypatch.setattr(mp, "PANEL_BYTES", panel_bytes)
    a, b = mm.random_matrices(37, 30, 41, seed=5)
    np.testing.assert_allclose(mp.matmul_packed(a, b), a @ b, rtol=RTOL, atol=ATOL)


def test_panel_rows_are_a_multiple_of_the_register_block_for_any_depth():
    from mlpar.cpu import matmul_packed as mp

    for m in (1, 3, 400, 8193, 10**9):
        rows = mp.panel_rows(m)
        assert rows % mp.REGISTER_BLOCK == 0 and rows >= mp.REGISTER_BLOCK
        assert rows == mp.REGISTER_BLOCK or rows * 8 * m <= mp.PANEL_BYTES
    assert mp.panel_rows(10**9) == mp.REGISTER_BLOCK  # a panel never drops below one block


@pytest.mark.skipif(not numba_threads.thread_safe_layers(),
                    reason="no TBB or OpenMP here: workqueue would abort on concurrent kernels")
def test_packing_buffer_is_kept_but_never_returned_or_shared_between_threads():
    import threading

    from mlpar.cpu import matmul_packed as mp

    a, b = mm.random_matrices(40, 30, 20, seed=6)
    first = mp.matmul_packed(a, b)
    kept = mp._BUFFERS.array
    second = mp.matmul_packed(2 * a, b)
    assert mp._BUFFERS.array is kept  # the same work array served the second call
    assert not np.shares_memory(first, kept) and not np.shares_memory(first, second)
    np.testing.assert_allclose(first, a @ b, rtol=RTOL, atol=ATOL)  # untouched by the 2nd call

    results, buffers = {}, {}

    def product(k):
        x, y = mm.random_matrices(64, 48, 36, seed=k)
        for _ in range(5):
            results[k] = np.abs(mp.matmul_packed(x, y) - x @ y).max()
        buffers[k] = mp._BUFFERS.array

    threads = [threading.Thread(target=product, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(results.values()) < 1e-9
    assert len({id(buf) for buf in buffers.values()}) == 3  # one buffer per thread


def test_a_product_larger_than_the_kept_buffer_gets_its_own(monkeypatch):
    from mlpar.cpu import matmul_packed as mp

    monkeypatch.setattr(mp, "KEPT_BUFFER_BYTES", 1024)
    kept = getattr(mp._BUFFERS, "array", None)
    a, b = mm.random_matrices(30, 30, 30, seed=7)
    np.testing.assert_allclose(mp.matmul_packed(a, b), a @ b, rtol=RTOL, atol=ATOL)
    assert getattr(mp._BUFFERS, "array", None) is kept


def test_a_compiled_variant_is_timed_only_once_blas_threads_stopped_spinning(monkeypatch):
    # OpenBLAS's idle threads spin for ~0.1 s after a call; numba's threads timed in that
    # window share the cores with them. The wait covers what is left of the window, no more.
    from mlpar.cpu import matmul as module

    waits = []
    monkeypatch.setattr(module.time, "sleep", waits.append)
    module.measure_variant("blas", 32, repeat=1)
    module.measure_variant("packed", 32, repeat=1)
    assert len(waits) == 1 and 0 < waits[0] <= module.timing.BLAS_SPIN_SECONDS
    module.measure_variant("blas", 32, repeat=1)  # BLAS itself never waits
    assert len(waits) == 1
    monkeypatch.setattr(module, "_BLAS_LAST_RAN", [module.time.monotonic() - 10])
    module.measure_variant("ikj", 32, repeat=1)  # long after BLAS: a zero wait
    assert waits[-1] == 0.0
