"""Checks for lesson 08: GPipe's makespan with unequal stages and latency, a 1F1B order, one
tile with its halo, and a predict-then-measure exercise: what pipelining gains over naive model
parallelism."""

from __future__ import annotations

import numpy as np

from mlpar.algorithms.pipeline import domain
from mlpar.algorithms.pipeline import schedules as sc
from mlpar.algorithms.pipeline import simulator as sim
from mlpar.exercises import as_array, call, call_refusing, case_seed, expect, fmt, passed


def _one_number(name: str, got, what: str) -> float:
    """``got`` as one float: a number, a 0-D array or a one-element array (``keepdims`` answers)."""
    arr = as_array(name, got, what=what)
    if arr.size != 1:
        raise AssertionError(f"{name}: {what} should be 0-D (one number), got shape {arr.shape}")
    return float(arr.reshape(()))


def _gpipe_cases():
    """(t_f per stage, t_b per stage, m, latency): equal stages, one slow stage, a slow forward
    and a slow backward on different stages, latency, one stage, one micro-batch; two drawn."""
    rng = np.random.default_rng(case_seed(3))
    cases = [([1.0] * 4, [2.0] * 4, 8, 0.0),
             ([1.0, 1.5, 1.0], [2.0, 3.0, 2.0], 6, 0.0),
             ([0.5, 2.0, 0.5, 0.5], [3.0, 1.0, 1.0, 1.0], 5, 0.0),  # slowest F and B on two stages
             ([1.0] * 3, [2.0] * 3, 4, 0.5),
             ([1.0, 0.5], [1.0, 2.5], 7, 0.25),
             ([2.0], [3.0], 5, 1.0),
             ([1.0, 2.0, 1.0], [1.0, 1.0, 3.0], 1, 0.5)]
    for _ in range(2):
        p = int(rng.integers(2, 7))
        cases.append((rng.uniform(0.2, 2.0, p).round(3).tolist(),
                      rng.uniform(0.2, 3.0, p).round(3).tolist(),
                      int(rng.integers(2, 16)), float(rng.choice([0.0, 0.3]))))
    return cases


def gpipe_makespan(t_f, t_b, m: int, latency: float) -> float:
    """GPipe's makespan with per-stage durations and a link latency: each phase is a flow shop
    of m identical jobs, Σ t + (m − 1)·max t, plus (p − 1) latencies; forward, then backward."""
    t_f, t_b = np.asarray(t_f, dtype=float), np.asarray(t_b, dtype=float)
    return float(t_f.sum() + t_b.sum() + (m - 1) * (t_f.max() + t_b.max())
                 + 2 * (len(t_f) - 1) * latency)


