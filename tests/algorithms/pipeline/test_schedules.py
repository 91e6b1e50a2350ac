import numpy as np
import pytest

from mlpar.algorithms.pipeline import schedules as sc
from mlpar.algorithms.pipeline import simulator as sim


def test_gpipe_order_is_all_forwards_then_all_backwards():
    s = sc.gpipe(3, 4)
    assert [op.kind for op in s.orders[1]] == ["F"] * 4 + ["B"] * 4
    assert {op.stage for op in s.orders[2]} == {2}


@pytest.mark.parametrize(("p", "m"), [(1, 1), (2, 1), (4, 2), (4, 8), (5, 3)])
def test_1f1b_warm_up_and_steady_state(p, m):
    for d in range(p):
        order = sc.one_f_one_b_order(p, m, d)
        warm = min(p - 1 - d, m)
        assert [op.kind for op in order[:warm]] == ["F"] * warm
        everything = [sc.Op(k, i, d) for k in "FB" for i in range(m)]
        assert sorted(order) == sorted(everything)
        if m > warm:
            assert order[warm:warm + 2] == [sc.Op("F", warm, d), sc.Op("B", 0, d)]


def test_interleaved_places_chunks_round_robin():
    s = sc.interleaved(2, 4, 3)
    assert s.n_stages == 6
    assert {op.stage for op in s.orders[0]} == {0, 2, 4}
    assert {op.stage for op in s.orders[1]} == {1, 3, 5}


def test_zb_h1_has_w_ops_and_defers_d_of_them():
    s = sc.zb_h1(4, 8)
    assert s.split_backward
    for d, order in enumerate(s.orders):
        tail = order[-d:] if d else []
        assert all(op.kind == "W" for op in tail)
        assert sum(op.kind == "W" for op in order) == 8


def test_make_by_name_and_unknown_name_lists_the_known_ones():
    assert sc.make("1f1b", 3, 5).name == "1f1b"
    assert sc.make("interleaved", 2, 4, 2).v == 2
    with pytest.raises(ValueError, match="name: expected a schedule, one of 'gpipe', '1f1b', 'interleaved'"):
        sc.make("pipedreem", 2, 4)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: sc.gpipe(0, 4), "p: expected a positive integer, got 0"),
    (lambda: sc.one_f_one_b(2, 0), "m: expected a positive integer, got 0"),
    (lambda: sc.interleaved(2, 4, 0), "v: expected a positive integer"),
    (lambda: sc.interleaved(4, 6, 2), "m: expected a multiple of p=4"),
    (lambda: sc.make("zb-h1", 2, -1), "m: expected a positive integer"),
    (lambda: sc.one_f_one_b_order(3, 4, 3), "stage: expected an integer <= 2"),
])
def test_bad_sizes_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_non_integer_sizes_are_type_errors():
    with pytest.raises(TypeError, match="p: expected a positive integer"):
        sc.gpipe(2.5, 4)


@pytest.mark.parametrize("p", [2, 3, 4, 6])
def test_pipedream_weight_stashing_keeps_p_minus_s_versions(p):
    report = sc.weight_versions(sc.pipedream(p, 4 * p))
    assert report.versions_kept.tolist() == [p - s for s in range(p)]
    assert report.delay.tolist() == [p - 1 - s for s in range(p)]


@pytest.mark.parametrize(("p", "k"), [(2, 2), (3, 4), (4, 4), (4, 8)])
def test_2bw_keeps_two_versions_with_delay_one(p, k):
    report = sc.weight_versions(sc.pipedream(p, 4 * k), update_every=k)
    assert report.versions_kept.tolist() == [2] * p
    assert report.delay.tolist() == [1] * p


def test_2bw_needs_batches_of_at_least_p():
    with pytest.raises(ValueError, match="update_every: expected 1"):
        sc.weight_versions(sc.pipedream(4, 8), update_every=2)


def test_from_orders_builds_a_schedule_the_simulator_accepts():
    orders = [[("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("B", 1, 0)],
              [("F", 0, 1), ("B", 0, 1), ("F", 1, 1), ("B", 1, 1)]]
    s = sc.from_orders("mine", orders, p=2, m=2)
    expected = sim.simulate(sc.one_f_one_b(2, 2), t_f=1, t_b=1).makespan
    assert sim.simulate(s, t_f=1, t_b=1).makespan == pytest.approx(expected)
    with pytest.raises(ValueError, match="orders: expected one order per device"):
        sc.from_orders("mine", orders[:1], p=2, m=2)
    with pytest.raises(ValueError, match=r"orders\[0\]: expected \(kind, micro, stage\)"):
        sc.from_orders("mine", [["F0"], []], p=2, m=1)


def test_ops_print_short():
    assert repr(sc.Op("F", 3, 0)) == "F3" and repr(sc.Op("B", 2, 1)) == "B2@1"
    assert np.all([isinstance(op, tuple) for op in sc.gpipe(2, 2).orders[0]])
