import numpy as np
import pytest

from mlpar.algorithms.pipeline import domain
from mlpar.exercises import l08_pipelines as ex

# -- Exercise 1 ------------------------------------------------------------------------------


def gpipe_makespan(t_f, t_b, m, latency):
    t_f, t_b = np.asarray(t_f), np.asarray(t_b)
    return t_f.sum() + t_b.sum() + (m - 1) * (t_f.max() + t_b.max()) + 2 * (len(t_f) - 1) * latency


def gpipe_makespan_by_events(t_f, t_b, m, latency):  # written differently: a recurrence of end times
    p = len(t_f)
    end = [[0.0] * p for _ in range(m)]
    for i in range(m):
        for s in range(p):
            ready = (end[i][s - 1] + latency) if s else 0.0
            end[i][s] = max(ready, end[i - 1][s] if i else 0.0) + t_f[s]
    back = [[0.0] * p for _ in range(m)]
    for i in range(m):
        for s in reversed(range(p)):
            ready = back[i][s + 1] + latency if s < p - 1 else end[m - 1][s]
            previous = back[i - 1][s] if i else end[m - 1][s]
            back[i][s] = max(ready, previous) + t_b[s]
    return back[m - 1][0]


def _equal_stages(t_f, t_b, m, latency):
    return (m + len(t_f) - 1) * (t_f[0] + t_b[0]) + 2 * (len(t_f) - 1) * latency


def _max_of_sum(t_f, t_b, m, latency):
    t_f, t_b = np.asarray(t_f), np.asarray(t_b)
    return t_f.sum() + t_b.sum() + (m - 1) * (t_f + t_b).max() + 2 * (len(t_f) - 1) * latency


WRONG_GPIPE = {
    "equal-stage formula": (_equal_stages, "equal-stage formula"),
    "slowest everywhere": (lambda f, b, m, lam: (m + len(f) - 1) * (max(f) + max(b))
                           + 2 * (len(f) - 1) * lam, "slowest one's time"),
    "max of F + B": (_max_of_sum, "own bottleneck"),
    "no latency": (lambda f, b, m, lam: gpipe_makespan(f, b, m, 0.0), "latency is missing"),
    "latency one way": (lambda f, b, m, lam: gpipe_makespan(f, b, m, lam / 2), "once again on the way back"),
    "latency per micro-batch": (lambda f, b, m, lam: gpipe_makespan(f, b, m, lam * m), "every micro-batch"),
    "the simulator": (lambda f, b, m, lam: __import__("mlpar.algorithms.pipeline.simulator", fromlist=["x"])
                      .simulate(__import__("mlpar.algorithms.pipeline.schedules", fromlist=["x"])
                                .gpipe(len(f), m), t_f=f, t_b=b).makespan, "simulator.simulate"),
    "closed forms": (lambda f, b, m, lam: __import__("mlpar.algorithms.pipeline.simulator", fromlist=["x"])
                     .closed_forms(len(f), m, f[0], b[0])["makespan"], "simulator.closed_forms"),
    "the check's own reference": (lambda f, b, m, lam: ex.gpipe_makespan(f, b, m, lam),
                                  "exercises.gpipe_makespan"),
    "returns None": (lambda f, b, m, lam: None, "is None"),
    "a pair": (lambda f, b, m, lam: (1.0, 2.0), "0-D"),
    "NaN": (lambda f, b, m, lam: np.nan, "NaN"),
    "raises": (lambda f, b, m, lam: 1 / 0, "ZeroDivisionError"),
    "strings": (lambda f, b, m, lam: "a", "should be numbers"),
}


def test_gpipe_makespan_correct_solutions_pass(capsys):
    ex.check_gpipe_makespan(gpipe_makespan)
    ex.check_gpipe_makespan(gpipe_makespan_by_events)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("wrong", list(WRONG_GPIPE))
def test_gpipe_makespan_wrong_solutions_fail(wrong):
    func, match = WRONG_GPIPE[wrong]
    with pytest.raises(AssertionError, match=match) as info:
        ex.check_gpipe_makespan(func)
    assert str(info.value).startswith("Exercise 1 (GPipe's makespan with unequal stages)")


# -- Exercise 2 ------------------------------------------------------------------------------