def check_gpipe_makespan(predict_makespan) -> None:
    """``predict_makespan(t_f, t_b, m, latency)`` → GPipe's makespan, against the simulator.

    ``t_f[s]``, ``t_b[s]``: stage s's forward and backward time per micro-batch; a message
    between stages arrives ``latency`` after it leaves. The simulator and its closed forms are
    refused: the exercise is the reasoning.
    """
    from mlpar.cluster.cost_model import CostModel

    name = "Exercise 1 (GPipe's makespan with unequal stages)"
    banned = {sim.simulate: "simulator.simulate", sim.closed_forms: "simulator.closed_forms",
              sim.zb_h1_makespan: "simulator.zb_h1_makespan",
              gpipe_makespan: "exercises.gpipe_makespan"}
    cases = _gpipe_cases()
    for t_f, t_b, m, lam in cases:
        p = len(t_f)
        case = f"t_f={t_f}, t_b={t_b}, m={m}, latency={fmt(lam)}"
        got = call_refusing(name, predict_makespan, banned, list(t_f), list(t_b), m, lam)
        value = _one_number(name, got, f"the makespan for {case}")
        link = CostModel(alpha=0.0, beta=0.0, latency=lam) if lam else None
        truth = sim.simulate(sc.gpipe(p, m), t_f=t_f, t_b=t_b, link=link).makespan
        assert np.isclose(truth, gpipe_makespan(t_f, t_b, m, lam), rtol=1e-12)  # model = simulator
        if np.isclose(value, truth, rtol=1e-9):
            continue
        tf, tb = np.asarray(t_f), np.asarray(t_b)
        hops = 2 * (p - 1) * lam
        misreadings = (
            ((m + p - 1) * (tf[0] + tb[0]) + hops, "that is the equal-stage formula with stage 0's "
             "times: with unequal stages the slowest stage sets the pace"),
            ((m + p - 1) * (tf.max() + tb.max()) + hops, "that charges every stage the slowest "
             "one's time; the fill and drain pass each stage once, at its own speed"),
            (tf.sum() + tb.sum() + (m - 1) * (tf + tb).max() + hops, "that takes the stage with "
             "the largest F + B; the forwards all finish before any backward starts, so each "
             "phase has its own bottleneck: max t_f and max t_b may sit on different stages"),
            ((m + p - 1) * (tf.mean() + tb.mean()) + hops, "that averages the stages; the pipeline "
             "moves at the pace of its slowest stage"),
            (truth - (p - 1) * lam if lam else np.nan, "the latency is paid once per hop on the "
             "way in and once again on the way back: 2(p − 1) latencies"),
            (truth - hops, "the latency is missing: the first micro-batch pays it at each of the "
             "p − 1 hops forward, and the gradient again on the way back"),
            (truth + 2 * (m - 1) * (p - 1) * lam, "latency on every micro-batch's trip: messages "
             "overlap with computation, so only the fill and drain wait for it"),
        )
        why = next((text for v, text in misreadings if np.isclose(value, v, rtol=1e-9)),
                   "follow micro-batch 0 through the forwards, then the slowest stage's queue")
        raise AssertionError(f"{name}: {case}: got {fmt(value)}, the simulator says "
                             f"{fmt(truth)}; {why}")
    passed(name, f"{len(cases)} cases agree with the simulator: equal and unequal stages, with "
           "and without link latency")


def as_order(name: str, got, case: str, stage: int) -> list[sc.Op]:
    """The student's order as ``Op``s, or an AssertionError saying what is wrong with it."""
    if got is None:
        raise AssertionError(f"{name}: {case}: the order is None; did the function forget to `return`?")
    if isinstance(got, (str, bytes)) or not hasattr(got, "__iter__"):
        raise AssertionError(f"{name}: {case}: expected a list of ('F', i) and ('B', i) pairs, "
                             f"got {type(got).__name__}")
    ops = []
    for item in got:
        try:
            kind, micro = item
            micro_int = int(micro)
        except (TypeError, ValueError):
            raise AssertionError(f"{name}: {case}: expected ('F', i) or ('B', i) pairs, got "
                                 f"{item!r}") from None
        if kind not in ("F", "B") or micro_int != micro:
            raise AssertionError(f"{name}: {case}: expected ('F', i) or ('B', i) with an integer i, "
                                 f"got {item!r}")
        ops.append(sc.Op(kind, micro_int, stage))
    return ops


