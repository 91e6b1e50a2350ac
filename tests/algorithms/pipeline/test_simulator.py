import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.algorithms.pipeline import schedules as sc
from mlpar.algorithms.pipeline import simulator as sim
from mlpar.cluster.cost_model import CostModel

SIZES = [(1, 1), (1, 5), (2, 1), (2, 4), (3, 3), (4, 1), (4, 8), (5, 7), (8, 16)]


@pytest.mark.parametrize(("p", "m"), SIZES)
@pytest.mark.parametrize(("t_f", "t_b"), [(1.0, 2.0), (1.5, 1.0)])
def test_gpipe_closed_forms(p, m, t_f, t_b):
    t = sim.simulate(sc.gpipe(p, m), t_f=t_f, t_b=t_b)
    assert t.makespan == pytest.approx((m + p - 1) * (t_f + t_b), rel=1e-12)
    assert t.idle_fraction == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)
    assert t.bubble_over_ideal == pytest.approx((p - 1) / m, abs=1e-12)
    assert t.peak_activations.tolist() == [m] * p


@pytest.mark.parametrize(("p", "m"), SIZES)
def test_1f1b_same_makespan_fewer_activations(p, m):
    t = sim.simulate(sc.one_f_one_b(p, m), t_f=1.0, t_b=2.0)
    assert t.makespan == pytest.approx((m + p - 1) * 3.0, rel=1e-12)
    assert t.peak_activations.tolist() == [min(p - s, m) for s in range(p)]


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("v", [2, 3, 4])
@pytest.mark.parametrize(("t_f", "t_b"), [(1.0, 2.0), (1.0, 1.0), (2.0, 1.0)])
def test_interleaved_bubble_is_p_minus_1_over_v_m(p, k, v, t_f, t_b):
    m = k * p
    t = sim.simulate(sc.interleaved(p, m, v), t_f=t_f / v, t_b=t_b / v)  # each chunk: 1/v of the layers
    assert t.bubble_over_ideal == pytest.approx((p - 1) / (v * m), abs=1e-12)


def test_interleaved_with_one_chunk_is_1f1b():
    a = sim.simulate(sc.interleaved(3, 6, 1))
    assert a.makespan == sim.simulate(sc.one_f_one_b(3, 6)).makespan


@pytest.mark.parametrize("p", [2, 3, 4, 5])
@pytest.mark.parametrize("extra", [0, 1, 3])
@pytest.mark.parametrize(("T_F", "T_B", "T_W"),
                         [(1.0, 1.0, 1.0), (2.0, 3.0, 1.0), (1.0, 1.0, 0.5), (1.5, 2.0, 1.5)])
def test_zb_h1_makespan(p, extra, T_F, T_B, T_W):
    m = p + extra
    t = sim.simulate(sc.zb_h1(p, m), t_f=T_F, t_b=T_B, t_w=T_W)
    assert t.makespan == pytest.approx(m * (T_F + T_B + T_W) + (p - 1) * (T_F + T_B - T_W), rel=1e-12)
    assert t.peak_activations.max() == p  # no more than 1F1B keeps on its first device


def test_zb_h1_formula_needs_w_no_longer_than_f():
    # With T_W > T_F the deferred W ops no longer fit the drain: the bubble is (p-1)·T_B.
    p, m, T_F, T_B, T_W = 4, 8, 1.0, 2.0, 1.5
    t = sim.simulate(sc.zb_h1(p, m), t_f=T_F, t_b=T_B, t_w=T_W)
    assert t.makespan == pytest.approx(m * (T_F + T_B + T_W) + (p - 1) * T_B)


def test_zb_h1_beats_1f1b_with_the_same_work():
    one = sim.simulate(sc.one_f_one_b(4, 8), t_f=1.0, t_b=2.0)  # B = input grad + weight grad
    zb = sim.simulate(sc.zb_h1(4, 8), t_f=1.0, t_b=1.0, t_w=1.0)
    assert zb.makespan < one.makespan and zb.busy.sum() == pytest.approx(one.busy.sum())


@pytest.mark.parametrize("seed", range(20))
def test_unequal_stages_forward_only(seed):
    rng = np.random.default_rng(seed)
    p, m = int(rng.integers(1, 7)), int(rng.integers(1, 12))
    t_f = rng.uniform(0.1, 3.0, p)
    t = sim.simulate(sc.gpipe(p, m), t_f=t_f, t_b=0.0)
    last_forward = max(e for op, e in zip(t.ops, t.end, strict=True) if op.kind == "F")
    assert last_forward == pytest.approx(t_f.sum() + (m - 1) * t_f.max(), rel=1e-12)