def one_f_one_b(p, m, stage):
    warm = min(p - 1 - stage, m)
    order = [("F", i) for i in range(warm)]
    for j in range(m - warm):
        order += [("F", warm + j), ("B", j)]
    return order + [("B", i) for i in range(m - warm, m)]


def one_f_one_b_another_way(p, m, stage):
    # simulate the stage's own queue: run a forward while fewer than p - stage are in flight
    order, next_f, next_b = [], 0, 0
    while next_b < m:
        if next_f < m and next_f - next_b < p - stage:
            order.append(["F", np.int64(next_f)])
            next_f += 1
        else:
            order.append(["B", next_b])
            next_b += 1
    return order


def gpipe_order(p, m, stage):
    return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]


def serial_order(p, m, stage):
    return [op for i in range(m) for op in (("F", i), ("B", i))]


def backward_first(p, m, stage):
    return [("B", i) for i in range(m)] + [("F", i) for i in range(m)]


WRONG_ORDERS = {
    "gpipe": (gpipe_order, "GPipe order"),
    # stage s's neighbours still run 1F1B, so a serial stage waits for a gradient that needs
    # a forward it has not sent yet: the check reports the deadlock (or, for the last stage, slowness)
    "serial F,B,F,B": (serial_order, "cannot run this order|slower than GPipe"),
    "backward first": (backward_first, "cannot run this order"),
    "missing a backward": (lambda p, m, s: one_f_one_b(p, m, s)[:-1], "must appear once"),
    "a repeated forward": (lambda p, m, s: [("F", 0)] + one_f_one_b(p, m, s), "must appear once"),
    "reversed micro-batch order": (lambda p, m, s: [(k, m - 1 - i) for k, i in one_f_one_b(p, m, s)],
                                   "activations|cannot run|slower"),
    "too few warm-up forwards": (lambda p, m, s: one_f_one_b(p - 1, m, min(s, p - 2)) if p > 1 else [],
                                 "slower than GPipe|must appear once"),
    "None": (lambda p, m, s: None, "is None"),
    "a string": (lambda p, m, s: "F0 B0", "expected a list"),
    "bad pairs": (lambda p, m, s: [("F", 0, 1)], "pairs"),
    "bad kind": (lambda p, m, s: [("X", 0)], "integer i"),
    "raises": (lambda p, m, s: [][1], "IndexError"),
    # Issue 35 §2: retyping the library's order (its source was printed in the lesson) passed
    "the library's order": (lambda p, m, s: [(op.kind, op.micro) for op in __import__(
        "mlpar.algorithms.pipeline.schedules", fromlist=["x"]).one_f_one_b_order(p, m, s)],
        "schedules.one_f_one_b_order"),
}


def test_1f1b_order_correct_solutions_pass(capsys):
    ex.check_one_f_one_b_order(one_f_one_b)
    ex.check_one_f_one_b_order(one_f_one_b_another_way)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("wrong", list(WRONG_ORDERS))
def test_1f1b_order_wrong_solutions_fail(wrong):
    func, match = WRONG_ORDERS[wrong]
    with pytest.raises(AssertionError, match=match) as info:
        ex.check_one_f_one_b_order(func)
    assert str(info.value).startswith("Exercise 2 (the 1F1B order of one stage)")


# -- Exercise 3 ------------------------------------------------------------------------------


def convolve_tile(image, kernel, start, stop):
    h = kernel.shape[0] // 2
    lo, hi = max(start - h, 0), min(stop + h, len(image))
    block = image[lo:hi]
    out = domain.layer(block, kernel, pad_top=lo == start, pad_bottom=hi == stop)
    return out, ((start - lo) + (hi - stop)) * image.shape[1] * 8


def convolve_tile_another_way(image, kernel, start, stop):
    # zero-pad the whole picture, then one loop over the kernel taps on the tile's window
    h = kernel.shape[0] // 2
    above = image[max(start - h, 0):start]
    below = image[stop:stop + h]
    block = np.vstack([np.zeros((h - len(above), image.shape[1])), above, image[start:stop], below,
                       np.zeros((h - len(below), image.shape[1]))])
    block = np.pad(block, ((0, 0), (h, h)))
    out = np.zeros((stop - start, image.shape[1]))
    for u in range(kernel.shape[0]):
        for v in range(kernel.shape[1]):
            out += kernel[u, v] * block[u:u + stop - start, v:v + image.shape[1]]
    return out.tolist(), np.int64((above.size + below.size) * 8)


