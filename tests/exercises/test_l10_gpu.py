"""Lesson 10's exercise checks: right answers pass, typical mistakes fail with a hint.

The kernel exercise runs in a fresh interpreter on numba's CUDA simulator (chosen before numba
is imported there), whatever this test process imported before.
"""

import math
import textwrap

import numpy as np
import pytest

from mlpar.exercises import l10_gpu as ex
from mlpar.gpu import backend as gpu


def test_reference_solutions_pass(capsys):
    # The library's functions are refused as answers (test at the end), so written out here.
    ex.check_grid_stride_indices(lambda t, b, bd, gd, n: list(range(b * bd + t, n, bd * gd)))
    ex.check_occupancy(_own_occupancy)
    ex.check_break_even_intensity(
        lambda cpu, dev, link: cpu * dev / (link * (dev - cpu)) if dev > cpu else math.inf)
    out = capsys.readouterr().out
    assert out.count("passed") == 3


def test_unfinished_solution_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_grid_stride_indices, ex.check_occupancy,
                  ex.check_break_even_intensity):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)


def test_block_stride_mistake_gets_a_hint():
    def stride_by_block(t, b, bd, gd, n):
        return list(range(b * bd + t, n, bd))

    with pytest.raises(AssertionError, match="gridDim × blockDim, not blockDim"):
        ex.check_grid_stride_indices(stride_by_block)


def test_wrong_start_gets_a_hint():
    def forgot_block(t, b, bd, gd, n):
        return list(range(t, n, bd * gd))

    with pytest.raises(AssertionError, match="blockIdx × blockDim \\+ threadIdx"):
        ex.check_grid_stride_indices(forgot_block)


