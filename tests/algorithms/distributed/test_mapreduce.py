import numpy as np
import pytest

from mlpar.algorithms.distributed import house_prices, mapreduce
from mlpar.cluster.cost_model import CostModel
from mlpar.core import splits


@pytest.fixture(scope="module")
def data():
    return house_prices.load()


def test_mapreduce_equals_serial_gradient_descent_on_every_engine(engine_factory, data):
    X, y = data
    serial = mapreduce.serial_gradient_descent(X, y, lr=0.5, n_iter=20)
    eng = engine_factory(2)
    r = mapreduce.gradient_descent(X, y, engine=eng, lr=0.5, n_iter=20)
    assert r.engine == eng.name and r.n_workers == 2
    np.testing.assert_allclose(r.weights, serial.weights, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(r.losses, serial.losses, rtol=1e-12)
    assert np.all(np.diff(r.times) >= 0)


@pytest.mark.parametrize("m", [1, 3, 7, 64])
def test_any_number_of_workers_gives_the_serial_weights(data, m):
    X, y = data
    serial = mapreduce.serial_gradient_descent(X, y, lr=0.5, n_iter=10)
    r = mapreduce.gradient_descent(X, y, n_workers=m, lr=0.5, n_iter=10)
    np.testing.assert_allclose(r.weights, serial.weights, rtol=1e-12, atol=1e-9)


def test_serial_gradient_descent_reaches_least_squares(data):
    X, y = data
    r = mapreduce.serial_gradient_descent(X, y, lr=0.5, n_iter=400)
    np.testing.assert_allclose(r.weights, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-6)
    assert np.all(np.diff(r.losses) <= 1e-9)  # monotone, up to rounding at the optimum


def test_shards_cover_every_row_once():
    parts = splits.shards(10, 3)
    assert [(s.start, s.stop) for s in parts] == [(0, 3), (3, 7), (7, 10)]
    with pytest.raises(ValueError, match="n_workers: expected at most n_samples = 10"):
        splits.shards(10, 11)


def test_bigger_messages_cost_more_virtual_time(data):
    X, y = data
    cost = CostModel(alpha=1e-4, beta=1e-9)
    small = mapreduce.gradient_descent(X, y, n_workers=4, n_iter=2, cost=cost)
    big = mapreduce.gradient_descent(X, y, n_workers=4, n_iter=2, cost=cost, message_bytes=10**7)
    assert big.time_per_iteration > small.time_per_iteration + 8 * 1e-2 * 0.99


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_workers": 0}, ValueError, "n_workers"),
        ({"n_workers": 5000}, ValueError, "n_workers: expected at most"),
        ({"engine": "spark"}, ValueError, "engine: expected one of"),
        ({"lr": -0.1}, ValueError, "lr"),
        ({"n_iter": 0}, ValueError, "n_iter"),
        ({"cost": CostModel(), "n_workers": 2.5}, TypeError, "n_workers"),
    ],
)
def test_bad_input(data, kwargs, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        mapreduce.gradient_descent(X, y, **kwargs)


def test_mismatched_data():
    with pytest.raises(ValueError, match="y"):
        mapreduce.gradient_descent(np.ones((4, 2)), np.ones(3))
    with pytest.raises(TypeError, match="X"):
        mapreduce.gradient_descent([[1.0]], np.ones(1))


def test_one_round_and_the_result_type(data):
    from mlpar.algorithms.distributed import least_squares
    from mlpar.algorithms.training import TrainingResult
    from mlpar.cluster.engines import SimulatedEngine

    X, y = data
    w = np.linspace(-1, 1, X.shape[1])
    eng = SimulatedEngine(5)
    g, sse = mapreduce.mapreduce_round(eng, mapreduce.place_shards(eng, X, y), w)
    np.testing.assert_allclose(g / len(y), least_squares.gradient(X, y, w), rtol=1e-12)
    assert sse / (2 * len(y)) == pytest.approx(least_squares.loss(X, y, w), rel=1e-12)
    r = mapreduce.gradient_descent(X, y, n_workers=2, n_iter=3)
    assert isinstance(r, TrainingResult) and r.clock == "virtual" and r.n_updates == 3
    assert isinstance(mapreduce.serial_gradient_descent(X, y, n_iter=2), TrainingResult)


def test_calibrated_prediction_on_processes(data, process_census):
    from mlpar.cluster.engines import ProcessEngine

    X, y = house_prices.load(20_000)
    with ProcessEngine(2) as eng:
        p = mapreduce.measure_and_predict(eng, X, y, n_iter=3, repeat=2)
    assert p.engine == "processes" and p.n_workers == 2
    assert p.measured > 0 and p.predicted > 0 and p.error >= 1
    assert p.cost.alpha >= 0 and p.cost.latency >= 0


# --- Bad data is named as bad data, before any worker starts (issue 25 item 4) ---------------


@pytest.mark.parametrize("where, match", [("X", r"X: NaN at row 17, column 3"),
                                          ("y", r"y: infinity at position 17")])
def test_nan_in_the_data_is_named_before_any_worker_starts(monkeypatch, data, where, match):
    X, y = data[0].copy(), data[1].copy()
    if where == "X":
        X[17, 3] = np.nan
    else:
        y[17] = np.inf

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was opened before the data was checked")

    monkeypatch.setattr(mapreduce, "engine_scope", no_engine)
    for engine in ("simulated", "processes"):
        with pytest.raises(ValueError, match=match) as err:
            mapreduce.gradient_descent(X, y, engine=engine, n_workers=2, n_iter=3)
        assert "diverged" not in str(err.value)
    with pytest.raises(ValueError, match=match):
        mapreduce.serial_gradient_descent(X, y, n_iter=3)


# --- Key/value MapReduce and backup tasks (issue 28 section 4) -------------------------------


def test_key_value_mapreduce_counts_words_and_matches_dask_foldby():
    import dask.bag as db

    lines = ["the map step", "the shuffle step", "the reduce step", "", "map"]
    counts = mapreduce.map_shuffle_reduce(lines, lambda line: [(w, 1) for w in line.split()],
                                          lambda key, ones: sum(ones), n_map=3, n_reduce=2)
    assert counts == {"map": 2, "reduce": 1, "shuffle": 1, "step": 3, "the": 3}
    words = db.from_sequence(lines, npartitions=2).map(str.split).flatten()
    folded = dict(words.foldby(lambda w: w, lambda n, _: n + 1, 0, lambda a, b: a + b, 0)
                  .compute(scheduler="synchronous"))
    assert folded == counts
    # the partition count changes where keys are reduced, never the result
    assert mapreduce.map_shuffle_reduce(lines, lambda line: [(w, 1) for w in line.split()],
                                        lambda key, ones: sum(ones), n_map=1, n_reduce=5) == counts
    assert mapreduce.map_shuffle_reduce([], lambda r: [(r, 1)], lambda k, v: v) == {}


def test_key_value_mapreduce_refuses_bad_input():
    with pytest.raises(TypeError, match="records: expected a sequence"):
        mapreduce.map_shuffle_reduce("abc", lambda r: [], lambda k, v: v)
    with pytest.raises(TypeError, match="mapper"):
        mapreduce.map_shuffle_reduce([1], None, lambda k, v: v)
    with pytest.raises(ValueError, match="n_reduce"):
        mapreduce.map_shuffle_reduce([1], lambda r: [], lambda k, v: v, n_reduce=0)


def test_map_phase_by_hand_with_and_without_a_backup():
    # 3 tasks of 1 s on 2 workers, worker 0 ten times slower. Without backups the phase waits
    # for worker 0's task until 10 s. With them, worker 1 finishes tasks 1 and 2 by 2 s, copies
    # task 0 and finishes it at 3 s; worker 0's copy is stopped then (3 s of compute each).
    cost = CostModel(per_sample=1.0, straggler=0, slowdown=10.0)
    plain = mapreduce.map_phase(3, 2, cost, samples_per_task=1)
    backed = mapreduce.map_phase(3, 2, cost, samples_per_task=1, backups=True)
    assert (plain.makespan, plain.busy, plain.backups) == (10.0, 12.0, 0)
    assert (backed.makespan, backed.busy, backed.backups, backed.won) == (3.0, 6.0, 1, 1)


def test_backups_cut_a_straggler_and_never_lengthen_the_phase():
    for slowdown in (1.0, 2.0, 4.0, 8.0):
        for seed in range(5):
            cost = CostModel(per_sample=1e-3, straggler=0, slowdown=slowdown, jitter=0.3, seed=seed)
            plain = mapreduce.map_phase(64, 16, cost)
            backed = mapreduce.map_phase(64, 16, cost, backups=True)
            assert backed.makespan <= plain.makespan + 1e-12
            if slowdown >= 4:  # a slow worker's last task is copied and finished elsewhere
                assert backed.makespan < (0.95 if slowdown == 4 else 0.8) * plain.makespan
    with pytest.raises(TypeError, match="cost: expected a CostModel"):
        mapreduce.map_phase(4, 2, None)
