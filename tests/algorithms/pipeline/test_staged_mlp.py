import numpy as np
import pytest

from mlpar.algorithms.pipeline import schedules as sc
from mlpar.algorithms.pipeline import staged_mlp as sm
from mlpar.cluster.cost_model import CostModel


def data(n=24, d=6, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((n, d))


def max_difference(grads, reference):
    return max(float(np.abs(a - b).max()) for pa, pb in zip(grads, reference, strict=True)
               for a, b in zip(pa, pb, strict=True))


def test_full_gradient_matches_finite_differences():
    params = sm.init_mlp([3, 4, 2], seed=0)
    X, Y = data(5, 3)[0], data(5, 2)[1]
    _, grads = sm.full_gradient(params, X, Y)
    W, b = params[0]
    eps = 1e-6
    W[1, 2] += eps
    up = sm.full_gradient(params, X, Y)[0]
    W[1, 2] -= 2 * eps
    down = sm.full_gradient(params, X, Y)[0]
    W[1, 2] += eps
    assert grads[0][0][1, 2] == pytest.approx((up - down) / (2 * eps), rel=1e-6)


def test_real_staged_run_equals_the_unsplit_gradient(process_census):
    children, assert_no_new_children = process_census
    before = children()
    params = sm.init_mlp([6] * 7, seed=0)  # 6 layers: 2 per stage
    X, Y = data()
    loss, reference = sm.full_gradient(params, X, Y)
    with sm.StagedPipeline(params, p=3) as pipe:
        assert len(children() - before) == 3
        for schedule in (sc.gpipe(3, 4), sc.one_f_one_b(3, 4), sc.one_f_one_b(3, 1), sc.gpipe(3, 6)):
            run = pipe.run(X, Y, schedule)
            assert max_difference(run.gradients, reference) <= 1e-12
            assert run.loss == pytest.approx(loss, rel=1e-12)
            assert len(run.timeline.ops) == 2 * 3 * schedule.m
        # Without the 1/m per micro-batch the sum is m times the full-batch gradient.
        unscaled = pipe.run(X, Y, sc.one_f_one_b(3, 4), scale=False)
        assert max_difference(unscaled.gradients, reference) > 1e-3
        assert max_difference([(W / 4, b / 4) for W, b in unscaled.gradients], reference) <= 1e-12
        link = pipe.calibrate_link(repeat=3)
        assert isinstance(link, CostModel) and link.alpha >= 0 and link.beta >= 0
        run = pipe.run(X, Y, sc.one_f_one_b(3, 4))
        predicted = sm.predict(run, link)
        assert predicted.schedule is run.timeline.schedule and predicted.makespan > 0
        t_f, t_b = run.stage_durations()
        assert t_f.shape == (3,) and np.all(t_b > 0)
        # a stage's ops never overlap, and each device ran its own order
        t = run.timeline
        for d in range(3):
            mine = t.device == d
            assert np.all(np.diff(t.start[mine]) >= 0) and np.all(t.start[mine][1:] >= t.end[mine][:-1])
    assert_no_new_children(before)


def test_bad_input_is_rejected_before_anything_starts():
    params = sm.init_mlp([4] * 5, seed=0)
    with pytest.raises(ValueError, match="v: expected p·v = 3·1 to divide the 4 layers"):
        sm.StagedPipeline(params, p=3)
    with pytest.raises(ValueError, match="p: expected a positive integer"):
        sm.StagedPipeline(params, p=0)
    with pytest.raises(ValueError, match="widths"):
        sm.init_mlp([4], seed=0)
    with pytest.raises(ValueError, match="v: expected p·v = 2·3 to divide the 4 layers"):
        sm.split_layers(4, 2, 3)


def test_run_rejects_schedules_that_do_not_fit(process_census):
    children, assert_no_new_children = process_census
    before = children()
    params = sm.init_mlp([4] * 3, seed=0)
    X, Y = data(6, 4)
    with sm.StagedPipeline(params, p=2) as pipe:
        with pytest.raises(ValueError, match="schedule: expected a Schedule with p=2"):
            pipe.run(X, Y, sc.gpipe(3, 2))
        with pytest.raises(ValueError, match="expected m to divide the 6 rows"):
            pipe.run(X, Y, sc.gpipe(2, 4))
        with pytest.raises(ValueError, match="W ops"):
            pipe.run(X, Y, sc.zb_h1(2, 2))
    assert_no_new_children(before)


def test_a_neighbours_early_message_is_not_taken_for_a_command(process_census):
    # Stage 0 can start a run and send its first activation before stage 1 has been told to
    # run; that message must wait in stage 1's inbox, not be read as stage 1's next command.
    children, assert_no_new_children = process_census
    before = children()
    params = sm.init_mlp([6] * 5, seed=0)
    X, Y = data()
    _, reference = sm.full_gradient(params, X, Y)
    with sm.StagedPipeline(params, p=2, timeout=60) as pipe:
        pipe._inboxes[1].put(("act", 99, None))  # arrives first; no micro-batch 99 exists
        run = pipe.run(X, Y, sc.gpipe(2, 2))
        assert max_difference(run.gradients, reference) <= 1e-12
    assert_no_new_children(before)


def test_predict_names_a_wrong_run_or_link():
    with pytest.raises(TypeError, match="run: expected a StagedRun"):
        sm.predict(None, None)
    with pytest.raises(TypeError, match="widths"):
        sm.init_mlp(None, seed=0)


def test_nan_in_the_batch_is_named_before_any_stage_gets_work():
    # Issue 25 item 4: a pipeline that never started (no stage process) still names the NaN,
    # since the check comes before anything is sent.
    params = sm.init_mlp([4] * 3, seed=0)
    X, Y = data(6, 4)
    X[2, 1] = np.nan
    idle = object.__new__(sm.StagedPipeline)
    with pytest.raises(ValueError, match=r"X: NaN at row 2, column 1"):
        idle.run(X, Y, sc.gpipe(2, 2))
    with pytest.raises(ValueError, match=r"X: NaN at row 2, column 1"):
        sm.full_gradient(params, X, Y)
