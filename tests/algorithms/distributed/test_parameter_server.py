import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpar.algorithms.distributed import house_prices, least_squares, parameter_server
from mlpar.cluster.cost_model import CostModel
from mlpar.core import splits

X, Y = house_prices.load()
STRAGGLING = CostModel(alpha=1e-5, per_sample=1e-5, straggler=0, slowdown=4.0, jitter=0.5, seed=1)


def test_ssp_with_bound_zero_is_the_synchronous_run_exactly():
    sync = parameter_server.train(X, Y, mode="sync", n_workers=6, n_updates=240, cost=STRAGGLING)
    ssp0 = parameter_server.train(X, Y, mode="ssp", staleness_bound=0, n_workers=6, n_updates=240,
                                  cost=STRAGGLING)
    np.testing.assert_array_equal(ssp0.weights, sync.weights)
    np.testing.assert_array_equal(ssp0.losses, sync.losses)
    np.testing.assert_array_equal(ssp0.times, sync.times)
    assert sync.staleness.max() == 0


@settings(max_examples=12, deadline=None)
@given(s=st.integers(0, 6), m=st.integers(2, 8), seed=st.integers(0, 1000))
def test_observed_staleness_never_exceeds_the_bound(s, m, seed):
    cost = STRAGGLING.with_(seed=seed)
    r = parameter_server.train(X, Y, mode="ssp", staleness_bound=s, n_workers=m, n_updates=120,
                               cost=cost, seed=seed)
    assert len(r.workers) == 120
    assert r.staleness.max() <= s
    assert r.staleness.min() >= 0


def test_the_bound_is_reached_and_async_goes_beyond_it():
    # With a 4x straggler, fast workers run ahead until the bound stops them.
    ssp = parameter_server.train(X, Y, mode="ssp", staleness_bound=3, n_workers=4, n_updates=200,
                                 cost=STRAGGLING)
    asy = parameter_server.train(X, Y, mode="async", n_workers=4, n_updates=200, cost=STRAGGLING)
    assert ssp.staleness.max() == 3
    assert asy.staleness.max() > 3
    assert asy.times[-1] < ssp.times[-1]  # nobody waits: the same updates finish sooner


def test_async_with_one_worker_is_serial_sgd():
    w = parameter_server.train(X, Y, mode="async", n_workers=1, n_updates=150, seed=4).weights
    np.testing.assert_array_equal(w, parameter_server.serial_sgd(X, Y, n_updates=150, seed=4))


def test_delayed_sgd_with_no_delay_is_serial_sgd_and_a_delay_is_taken_from_the_history():
    losses = parameter_server.delayed_sgd(X, Y, delay=0, n_updates=120, seed=4)
    w = parameter_server.serial_sgd(X, Y, n_updates=120, seed=4)
    assert len(losses) == 121 and losses[-1] == least_squares.loss(X, Y, w)
    # delay 2 by hand: gradient k at w_{max(k-2, 0)}, the same minibatch stream
    (rng,) = [np.random.default_rng(s) for s in np.random.SeedSequence(4).spawn(1)]
    ws = [np.zeros(X.shape[1])]
    for k in range(30):
        rows = rng.integers(0, len(Y), size=16)
        ws.append(ws[-1] - 0.05 * least_squares.minibatch_gradient(X, Y, ws[max(k - 2, 0)], rows))
    delayed = parameter_server.delayed_sgd(X, Y, delay=2, n_updates=30, seed=4)
    assert delayed[-1] == pytest.approx(least_squares.loss(X, Y, ws[-1]), rel=1e-12)


def test_a_delay_alone_makes_a_stable_step_diverge():
    # Levin and May's limit 2 sin(π/(2(2τ+1)))/L: at τ = 7 it is about 0.113 here; 0.2 survives
    # without delay and diverges with it.
    parameter_server.delayed_sgd(X, Y, delay=0, lr=0.2, batch_size=32, n_updates=600)
    with pytest.raises(ValueError, match="lr"):
        parameter_server.delayed_sgd(X, Y, delay=7, lr=0.2, batch_size=32, n_updates=600)
    with pytest.raises(ValueError, match="delay"):
        parameter_server.delayed_sgd(X, Y, delay=-1)


def test_async_replays_as_serial_sgd_on_the_recorded_stale_weights():
    # Recompute every update serially from the version of w it was computed on: the recorded
    # bookkeeping (who, which version, which rows) must reproduce the asynchronous run.
    m, lr, b = 5, 0.05, 16
    r = parameter_server.train(X, Y, mode="async", n_workers=m, n_updates=200, cost=STRAGGLING,
                               lr=lr, batch_size=b, seed=9)

    parts = splits.shards(len(Y), m)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(9).spawn(m)]
    versions = [np.zeros(X.shape[1])]
    for k, (i, v) in enumerate(zip(r.workers, r.pulled, strict=True)):
        rows = streams[i].integers(0, parts[i].stop - parts[i].start, size=b)
        g = least_squares.minibatch_gradient(X[parts[i]], Y[parts[i]], versions[v], rows)
        versions.append(versions[-1] - lr * g)
        assert r.delay[k] == k - v
    np.testing.assert_array_equal(versions[-1], r.weights)
    assert r.delay.max() > 0