def _occupancy_by(*, registers="warp", reserved=1024, block_limit=32, whole_blocks=True,
                  whole_warps=True):
    """An occupancy answer with one of the rules switched to a misreading."""
    def occupancy(threads, regs, shared):
        warps = -(-threads // 32) if whole_warps else threads / 32
        per_warp = -(-32 * regs // 256) * 256
        by_regs = (65536 // per_warp // warps if registers == "warp"
                   else 65536 // (regs * threads))
        fits = [64 // warps if whole_warps else 2048 // threads, block_limit, by_regs,
                228 * 1024 // (shared + reserved) if shared + reserved else block_limit]
        if not whole_blocks:
            return min(fits[0] * warps, 65536 // per_warp, fits[3] * warps) / 64
        return min(fits) * warps / 64
    return occupancy


@pytest.mark.parametrize("wrong, why", [
    (_occupancy_by(registers="thread"), "units of 256 .32·r rounded up., not per thread"),
    (_occupancy_by(reserved=0), "1 KB of shared memory the system reserves"),
    (_occupancy_by(block_limit=10**6), "Exercise 3 .occupancy.: 32 threads per block"),
    (_occupancy_by(whole_blocks=False), "resident whole or not at all"),
    (_occupancy_by(whole_warps=False), "takes 3 whole warps"),
    (lambda t, r, s: 100 * _own_occupancy(t, r, s), "that is a percentage"),
    (lambda t, r, s: _own_occupancy(t, r, s) * 64 / -(-t // 32), "number of resident blocks"),
    (lambda t, r, s: 1.0, "limited by registers"),  # the lazy answer: every warp slot full
    (lambda t, r, s: {(256, 32, 0): 1.0, (256, 126, 8192): 0.25}.get((t, r, s), 1.0),
     "Exercise 3 .occupancy.: 128 threads"),  # the section's table hard-coded
])
def test_occupancy_misreadings_fail_with_their_reason(wrong, why):
    with pytest.raises(AssertionError, match=why):
        ex.check_occupancy(wrong)


def test_break_even_without_infinity_fails():
    def formula_only(cpu, dev, link):
        return cpu * dev / (link * (dev - cpu)) if dev != cpu else 0.0

    with pytest.raises(AssertionError, match="return math.inf"):
        ex.check_break_even_intensity(formula_only)


def test_break_even_link_only_approximation_fails():
    with pytest.raises(AssertionError, match="solve F/P_cpu"):
        ex.check_break_even_intensity(
            lambda cpu, dev, link: cpu / link if dev > cpu else math.inf)


def test_a_correct_alternative_for_each_arithmetic_exercise_passes(capsys):
    def stride_while(t, b, bd, gd, n):
        out, i = [], b * bd + t
        while i < n:
            out.append(i)
            i += bd * gd
        return out

    def occupancy_by_adding_blocks(threads, regs, shared):
        # another style: admit blocks one at a time while every resource still has room
        warps, per_warp = math.ceil(threads / 32), math.ceil(32 * regs / 256) * 256
        blocks = 0
        while (blocks + 1 <= 32 and (blocks + 1) * warps <= 64
               and (blocks + 1) * warps * per_warp <= 65536
               and (blocks + 1) * (shared + 1024 if shared else 0) <= 228 * 1024):
            blocks += 1
        return np.float32(blocks * warps) / np.float32(64)

    def even_by_times(cpu, dev, link):
        if dev <= cpu:
            return math.inf
        # seconds for F = 1 flop: host 1/cpu; device 1/dev + (1/I)/link; equal at I
        return 1 / (link * (1 / cpu - 1 / dev))

    ex.check_grid_stride_indices(stride_while)
    ex.check_occupancy(occupancy_by_adding_blocks)
    ex.check_break_even_intensity(even_by_times)
    assert capsys.readouterr().out.count("passed") == 3


@pytest.mark.parametrize("check", [ex.check_grid_stride_indices, ex.check_occupancy,
                                   ex.check_break_even_intensity])
@pytest.mark.parametrize("answer", [lambda *a: None, lambda *a: [1.5, "x"], lambda *a: float("nan"),
                                    lambda *a: np.array([1, 2]), lambda *a: 1 / 0])
def test_odd_answers_fail_with_a_message_not_a_crash(check, answer):
    with pytest.raises(AssertionError, match="Exercise"):
        check(answer)


KERNELS = textwrap.dedent('''
    import json
    from mlpar.gpu import backend as gpu
    gpu.choose_cuda_backend("simulator")
    from numba import cuda
    from mlpar.exercises import l10_gpu as ex

    @cuda.jit
    def grid_stride(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            y[i] += a * x[i]

    @cuda.jit
    def while_loop(a, x, y):  # correct, written differently
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        while i < y.size:
            y[i] = y[i] + x[i] * a
            i += cuda.gridDim.x * cuda.blockDim.x

    @cuda.jit
    def one_element_per_thread(a, x, y):
        i = cuda.grid(1)
        if i < x.shape[0]:
            y[i] += a * x[i]

    @cuda.jit
    def no_bounds_check(a, x, y):
        i = cuda.grid(1)
        while True:
            y[i] += a * x[i]
            i += cuda.gridsize(1)

    @cuda.jit
    def stride_by_block(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.blockDim.x):
            y[i] += a * x[i]

    @cuda.jit
    def scales_the_sum(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            y[i] = a * (x[i] + y[i])

    @cuda.jit
    def forgets_a(a, x, y):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            y[i] += x[i]

    @cuda.jit
    def thread_zero_does_all(a, x, y):
        if cuda.grid(1) == 0:
            for i in range(x.shape[0]):
                y[i] += a * x[i]

    @cuda.jit
    def only_block_zero(a, x, y):
        if cuda.blockIdx.x == 0:
            for i in range(cuda.threadIdx.x, x.shape[0], cuda.blockDim.x):
                y[i] += a * x[i]

    @cuda.jit
    def chunk_per_thread(a, x, y):
        # the CPU habit: thread g takes elements g*per .. (g+1)*per - 1 (uncoalesced on a GPU)
        g, n = cuda.grid(1), x.shape[0]
        per = (n + cuda.gridsize(1) - 1) // cuda.gridsize(1)
        for i in range(g * per, min(n, (g + 1) * per)):
            y[i] += a * x[i]

    @cuda.jit
    def stride_from_the_dims(a, x, y):
        # right, written differently: the stride from gridDim and blockDim, a local copy of a
        start = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        step = cuda.gridDim.x * cuda.blockDim.x
        scale = a
        for i in range(start, len(x), step):
            y[i] = scale * x[i] + y[i]

    def not_a_kernel(a, x, y):
        y[:] += a * x

    @cuda.jit
    def unfinished(a, x, y):
        raise NotImplementedError("exercise: replace this line with your solution")

    results = {}
    for name, kernel in [("grid_stride", grid_stride), ("while_loop", while_loop),
                         ("one_element_per_thread", one_element_per_thread),
                         ("no_bounds_check", no_bounds_check), ("stride_by_block", stride_by_block),
                         ("scales_the_sum", scales_the_sum), ("forgets_a", forgets_a),
                         ("thread_zero_does_all", thread_zero_does_all),
                         ("only_block_zero", only_block_zero),
                         ("chunk_per_thread", chunk_per_thread),
                         ("stride_from_the_dims", stride_from_the_dims),
                         ("not_a_kernel", not_a_kernel), ("unfinished", unfinished),
                         ("none", None), ("a list", [1, 2])]:
        try:
            ex.check_axpy_kernel(kernel)
            results[name] = "passed"
        except AssertionError as err:
            results[name] = str(err)
    print("RESULT " + json.dumps(results))
''')


@pytest.fixture(scope="module")
def kernel_results(fresh_python):
    return fresh_python(KERNELS, timeout=300)


@pytest.mark.parametrize("name", ["grid_stride", "while_loop", "stride_from_the_dims"])
def test_correct_kernels_pass(kernel_results, name):
    assert kernel_results[name] == "passed"


@pytest.mark.parametrize("name, match", [
    ("one_element_per_thread", "never updated; .* stride cuda.gridsize"),
    ("no_bounds_check", "indexed past the end"),
    ("stride_by_block", "updated more than once; .* not blockDim.x"),
    ("scales_the_sum", r"expected y\[i\] \+ a \* x\[i\]"),
    ("forgets_a", r"expected y\[i\] \+ a \* x\[i\]"),
    # Right values, wrong split (issue 35): the check follows which thread wrote which element.
    ("thread_zero_does_all", "thread 0 handled all 1000 elements"),
    ("only_block_zero", "only block 0's threads handled elements"),
    ("chunk_per_thread", "contiguous chunk .*uncoalesced"),
    ("not_a_kernel", "expected a kernel made with @cuda.jit"),
    ("unfinished", "not done yet"),
    ("none", "expected a kernel made with @cuda.jit, got NoneType"),
    ("a list", "expected a kernel made with @cuda.jit, got list"),
])
def test_wrong_kernels_fail_with_the_reason(kernel_results, name, match):
    import re

    message = kernel_results[name]
    assert message.startswith("Exercise 2 (a CUDA kernel)"), message
    assert re.search(match, message), message


# --- Exercise 5: predict the offload of a product, then measure ----------------------------

def offload_in_parts(n, itemsize, link_gbps, device_gbps):
    to_device = 2 * n * itemsize / (link_gbps * 1e9)
    kernel = 3 * n * itemsize / (device_gbps * 1e9)
    to_host = n * itemsize / (link_gbps * 1e9)
    return to_device + kernel + to_host


def offload_by_harmonic_rate(n, itemsize, link_gbps, device_gbps):
    # the same bytes through two stages in series: one combined rate
    combined = 1 / (1 / link_gbps + 1 / device_gbps)
    return np.float64(3 * n * itemsize / combined / 1e9)


def test_correct_offload_predictions_pass(capsys):
    ex.check_offload_prediction(offload_in_parts)
    ex.check_offload_prediction(offload_by_harmonic_rate)
    assert capsys.readouterr().out.count("Exercise 5 (predict the offload of a product) passed") == 2


def _bytes(n, s):
    return 3 * n * s


@pytest.mark.parametrize("wrong, match", [
    (lambda n, s, w, d: _bytes(n, s) * 8 / (w * 1e9) + _bytes(n, s) / (d * 1e9),
     "bits and bytes mixed"),
    (lambda n, s, w, d: 8 * _bytes(n, s) * (1 / w + 1 / d) / 1e9, "bits and bytes mixed"),
    (lambda n, s, w, d: _bytes(n, s) * (1 / w + 1 / d) / 2**30, "GB and GiB mixed"),
    (lambda n, s, w, d: 3 * n * (1 / w + 1 / d) / 1e9, "itemsize left out"),
    (lambda n, s, w, d: n * s / (w * 1e9) + _bytes(n, s) / (d * 1e9),
     "only one array crossed the link"),
    (lambda n, s, w, d: 2 * n * s / (w * 1e9) + _bytes(n, s) / (d * 1e9),
     "did you forget the copy back"),
    (lambda n, s, w, d: _bytes(n, s) / (w * 1e9) + 2 * n * s / (d * 1e9),
     "kernel moves two arrays"),
    (lambda n, s, w, d: _bytes(n, s) / (w * 1e9), "copies alone"),
    (lambda n, s, w, d: _bytes(n, s) / (d * 1e9), "kernel alone"),
    (lambda n, s, w, d: max(_bytes(n, s) / (w * 1e9), _bytes(n, s) / (d * 1e9)),
     "copies and kernel overlapped"),
    (lambda n, s, w, d: 1e9 / (_bytes(n, s) * (1 / w + 1 / d)), "inverted"),
    (lambda n, s, w, d: (w + d) * 1e9 / _bytes(n, s), "inverted"),
    (lambda n, s, w, d: _bytes(n, s) * (1 / w + 1 / d), "nanoseconds"),
    (lambda n, s, w, d: 0.0134, "does not change with the inputs"),
    (lambda n, s, w, d: _bytes(n, s) * (1 / w + 1 / d) / 1e9 * 1.5, r"expected \d"),
])
def test_each_offload_misreading_is_refused_by_name(wrong, match):
    with pytest.raises(AssertionError, match=r"Exercise 5 \(predict the offload of a product\)"):
        ex.check_offload_prediction(wrong)
    with pytest.raises(AssertionError, match=match):
        ex.check_offload_prediction(wrong)


def test_hard_coded_visible_cases_fail_under_the_graders_seed(monkeypatch):
    from mlpar.exercises import GRADING_SEED_VARIABLE

    seen = {}

    def remember(n, s, w, d):
        seen[(n, s, w, d)] = offload_in_parts(n, s, w, d)
        return seen[(n, s, w, d)]

    ex.check_offload_prediction(remember)
    table = dict(seen)

    def lookup(n, s, w, d):
        return table.get((n, s, w, d), 0.0134)

    ex.check_offload_prediction(lookup)  # the lesson's visible cases: a table passes there
    monkeypatch.setenv(GRADING_SEED_VARIABLE, "7")
    with pytest.raises(AssertionError, match="Exercise 5"):
        ex.check_offload_prediction(lookup)


@pytest.mark.parametrize("answer, match", [
    (lambda *a: None, "forget to `return`"),
    (lambda *a: [1.5, "x"], "should be numbers"),
    (lambda *a: [0.1, 0.2], "shape"),
    (lambda *a: float("nan"), "NaN"),
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    ("not a function", "expected a function"),
])
def test_odd_offload_answers_fail_with_a_clear_message(answer, match):
    with pytest.raises(AssertionError, match=match):
        ex.check_offload_prediction(answer)


def test_unfinished_offload_prediction_says_not_done():
    def todo(*args):
        raise NotImplementedError

    with pytest.raises(AssertionError, match="not done yet"):
        ex.check_offload_prediction(todo)


def test_report_without_a_gpu_predicts_and_says_there_is_no_timing(capsys):
    assert ex.report_offload_prediction(ex.offload_model, link_gbps=15.75,
                                        device_gbps=320.0) is None
    out = capsys.readouterr().out
    assert "simulator: no meaningful timing" in out
    expected_ms = ex.offload_model(1 << 24, 4, 15.75, 320.0) * 1e3
    assert f"predicted {expected_ms:.3g} ms" in out
    assert "differs from the model" not in out


def _fake_timing(total_s, n=1 << 24, itemsize=4):
    # the fields of mlpar.gpu.transfers.OffloadTiming that the report reads; importing that
    # module would import numba's CUDA target in this process
    from types import SimpleNamespace

    return SimpleNamespace(total_s=total_s, transfer_share=0.9, link_bytes=3 * n * itemsize)


@pytest.mark.parametrize("factor, why", [(1.0, "within the band"), (2.0, "slower than predicted"),
                                         (0.5, "faster than predicted")])
def test_report_with_a_measurement_says_how_far_and_why(capsys, factor, why):
    predicted = ex.offload_model(1 << 24, 4, 15.75, 320.0)
    ratio = ex.report_offload_prediction(lambda *a: None, link_gbps=15.75, device_gbps=320.0,
                                         measured=_fake_timing(factor * predicted))
    assert ratio == pytest.approx(factor)
    out = capsys.readouterr().out
    assert f"{factor:.0%} of the prediction" in out
    assert why in out
    assert "the model's is used" in out  # a broken prediction is reported, not raised


def test_report_refuses_bad_arguments():
    with pytest.raises(ValueError, match="link_gbps"):
        ex.report_offload_prediction(ex.offload_model, link_gbps=0, device_gbps=320.0)
    with pytest.raises(TypeError, match="measured: expected an OffloadTiming"):
        ex.report_offload_prediction(ex.offload_model, link_gbps=15.75, device_gbps=320.0,
                                     measured=[1, 2])
    with pytest.raises(ValueError, match="measured: expected the offload of 16,777,216"):
        ex.report_offload_prediction(ex.offload_model, link_gbps=15.75, device_gbps=320.0,
                                     measured=_fake_timing(0.01, n=1000))


@pytest.mark.parametrize("index", range(len(ex.OFFLOAD_MISREADINGS)))
def test_every_listed_misreading_is_recognised_with_its_own_message(index):
    misread, why = ex.OFFLOAD_MISREADINGS[index]
    with pytest.raises(AssertionError) as err:
        ex.check_offload_prediction(misread)
    assert str(err.value).endswith(why)


# --- each exercise graded on its own (issue 25 item 3) -------------------------------------
# Exercise 2 (the kernel) runs in its own interpreter above; it shares nothing with these.

def _own_occupancy(threads, regs, shared):
    warps = -(-threads // 32)
    per_warp = -(-32 * regs // 256) * 256
    return min(64 // warps, 32, 65536 // per_warp // warps,
               228 * 1024 // (shared + 1024) if shared else 32) * warps / 64


# Right answers written here (the checks refuse the library's and the check's own functions).
ALONE = {
    "grid_stride": (ex.check_grid_stride_indices,
                    lambda t, b, bd, gd, n: list(range(b * bd + t, n, bd * gd)),
                    lambda t, b, bd, gd, n: list(range(t, n, bd * gd))),
    "occupancy": (ex.check_occupancy, _own_occupancy, lambda threads, regs, shared: 1.0),
    "break_even": (ex.check_break_even_intensity,
                   lambda cpu, dev, link: cpu * dev / (link * (dev - cpu)) if dev > cpu
                   else math.inf,
                   lambda cpu, dev, link: cpu / link if dev > cpu else math.inf),
    "offload": (ex.check_offload_prediction,
                lambda n, s, w, d: 3 * n * s / (w * 1e9) + 3 * n * s / (d * 1e9),
                lambda n, s, w, d: 3 * n * s / (w * 1e9)),
}


@pytest.mark.parametrize("wrong", list(ALONE))
def test_one_wrong_exercise_fails_exactly_its_own_check(wrong, capsys, graded_alone):
    assert list(graded_alone(ALONE, wrong)) == [wrong]


# --- One imported call is not an answer (issue 35 §4): the library's version is refused by name

@pytest.mark.parametrize("check, answer, named", [
    (ex.check_grid_stride_indices, lambda t, b, bd, gd, n: gpu.grid_stride_indices(t, b, bd, gd, n),
     "grid_stride_indices"),
    (ex.check_occupancy, lambda t, r, s: gpu.occupancy(t, r, s).occupancy, "occupancy"),
    (ex.check_break_even_intensity, lambda c, g, link: gpu.break_even_intensity(c, g, link),
     "break_even_intensity"),
    (ex.check_offload_prediction, lambda n, i, link, dev: ex.offload_model(n, i, link, dev),
     "offload_model"),
])
def test_the_librarys_own_version_is_refused_by_name(check, answer, named):
    with pytest.raises(AssertionError, match=f"your answer calls .*{named}.*write that "
                                             "computation yourself"):
        check(answer)