def check_one_f_one_b_order(order_for_stage) -> None:
    """``order_for_stage(p, m, stage)``: the 1F1B order, checked by simulating it in a pipeline."""
    name = "Exercise 2 (the 1F1B order of one stage)"
    banned = {sc.one_f_one_b_order: "schedules.one_f_one_b_order",
              sc.one_f_one_b: "schedules.one_f_one_b", sc.make: "schedules.make",
              sc.interleaved: "schedules.interleaved"}  # v = 1 is plain 1F1B
    cases = ((4, 8, 0), (4, 8, 2), (4, 8, 3), (3, 2, 0), (5, 3, 1), (2, 1, 0))
    for p, m, stage in cases:
        case = f"p={p}, m={m}, stage {stage}"
        ops = as_order(name, call_refusing(name, order_for_stage, banned, p, m, stage), case, stage)
        needed = sorted(sc.Op(k, i, stage) for k in "FB" for i in range(m))
        if sorted(ops) != needed:
            missing = sorted(set(needed) - set(ops))
            extra = len(ops) - len(set(ops))
            raise AssertionError(f"{name}: {case}: each F and B of micro-batches 0..{m - 1} must "
                                 f"appear once; missing {missing[:4]}, repeated {extra}")
        orders = [tuple(ops) if d == stage else tuple(sc.one_f_one_b_order(p, m, d)) for d in range(p)]
        schedule = sc.Schedule("yours", p, m, 1, tuple(orders))
        try:
            run = sim.simulate(schedule, t_f=1.0, t_b=2.0)
        except ValueError as exc:
            raise AssertionError(f"{name}: {case}: the pipeline cannot run this order: {exc}") from None
        limit = min(p - stage, m)
        held = int(run.peak_activations[stage])
        if held > limit:
            hint = " (this is the GPipe order)" if held == m else ""
            raise AssertionError(f"{name}: {case}: stage {stage} holds the activations of {held} "
                                 f"micro-batches at once, 1F1B needs at most min(p-s, m) = {limit}{hint}")
        gpipe = sim.simulate(sc.gpipe(p, m), t_f=1.0, t_b=2.0).makespan
        if run.makespan > gpipe + 1e-9:
            raise AssertionError(f"{name}: {case}: makespan {fmt(run.makespan)}, slower than "
                                 f"GPipe's {fmt(gpipe)}: too few forwards before the first "
                                 "backward, so the pipeline is not yet full when the backwards start")
    passed(name, f"{len(cases)} stages simulated: valid, at most min(p-s, m) activations, as fast as GPipe")


def check_convolve_tile(convolve_tile) -> None:
    """``convolve_tile(image, kernel, start, stop)`` → (rows start..stop of the output, halo bytes).

    Rows of the image further than ⌊k/2⌋ from the tile are NaN, so a function that reads them
    (the whole image, or too wide a halo in its result) shows it.
    """
    name = "Exercise 3 (one tile with its halo)"
    image = domain.synthetic_image(30, 12, seed=case_seed(7))
    cases = [(3, 10, 20), (3, 0, 10), (3, 20, 30), (5, 8, 17), (5, 0, 30), (7, 27, 30)]
    for k, start, stop in cases:
        kernel = domain.random_kernels(1, k, seed=case_seed(k))[0]
        h = k // 2
        case = f"k={k}, rows {start}..{stop}"
        masked = np.full_like(image, np.nan)
        lo, hi = max(start - h, 0), min(stop + h, len(image))
        masked[lo:hi] = image[lo:hi]
        got = call(name, convolve_tile, masked, kernel.copy(), start, stop)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise AssertionError(f"{name}: {case}: expected a pair (output rows, halo bytes), got "
                                 f"{type(got).__name__}")
        out = as_array(name, got[0], what=f"the output for {case}", shape=(stop - start, image.shape[1]),
                       finite=False)
        expected = domain.convolve_same(image, kernel[None])[start:stop]
        if np.isnan(out).any():
            raise AssertionError(f"{name}: {case}: the output has NaN: the tile read rows further "
                                 f"than ⌊k/2⌋ = {h} from its own (they are NaN in this check)")
        wrong = np.flatnonzero(~np.isclose(out, expected, rtol=1e-9, atol=1e-12).all(axis=1))
        if wrong.size:
            hint = (" the tile's edge rows are wrong: is the halo missing?"
                    if set(wrong) <= {0, stop - start - 1} else "")
            raise AssertionError(f"{name}: {case}: output rows {(wrong + start).tolist()[:6]} differ "
                                 f"from the full convolution;{hint}")
        want = ((start - lo) + (hi - stop)) * image.shape[1] * 8
        try:
            nbytes = float(got[1])
        except (TypeError, ValueError):
            raise AssertionError(f"{name}: {case}: halo bytes should be a number, got "
                                 f"{type(got[1]).__name__}") from None
        if nbytes != want:
            hint = ""
            if want and np.isclose(nbytes, want * k / h):
                hint = ": looks like k rows of halo instead of ⌊k/2⌋"
            elif nbytes == 0 and want:
                hint = ": the rows received from the neighbours count"
            raise AssertionError(f"{name}: {case}: halo bytes {fmt(nbytes)}, expected {want} "
                                 f"(⌊k/2⌋ rows from each neighbour that exists, 8 bytes a pixel){hint}")
    passed(name, f"{len(cases)} tiles equal the full convolution, halo bytes as the formula says")