def no_halo(image, kernel, start, stop):
    out = domain.layer(image[start:stop], kernel, pad_top=True, pad_bottom=True)
    return out, 0


def k_rows_of_halo(image, kernel, start, stop):
    k = kernel.shape[0]
    out, _ = convolve_tile(image, kernel, start, stop)
    lo, hi = max(start - k, 0), min(stop + k, len(image))
    return out, ((start - lo) + (hi - stop)) * image.shape[1] * 8


def whole_image(image, kernel, start, stop):
    out = domain.convolve_same(image, kernel[None])[start:stop]
    return out, 0


def misaligned(image, kernel, start, stop):
    k = kernel.shape[0]
    lo = max(start - k, 0)
    block = image[lo:stop + k]
    out = domain.layer(block, kernel, pad_top=True, pad_bottom=True)
    return out[:stop - start], 2 * (k // 2) * image.shape[1] * 8


def halo_in_pixels(image, kernel, start, stop):
    out, nbytes = convolve_tile(image, kernel, start, stop)
    return out, nbytes // 8


WRONG_TILES = {
    "no halo": (no_halo, "is the halo missing"),
    "k rows of halo": (k_rows_of_halo, "k rows of halo instead"),
    "whole image": (whole_image, "halo bytes 0"),
    "misaligned k-row block": (misaligned, "NaN: the tile read rows further"),
    "halo counted in pixels": (halo_in_pixels, "halo bytes"),
    "transposed": (lambda im, k, a, b: (convolve_tile(im, k, a, b)[0].T, 0), "transposed|shape"),
    "None": (lambda im, k, a, b: None, "expected a pair"),
    "output None": (lambda im, k, a, b: (None, 0), "is None"),
    "bytes None": (lambda im, k, a, b: (convolve_tile(im, k, a, b)[0], None), "should be a number"),
    "raises": (lambda im, k, a, b: np.linalg.inv(np.zeros((2, 2))), "LinAlgError"),
}


def test_convolve_tile_correct_solutions_pass(capsys):
    ex.check_convolve_tile(convolve_tile)
    ex.check_convolve_tile(convolve_tile_another_way)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("wrong", list(WRONG_TILES))
def test_convolve_tile_wrong_solutions_fail(wrong):
    func, match = WRONG_TILES[wrong]
    with pytest.raises(AssertionError, match=match) as info:
        ex.check_convolve_tile(func)
    assert str(info.value).startswith("Exercise 3 (one tile with its halo)")


def test_unfinished_placeholder_says_not_done():
    def todo(*args):
        raise NotImplementedError

    for check in (ex.check_gpipe_makespan, ex.check_one_f_one_b_order, ex.check_convolve_tile):
        with pytest.raises(AssertionError, match="not done yet"):
            check(todo)


# -- Exercise 4: what pipelining gains (predict, then measure) -------------------------------


def speedup(p, m):
    return m * p / (m + p - 1)


def speedup_by_steps(p, m):  # written differently: count micro-batch steps of both schedules
    naive_steps = p * m  # p stages one after the other, each with the whole batch
    return naive_steps / (m + (p - 1))


WRONG_SPEEDUPS = {
    "utilisation": (lambda p, m: m / (m + p - 1), "utilisation"),
    "inverted": (lambda p, m: (m + p - 1) / (m * p), "upside down"),
    "no bubble: p": (lambda p, m: p, "no bubble"),
    "m": (lambda p, m: m, "that is m"),
    "off by one": (lambda p, m: m * p / (m + p), "off by one"),
    "1 + bubble over ideal": (lambda p, m: 1 + (p - 1) / m, "bubble over ideal"),
    "lesson's figure hard-coded": (lambda p, m: 16 / 9, "expected"),
    "None": (lambda p, m: None, "None"),
    "NaN": (lambda p, m: float("nan"), "Exercise 4"),
    "a pair": (lambda p, m: (p, m), "0-D"),
    "raises": (lambda p, m: p / 0, "ZeroDivisionError"),
}


def test_pipeline_speedup_correct_solutions_pass(capsys):
    for f in (speedup, speedup_by_steps, lambda p, m: float(np.divide(m * p, m + p - 1))):
        ex.check_pipeline_speedup(f)
    assert capsys.readouterr().out.count("passed") == 3


@pytest.mark.parametrize("wrong", list(WRONG_SPEEDUPS))
def test_pipeline_speedup_wrong_solutions_fail(wrong):
    func, match = WRONG_SPEEDUPS[wrong]
    with pytest.raises(AssertionError, match="Exercise 4") as info:
        ex.check_pipeline_speedup(func)
    assert match in str(info.value)


def test_each_exercise_is_graded_on_its_own(graded_alone):
    # Issue 25 item 3: one exercise wrong and the rest right fails exactly that check.
    right = {ex.check_gpipe_makespan: gpipe_makespan, ex.check_one_f_one_b_order: one_f_one_b,
             ex.check_convolve_tile: convolve_tile, ex.check_pipeline_speedup: speedup}
    wrong = {ex.check_gpipe_makespan: WRONG_GPIPE["max of F + B"][0],
             ex.check_one_f_one_b_order: WRONG_ORDERS[next(iter(WRONG_ORDERS))][0],
             ex.check_convolve_tile: no_halo, ex.check_pipeline_speedup: WRONG_SPEEDUPS["off by one"][0]}
    cases = {check: (check, right[check], wrong[check]) for check in right}
    for broken in right:
        assert list(graded_alone(cases, broken)) == [broken]


def test_grading_seed_adds_other_cases(monkeypatch):
    from mlpar.exercises import GRADING_SEED_VARIABLE

    seen = []

    def spy(p, m):
        seen.append((p, m))
        return speedup(p, m)

    ex.check_pipeline_speedup(spy)
    monkeypatch.setenv(GRADING_SEED_VARIABLE, "987")
    ex.check_pipeline_speedup(spy)
    half = len(seen) // 2
    assert seen[:half] != seen[half:]


def test_pipeline_speedup_refuses_the_checks_reference():
    with pytest.raises(AssertionError, match="exercises.pipeline_speedup"):
        ex.check_pipeline_speedup(lambda p, m: ex.pipeline_speedup(p, m))


def _simulated_speedup(p, m):  # measures the gain on the simulator instead of predicting it
    from mlpar.algorithms.pipeline import schedules, simulator

    naive = simulator.simulate(schedules.gpipe(p, 1), t_f=1.0 * m, t_b=2.0 * m).makespan
    return naive / simulator.simulate(schedules.gpipe(p, m), t_f=1.0, t_b=2.0).makespan


def _closed_form_speedup(p, m):
    from mlpar.algorithms.pipeline import simulator

    return p * m * 3.0 / simulator.closed_forms(p, m)["makespan"]


@pytest.mark.parametrize("func, match", [(_simulated_speedup, "simulator.simulate"),
                                         (_closed_form_speedup, "simulator.closed_forms")])
def test_pipeline_speedup_refuses_the_simulator(func, match):
    # Exercise 4 is a prediction: a call that measures the answer on the simulator is refused.
    with pytest.raises(AssertionError, match=match):
        ex.check_pipeline_speedup(func)


def test_gpipe_makespan_refuses_the_simulator_from_a_thread():
    from concurrent.futures import ThreadPoolExecutor

    from mlpar.algorithms.pipeline import schedules, simulator

    def in_a_thread(t_f, t_b, m, latency):
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: simulator.simulate(schedules.gpipe(len(t_f), m), t_f=t_f,
                                                          t_b=t_b).makespan).result()

    with pytest.raises(AssertionError, match="simulator.simulate"):
        ex.check_gpipe_makespan(in_a_thread)


def test_a_one_element_array_is_one_number(capsys):
    # written differently: numpy reductions with keepdims give shape (1,), still one number
    ex.check_gpipe_makespan(lambda f, b, m, lam: np.atleast_1d(gpipe_makespan(f, b, m, lam)))
    ex.check_pipeline_speedup(lambda p, m: np.array([speedup(p, m)]))
    assert capsys.readouterr().out.count("passed") == 2
