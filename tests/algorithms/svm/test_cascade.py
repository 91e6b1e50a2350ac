"""Cascade SVM: shards, merging, and agreement with the SVM trained on everything."""

import dataclasses

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_moons

from mlpar.algorithms.svm import cascade as cascade_svm
from mlpar.algorithms.svm import smo
from mlpar.core import splits


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(1200, noise=0.2, random_state=0)
    Xt, yt = make_moons(1000, noise=0.2, random_state=1)
    return X, y, Xt, yt


def test_stratified_shards_partition_and_balance():
    y = np.array([0] * 30 + [1] * 10)
    shards = splits.stratified_shards(y, 4, seed=0)
    joined = np.sort(np.concatenate(shards))
    np.testing.assert_array_equal(joined, np.arange(40))
    assert all(np.sum(y[s] == 1) in (2, 3) for s in shards)
    with pytest.raises(ValueError, match="n_shards: expected at most 10"):
        splits.stratified_shards(y, 11, seed=0)


def test_cascade_close_to_full_svm(moons):
    X, y, Xt, yt = moons
    full = smo.fit_smo(X, y, gamma=1.0)
    cascade = cascade_svm.cascade_svm(X, y, n_shards=4, n_passes=2, gamma=1.0, seed=0)
    assert abs(cascade.model.score(Xt, yt) - full.score(Xt, yt)) <= 0.01
    assert abs(cascade.n_support - full.n_support) <= 0.05 * full.n_support
    # Layer sizes: 4 shards, then 2 merged sets, then 1; each job keeps at most what it got.
    first = cascade.layer_sizes[0]
    assert [len(layer) for layer in first] == [4, 2, 1]
    assert sum(first[0]) == len(y)
    for sizes, kept in zip(first, cascade.layer_supports[0], strict=True):
        assert all(k <= s for s, k in zip(sizes, kept, strict=True))


def test_backends_give_identical_results(moons):
    X, y, _, _ = moons
    one = cascade_svm.cascade_svm(X[:600], y[:600], n_shards=3, gamma=1.0, seed=1, n_jobs=1)
    # Threads: the numba kernels run concurrently in one process (mlpar.core.threads makes it safe).
    with joblib.parallel_config(backend="threading"):
        two = cascade_svm.cascade_svm(X[:600], y[:600], n_shards=3, gamma=1.0, seed=1, n_jobs=2)
    np.testing.assert_array_equal(one.support, two.support)
    assert one.summary() == two.summary()
    assert [len(layer) for layer in one.layer_sizes[0]] == [3, 2, 1]  # the odd set carried up


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_shards": 0}, ValueError, "n_shards"),
        ({"n_passes": 0}, ValueError, "n_passes"),
        ({"C": 0.0}, ValueError, "C"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"kernel": "tanh"}, ValueError, "kernel"),
    ],
)
def test_bad_input(kwargs, error, match):
    X = np.random.default_rng(0).normal(size=(40, 2))
    y = np.arange(40) % 2
    with pytest.raises(error, match=match):
        cascade_svm.cascade_svm(X, y, **kwargs)


def test_time_model_is_consistent(moons):
    X, y, _, _ = moons
    cascade = cascade_svm.cascade_svm(X[:400], y[:400], n_shards=4, gamma=1.0, seed=0)
    jobs = [t for p in cascade.layer_seconds for layer in p for t in layer]
    assert len(jobs) == 4 + 2 + 1
    assert cascade.total_seconds == pytest.approx(sum(jobs))
    assert max(jobs) <= cascade.critical_path_seconds <= cascade.total_seconds


def test_busy_seconds_is_the_union_of_the_intervals():
    assert cascade_svm.busy_seconds([]) == 0.0
    assert cascade_svm.busy_seconds([(0.0, 1.0), (2.0, 3.0)]) == pytest.approx(2.0)
    assert cascade_svm.busy_seconds([(0.0, 2.0), (1.0, 3.0)]) == pytest.approx(3.0)
    assert cascade_svm.busy_seconds([(1.0, 2.0), (0.0, 5.0)]) == pytest.approx(5.0)


def test_overlap_is_measured_from_the_jobs_own_stamps(moons):
    X, y, _, _ = moons
    cascade = cascade_svm.cascade_svm(X[:400], y[:400], n_shards=4, gamma=1.0, seed=0)
    assert len(cascade.job_intervals) == 7
    # One job at a time (joblib's default, n_jobs=1): nothing overlaps, however slow the
    # hand-offs between jobs were.
    assert cascade.overlap_seconds == pytest.approx(0.0, abs=1e-9)
    fake = dataclasses.replace(cascade, layer_seconds=(((1.0, 1.0),),),
                               job_intervals=((0.0, 1.0), (0.5, 1.5)))
    assert fake.overlap_seconds == pytest.approx(0.5)