# -- Exercise 4: predict what pipelining gains, then measure it -------------------------------


def pipeline_speedup(p: int, m: int) -> float:
    """Naive model parallelism (one batch) over a pipeline of m micro-batches, equal stages and
    free links: p·m(t_f + t_b) / ((m + p − 1)(t_f + t_b)) = mp/(m + p − 1)."""
    return m * p / (m + p - 1)


SPEEDUP_CASES = ((2, 8), (4, 8), (4, 1), (1, 5), (8, 32), (3, 7))


def check_pipeline_speedup(predict_speedup) -> None:
    """``predict_speedup(p, m)``: how many times faster m micro-batches run than the naive
    schedule (the whole batch as one, m = 1) on p equal stages with free links.

    Graded exactly against mp/(m + p − 1), and confirmed on the simulator (a naive run whose one
    batch is m times a micro-batch's work, against GPipe with m micro-batches).
    """
    name = "Exercise 4 (what pipelining gains)"
    # The simulator would measure the gain instead of predicting it: refused like the reference.
    banned = {pipeline_speedup: "exercises.pipeline_speedup", sim.simulate: "simulator.simulate",
              sim.closed_forms: "simulator.closed_forms"}
    rng = np.random.default_rng(case_seed(19))
    cases = SPEEDUP_CASES + tuple((int(rng.integers(2, 12)), int(rng.integers(1, 40)))
                                  for _ in range(2))
    for p, m in cases:
        case = f"p={p}, m={m}"
        got = call_refusing(name, predict_speedup, banned, p, m)
        expect(name, got is not None, f"{case}: your function returned None; did it forget to "
               "`return`?")
        value = _one_number(name, got, f"the speedup for {case}")
        expected = pipeline_speedup(p, m)
        naive = sim.simulate(sc.gpipe(p, 1), t_f=1.0 * m, t_b=2.0 * m).makespan
        piped = sim.simulate(sc.gpipe(p, m), t_f=1.0, t_b=2.0).makespan
        assert np.isclose(naive / piped, expected, rtol=1e-12)  # the model is the simulator's
        if np.isclose(value, expected, rtol=1e-9):
            continue
        misreadings = (
            (m / (m + p - 1), "that is the pipeline's utilisation (1 − idle fraction), not a "
             "speedup: the naive run keeps one of the p devices busy, so the gain is p times "
             "that"),
            ((m + p - 1) / (m * p), "that is upside down: naive time over pipelined time"),
            (float(p), "that is p, the speedup with no bubble at all; filling and draining the "
             "pipeline costs p − 1 micro-batch steps"),
            (float(m), "that is m: the naive run is p·m micro-batch steps long, the pipelined one "
             "m + p − 1"),
            (m * p / (m + p), "off by one: the pipeline takes m + p − 1 steps, not m + p"),
            (1 + (p - 1) / m, "that is 1 + the bubble over ideal time: the makespan relative to "
             "m steps, not a speedup"),
        )
        why = next((text for v, text in misreadings if np.isclose(value, v, rtol=1e-9)),
                   "count the steps of the naive run (p stages, each m micro-batches' work, one "
                   "after the other) and of the pipeline")
        raise AssertionError(f"{name}: {case}: got {fmt(value)}, expected {fmt(expected)}; {why}")
    passed(name, f"mp/(m + p − 1) exactly in {len(cases)} cases, and the simulator agrees with "
           "equal stages and free links; the next cell measures it on real processes")