def test_every_mode_converges_towards_least_squares():
    best = np.linalg.lstsq(X, Y, rcond=None)[0]
    optimum = np.sum((X @ best - Y) ** 2) / (2 * len(Y))
    for mode, s in (("sync", None), ("async", None), ("ssp", 2)):
        r = parameter_server.train(X, Y, mode=mode, staleness_bound=s, n_workers=4, n_updates=800,
                                   cost=STRAGGLING)
        assert r.losses[-1] < 1.1 * optimum < r.losses[0]


def test_deterministic_for_a_seed():
    a = parameter_server.train(X, Y, n_workers=4, n_updates=80, cost=STRAGGLING, seed=3)
    b = parameter_server.train(X, Y, n_workers=4, n_updates=80, cost=STRAGGLING, seed=3)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.times, b.times)


def test_real_engines_run_the_same_server(engine_factory):
    eng = engine_factory(2)
    sync = parameter_server.train(X, Y, mode="sync", engine=eng, n_updates=20)
    ref = parameter_server.train(X, Y, mode="sync", n_workers=2, n_updates=20)
    # Synchronous rounds give the same weights anywhere (the order within a round may differ).
    np.testing.assert_allclose(sync.weights, ref.weights, rtol=1e-10)
    asy = parameter_server.train(X, Y, mode="async", engine=eng, n_updates=20)
    assert len(asy.workers) == 20 and asy.losses[-1] < asy.losses[0]
    assert np.all(np.diff(asy.times) >= 0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"mode": "ssp", "staleness_bound": -1}, ValueError, "staleness_bound"),
        ({"mode": "ssp"}, TypeError, "staleness_bound"),
        ({"mode": "async", "staleness_bound": 2}, ValueError, "only used with mode='ssp'"),
        ({"mode": "gossip"}, ValueError, "mode: expected one of"),
        ({"engine": "ray"}, ValueError, "engine: expected one of"),
        ({"n_workers": 0}, ValueError, "n_workers"),
        ({"n_workers": 5000}, ValueError, "n_workers: expected at most"),
        ({"mode": "sync", "n_workers": 3, "n_updates": 10}, ValueError, "multiple"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"cost": CostModel(), "n_updates": -5}, ValueError, "n_updates"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        parameter_server.train(X, Y, **kwargs)


def test_the_actor_server_on_dask(process_census):
    children, assert_no_new_children = process_census
    before = children()
    r = parameter_server.train_with_actors(X, Y, n_workers=2, n_updates=41, lr=0.05, seed=2)
    assert_no_new_children(before)
    assert len(r.workers) == 41 and np.bincount(r.workers).tolist() == [21, 20]
    assert r.losses[-1] < r.losses[0] / 10
    assert np.all(r.delay >= 0) and np.all(np.diff(r.times) >= 0)
    with pytest.raises(ValueError, match="n_workers"):
        parameter_server.train_with_actors(X, Y, n_workers=0)