def test_1f1b_never_slower_than_gpipe_with_random_stage_durations():
    for seed in range(400):
        rng = np.random.default_rng(seed)
        p, m = int(rng.integers(1, 7)), int(rng.integers(1, 13))
        t_f, t_b = rng.uniform(0.1, 3.0, p), rng.uniform(0.1, 3.0, p)
        g = sim.simulate(sc.gpipe(p, m), t_f=t_f, t_b=t_b).makespan
        o = sim.simulate(sc.one_f_one_b(p, m), t_f=t_f, t_b=t_b).makespan
        assert o <= g * (1 + 1e-12), (seed, p, m)


def test_counter_example_latency_makes_1f1b_slower():
    # Found by the simulator, checked by hand: p=2, m=3, t_f=t_b=1, α=1. GPipe streams its three
    # forwards and pays the latency only on fill and drain: 10. 1F1B's device 0 sends F2 only
    # after B0's gradient has come back (a round trip), so latency sits on its critical path: 12.
    link = CostModel(alpha=1.0, beta=0.0)
    g = sim.simulate(sc.gpipe(2, 3), t_f=1.0, t_b=1.0, link=link)
    o = sim.simulate(sc.one_f_one_b(2, 3), t_f=1.0, t_b=1.0, link=link)
    assert (g.makespan, o.makespan) == (10.0, 12.0)
    f2 = o.start[o.ops.index(sc.Op("F", 2, 0))]
    assert f2 == 6.0  # after B0 on device 0, which the gradient reached at 5


def test_link_cost_delays_each_hop():
    link = CostModel(alpha=0.5, beta=1e-3)
    t = sim.simulate(sc.gpipe(3, 1), t_f=1.0, t_b=1.0, link=link, message_bytes=500)
    assert t.makespan == pytest.approx(6 * 1.0 + 4 * (0.5 + 0.5))


def test_naive_model_parallelism_uses_one_device_at_a_time():
    for p in (2, 4, 8):
        t = sim.simulate(sc.gpipe(p, 1))
        assert 1 - t.idle_fraction == pytest.approx(1 / p)


def test_remat_trades_a_second_forward_for_memory():
    plain = sim.simulate(sc.gpipe(4, 8), t_f=1, t_b=2, message_bytes=100, activation_bytes=1000)
    remat = sim.simulate(sc.gpipe(4, 8), t_f=1, t_b=2, message_bytes=100, activation_bytes=1000, remat=True)
    assert remat.makespan == pytest.approx((8 + 3) * 4)
    # stashes: 8 inputs of 100 bytes; during a B, the rebuilt activations (1000) on top
    assert plain.peak_bytes.tolist() == [8000.0] * 4 and remat.peak_bytes.tolist() == [1800.0] * 4
    # 1F1B + remat: device 0 keeps up to 4 inputs and rebuilds one micro-batch's activations
    one = sim.simulate(sc.one_f_one_b(4, 8), t_f=1, t_b=2, message_bytes=100,
                       activation_bytes=1000, remat=True)
    assert one.peak_bytes.tolist() == [400.0 + 1000 - 0, 300.0 + 1000, 200.0 + 1000, 100.0 + 1000]


def test_time_over_ideal_counts_recomputation_as_lost_time():
    # Review 07-08 finding 2: with remat at the old "bubble over ideal" it looked free.
    runs = sim.all_schedules(4, 8, 2)
    lost = sim.time_over_ideal(runs)
    assert lost["1f1b"] == pytest.approx(3 / 8) and lost["gpipe"] == pytest.approx(3 / 8)
    assert lost["gpipe + remat"] == pytest.approx(44 / 24 - 1)  # 8 extra forwards of 1
    assert runs["gpipe + remat"].bubble_over_ideal == pytest.approx(3 / 8)  # the old, free-looking
    # interleaving's memory price: 11 chunk stashes of half a stage = 5.5 stages against 4
    inter, one = runs["interleaved, v=2"], runs["1f1b"]
    assert inter.peak_bytes.max() / one.peak_bytes.max() == pytest.approx(1 + 3 / (4 * 2))


def test_invalid_order_is_rejected_with_the_op_and_its_input():
    bad = sc.from_orders("bad", [[("B", 0, 0), ("F", 0, 0)], [("F", 0, 1), ("B", 0, 1)]], p=2, m=1)
    with pytest.raises(ValueError, match=r"on device 0, B0 comes before its input F0 exists"):
        sim.simulate(bad)
    cycle = sc.from_orders("cycle", [[("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0)],
                                     [("F", 1, 1), ("B", 1, 1), ("F", 0, 1), ("B", 0, 1)]], p=2, m=2)
    with pytest.raises(ValueError, match="invalid order"):
        sim.simulate(cycle)


@pytest.mark.parametrize(("orders", "match"), [
    ([[("F", 0, 0)], [("F", 0, 1), ("B", 0, 1)]], "missing"),
    ([[("F", 0, 0), ("B", 0, 0), ("B", 0, 0)], [("F", 0, 1), ("B", 0, 1)]], "appears twice"),
    ([[("F", 0, 1), ("B", 0, 0)], [("F", 0, 0), ("B", 0, 1)]], "lives on device"),
    ([[("X", 0, 0), ("B", 0, 0)], [("F", 0, 1), ("B", 0, 1)]], "unknown op"),
])
def test_malformed_schedules(orders, match):
    with pytest.raises(ValueError, match=match):
        sim.simulate(sc.from_orders("bad", orders, p=2, m=1))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"t_f": -1.0}, "t_f: expected non-negative"),
    ({"t_b": [1.0, 2.0]}, "t_b: expected a number or 3 numbers"),
    ({"t_w": float("nan")}, "t_w: expected non-negative finite"),
    ({"message_bytes": -1}, "message_bytes"),
    ({"link": 0.5}, "link: expected a CostModel"),
    ({"remat": "yes"}, "remat: expected True or False"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        sim.simulate(sc.gpipe(3, 2), **kwargs)


def test_timeline_repr_and_plot():
    import matplotlib

    matplotlib.use("Agg")
    t = sim.simulate(sc.zb_h1(3, 4), t_f=1, t_b=1, t_w=1)
    assert "zb-h1" in repr(t) and "idle fraction" in repr(t)
    ax = t.plot()
    assert len(ax.get_yticklabels()) == 3


def test_simulator_is_fast_enough_for_p64_m512():
    start = time.perf_counter()
    t = sim.simulate(sc.one_f_one_b(64, 512))
    assert len(t.ops) == 2 * 64 * 512
    assert time.perf_counter() - start < 30  # the benchmark reports the real figure (target < 1 s)


@settings(max_examples=150, deadline=None)
@given(p=st.integers(1, 6), m=st.integers(1, 12), data=st.data())
def test_property_1f1b_never_slower_and_never_holds_more(p, m, data):
    durations = st.lists(st.floats(0.05, 5.0), min_size=p, max_size=p)
    t_f, t_b = data.draw(durations), data.draw(durations)
    g = sim.simulate(sc.gpipe(p, m), t_f=t_f, t_b=t_b)
    o = sim.simulate(sc.one_f_one_b(p, m), t_f=t_f, t_b=t_b)
    assert o.makespan <= g.makespan * (1 + 1e-12)
    assert np.all(o.peak_activations <= g.peak_activations)
    # every op starts only after its inputs ended, and a device runs one op at a time
    end = {op: e for op, e in zip(o.ops, o.end, strict=True)}
    for op, start in zip(o.ops, o.start, strict=True):
        assert all(end[dep] <= start + 1e-12 for dep in sim.dependencies(op, o.schedule))
    for d in range(p):
        mine = np.sort(o.start[o.device == d]), np.sort(o.end[o.device == d])
        assert np.all(mine[0][1:] >= mine[1][:-1] - 1e-12)


def test_zb_h1_general_formula_matches_the_simulator():
    # Issue 28: (p−1)(T_F+T_B−T_W) also needs T_W ≤ T_B; the bubble is (p−1)·max(T_F, T_B,
    # T_F+T_B−T_W) in general.
    rng = np.random.default_rng(3)
    for _ in range(300):
        p = int(rng.integers(2, 7))
        m = int(rng.integers(p, 3 * p + 1))
        T_F, T_B, T_W = (float(x) for x in rng.uniform(0.1, 3.0, 3).round(2))
        t = sim.simulate(sc.zb_h1(p, m), t_f=T_F, t_b=T_B, t_w=T_W)
        assert t.makespan == pytest.approx(sim.zb_h1_makespan(p, m, T_F, T_B, T_W), rel=1e-12)
    # T_W > T_B (with T_W < T_F): the bubble is (p−1)·T_F, not (p−1)(T_F+T_B−T_W)
    p, m, T_F, T_B, T_W = 4, 8, 3.0, 1.0, 2.0
    t = sim.simulate(sc.zb_h1(p, m), t_f=T_F, t_b=T_B, t_w=T_W)
    assert t.makespan == pytest.approx(m * (T_F + T_B + T_W) + (p - 1) * T_F)
    with pytest.raises(ValueError, match="m: expected at least p=4"):
        sim.zb_h1_makespan(4, 3, 1.0, 1.0, 1.0)


def test_link_latency_is_part_of_every_hop():
    # Issue 28: the simulator ignored CostModel.latency (p = 5, m = 6: 46.0 instead of 49.0).
    s = sc.one_f_one_b(5, 6)
    with_latency = sim.simulate(s, link=CostModel(alpha=0.1, beta=0.0, latency=0.4))
    as_alpha = sim.simulate(s, link=CostModel(alpha=0.5, beta=0.0))
    without = sim.simulate(s, link=CostModel(alpha=0.1, beta=0.0))
    assert with_latency.makespan == pytest.approx(as_alpha.makespan, rel=1e-12)
    assert with_latency.makespan > without.makespan


@pytest.mark.parametrize("link", [CostModel(straggler=1, slowdown=3.0), CostModel(jitter=0.5)])
def test_link_fields_the_simulator_cannot_apply_are_refused(link):
    with pytest.raises(ValueError, match="link: expected a cost model of messages only"):
        sim.simulate(sc.gpipe(2, 2), link=link)


def test_memory_vs_bubble_plot_names_schedules_in_a_legend_not_on_the_points():
    # Issue 25 item 5: 1F1B, 1F1B + remat and ZB-H1 labels were written on top of each other.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sim.all_schedules(4, 8, 2)
    ax = sim.plot_memory_vs_bubble(runs)
    try:
        assert not ax.texts  # nothing written next to the points
        assert [t.get_text() for t in ax.get_legend().get_texts()] == list(runs)
        markers = [c.get_paths()[0].vertices.tobytes() for c in ax.collections]
        sizes = [float(c.get_sizes()[0]) for c in ax.collections]
        assert len(set(sizes)) == len(runs)  # coinciding points show as nested markers
        assert len(markers) == len(runs)
        assert "[layer activations]" in ax.get_xlabel()
    finally:
        plt.close(ax.figure)
    with pytest.raises(TypeError, match="runs: expected a non-empty dict"):
        sim.plot_memory_vs_bubble({})


def test_widget_every_schedule_size_and_remat():
    # Issue 31 §4: lesson 08's widget through every option its text suggests, plotted.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = refused = 0
    for name in ("gpipe", "1f1b", "interleaved", "zb-h1"):
        for p in (1, 2, 4, 8):
            for m in (1, 3, 8):
                for v in (1, 2, 3):
                    for remat in (False, True):
                        try:
                            t, runs = sim.explore(name, p, m, v, remat)
                        except ValueError as error:  # the widget prints it
                            assert name == "interleaved" and m % p and "multiple" in str(error)
                            refused += 1
                            continue
                        lost = sim.time_over_ideal(runs)
                        assert all(np.isfinite(x) and x >= -1e-12 for x in lost.values())
                        if remat and name != "zb-h1" and p > 1:
                            plain, _ = sim.explore(name, p, m, v, False)
                            assert t.makespan > plain.makespan  # the second forward costs time
                        shown += 1
    assert shown > 100 and refused > 0
    t, runs = sim.explore("interleaved", 4, 8, 2)
    fig, (left, right) = plt.subplots(1, 2)
    t.plot(left, numbers=len(t.ops) <= 96)
    sim.plot_memory_vs_bubble(runs, right)
    plt.close(fig)


@pytest.mark.parametrize("v, columns", [(2, 4), (4, 3)])
def test_gantt_legend_wraps_to_two_rows_when_it_would_run_into_the_title(v, columns):
    # v = 4: F, B and four chunk shades in one row spanned the axes and covered its title
    import matplotlib

    matplotlib.use("Agg")
    t = sim.simulate(sc.interleaved(4, 8, v), t_f=1 / v, t_b=2 / v)
    ax = t.plot(title="interleaved")
    legend = ax.get_legend()
    assert [x.get_text() for x in legend.get_texts()] == ["F", "B"] + [f"chunk {c}" for c in range(v)]
    assert legend._ncols == columns