def test_one_server_object_holds_the_rule():
    from mlpar.algorithms.training import TrainingResult

    s = parameter_server.Server(2, 3, lr=0.5, bound=1)
    w0 = s.pull(0)
    s.push(0, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(s.w, w0 - 0.5 * np.array([1.0, 2.0]))
    assert s.clock.tolist() == [1, 0, 0] and s.version == 1
    assert s.may_pull(0) and s.pull(0) is s.w
    s.push(0, np.zeros(2))
    assert not s.may_pull(0)  # two ahead of the slowest, bound 1
    assert s.staleness == [0, 1] and s.pulled == [0, 1]
    r = parameter_server.train(X, Y, n_workers=2, n_updates=10)
    assert isinstance(r, TrainingResult) and r.label == "async" and r.clock == "virtual"
    assert issubclass(parameter_server.ServerActor, parameter_server.Server)


def test_calibrated_prediction_on_processes_runs(process_census):
    from mlpar.cluster.engines import ProcessEngine

    children, assert_no_new_children = process_census
    before = children()
    with ProcessEngine(2) as eng:
        p = parameter_server.measure_and_predict(eng, X, Y, n_updates=20, repeat=2)
    assert_no_new_children(before)
    assert p.measured > 0 and p.predicted > 0 and p.error >= 1
    assert p.cost.per_sample > 0


# --- Bad data is named as bad data, before any worker starts (issue 25 item 4) ---------------


@pytest.mark.parametrize("where, match", [
    ("X", r"X: NaN at row 17, column 3"),
    ("y", r"y: NaN at position 17"),
])
@pytest.mark.parametrize("mode, bound", [("sync", None), ("async", None), ("ssp", 2)])
def test_nan_in_the_data_is_named_before_any_worker_starts(monkeypatch, where, match, mode, bound):
    Xb, yb = X.copy(), Y.copy()
    if where == "X":
        Xb[17, 3] = np.nan
    else:
        yb[17] = np.nan

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was opened before the data was checked")

    monkeypatch.setattr(parameter_server, "engine_scope", no_engine)
    for engine in ("simulated", "dask"):
        with pytest.raises(ValueError, match=match) as err:
            parameter_server.train(Xb, yb, mode=mode, staleness_bound=bound, engine=engine,
                                   n_workers=2, n_updates=40, lr=0.5)
        assert "diverged" not in str(err.value)
    with pytest.raises(ValueError, match=match):
        parameter_server.serial_sgd(Xb, yb)


def test_nan_is_named_before_the_actors_start(monkeypatch):
    from mlpar.cluster import dask_cluster

    def no_cluster(*args, **kwargs):
        raise AssertionError("a Dask cluster was started before the data was checked")

    monkeypatch.setattr(dask_cluster, "dask_client", no_cluster)
    Xb = X.copy()
    Xb[17, 3] = np.inf
    with pytest.raises(ValueError, match=r"X: infinity at row 17, column 3"):
        parameter_server.train_with_actors(Xb, Y, n_workers=2)


def test_genuine_divergence_still_blames_the_step_size():
    with pytest.raises(ValueError, match="lr: training diverged"):
        parameter_server.train(X, Y, mode="async", n_workers=4, n_updates=400, lr=50.0)


# --- The delay-scaled step η/(1 + delay) -------------------------------------------------------


def test_delay_scaled_steps_follow_the_recorded_delays():
    # Replaying with η/(1 + delay) on the recorded versions rebuilds the run.
    m, lr, b = 4, 0.2, 16
    r = parameter_server.train(X, Y, mode="async", n_workers=m, n_updates=120, cost=STRAGGLING,
                               lr=lr, batch_size=b, seed=5, delay_scaled=True)
    assert r.label == "async, η/(1+delay)" and r.delay.max() > 0
    parts = splits.shards(len(Y), m)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(5).spawn(m)]
    versions = [np.zeros(X.shape[1])]
    for k, (i, v) in enumerate(zip(r.workers, r.pulled, strict=True)):
        rows = streams[i].integers(0, parts[i].stop - parts[i].start, size=b)
        g = least_squares.minibatch_gradient(X[parts[i]], Y[parts[i]], versions[v], rows)
        versions.append(versions[-1] - lr / (1 + k - v) * g)
    np.testing.assert_array_equal(versions[-1], r.weights)


def test_delay_scaling_changes_nothing_without_delays():
    plain = parameter_server.train(X, Y, mode="async", n_workers=1, n_updates=60, seed=2)
    scaled = parameter_server.train(X, Y, mode="async", n_workers=1, n_updates=60, seed=2,
                                    delay_scaled=True)
    np.testing.assert_array_equal(plain.weights, scaled.weights)


def test_delay_scaling_keeps_async_stable_where_the_plain_step_diverges():
    cost = CostModel(alpha=20e-6, beta=1e-9, per_sample=5e-6, jitter=1.0, seed=0)
    options = dict(mode="async", n_workers=16, n_updates=1200, lr=0.1, batch_size=32, cost=cost)
    with pytest.raises(ValueError, match="lr: training diverged"):
        parameter_server.train(X, Y, **options)
    r = parameter_server.train(X, Y, delay_scaled=True, **options)
    assert np.isfinite(r.final_loss) and r.final_loss < r.losses[0]
    with pytest.raises(TypeError, match="delay_scaled"):
        parameter_server.train(X, Y, delay_scaled="yes")


def test_compare_layouts_names_the_faster_one_and_refuses_other_things():
    import dataclasses

    fast = parameter_server.train(X, Y, n_workers=2, n_updates=20, cost=STRAGGLING)
    slow = dataclasses.replace(fast, times=fast.times * 3)
    assert "actor layout was 3.00× slower" in parameter_server.compare_layouts(fast, slow)
    assert "actor layout was 3.00× faster" in parameter_server.compare_layouts(slow, fast)
    assert "finished their shares: worker 0 at" in parameter_server.compare_layouts(fast, slow)
    with pytest.raises(TypeError, match="actors"):
        parameter_server.compare_layouts(fast, None)
