"""Regression tests for the damage and silent wrong answers the bad-input walk found (issue 16).

One test per finding: each fails on the code before the fix. The walk itself is
tests/test_bad_input.py.
"""

import pytest


def test_received_type_refuses_a_broadcast_array_instead_of_mapping_its_virtual_size():
    import numpy as np

    from mlpar.cpu import gil

    huge = np.broadcast_to(np.float64(1.0), (10**12,))  # was: 8 TB written to /dev/shm
    for func in (gil.received_type, gil.transfer_time):
        with pytest.raises(ValueError, match="array: expected an array backed by memory"):
            func(huge, memmap=True)
    with pytest.raises(ValueError, match="array: expected an array backed by memory"):
        gil.received_type(np.broadcast_to(np.float64(1.0), (1000,)), memmap=True)


def _regression_data():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    return X, X @ np.ones(3)


@pytest.mark.parametrize("trainer", ["serial", "mapreduce", "parameter_server"])
def test_a_diverging_trainer_stops_and_names_the_step_size(trainer):
    from mlpar.algorithms.distributed import mapreduce, parameter_server

    X, y = _regression_data()
    run = {"serial": mapreduce.serial_gradient_descent, "mapreduce": mapreduce.gradient_descent,
           "parameter_server": parameter_server.train}[trainer]
    with pytest.raises(ValueError, match=r"lr: training diverged with lr=2.5"):
        run(X, y, lr=2.5)


def test_hogwild_runner_stops_on_divergence_and_names_the_step():
    from mlpar.algorithms.sgd import hogwild, sparse_data

    problem = sparse_data.make_sparse_problem(200, 50, 0.2, seed=0)
    with pytest.raises(ValueError, match=r"step: training diverged with step=1e\+300"):
        hogwild.run_sgd(problem, "serial", step=1e300)
    assert hogwild.run_sgd(problem, "serial", step=0.5).final_loss < 0.7  # a sane step still runs


@pytest.mark.parametrize("kernel_rows", ["lazy", "all"])
def test_fit_smo_refuses_an_overflowing_kernel_instead_of_converging_to_nan(kernel_rows):
    import numpy as np

    from mlpar.algorithms.svm.smo import fit_smo

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)) * 3
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="kernel: expected finite kernel values.*degree=500"):
        fit_smo(X, y, kernel="poly", degree=500, gamma=1.0, kernel_rows=kernel_rows)
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="X: NaN at row 0, column 0"):
        fit_smo(X, y)


def test_cross_validate_refuses_test_rows_inside_the_training_set():
    import numpy as np

    from mlpar.algorithms.model_selection import cross_validation as cv

    X, y = cv.load_dataset("breast_cancer")
    leaky = [(np.arange(len(y)), np.arange(10))]
    with pytest.raises(ValueError, match="expected test rows outside the training rows"):
        cv.cross_validate(cv.make_model(), X, y, leaky)


def test_output_shape_refuses_a_kernel_larger_than_the_image():
    from mlpar.cpu import convolution

    assert convolution.output_shape((2, 3, 8, 8), (4, 3, 3, 3)) == (2, 4, 6, 6)
    with pytest.raises(ValueError, match="filter_shape: expected a kernel no larger than the image"):
        convolution.output_shape((1, 1, 4, 4), (1, 1, 5, 5))
    with pytest.raises(ValueError, match="filter_shape: expected a 4-tuple"):
        convolution.output_shape((1, 1, 4, 4), None)


def test_correlate2d_names_its_own_arguments():
    import numpy as np

    from mlpar.cpu import convolution

    with pytest.raises(ValueError, match="kernel: expected a kernel no larger than the image") as err:
        convolution.correlate2d(np.zeros((3, 3)), np.zeros((4, 4)))
    assert "filters" not in str(err.value)


def test_sparsity_refuses_a_column_listed_twice_in_a_row():
    import numpy as np

    from mlpar.algorithms.sgd.sparse_data import sparsity_from_csr

    with pytest.raises(ValueError, match="indices: expected distinct columns within each row, "
                                         "got column 1 more than once in row 0"):
        sparsity_from_csr(np.array([0, 3]), np.array([0, 1, 1]), 4)


def _flag_calls():
    """(function, keyword) for every boolean flag of the package that takes a plain call."""
    return [
        ("mlpar.core.splits:kfold", "shuffle", dict(n_samples=10, k=2)),
        ("mlpar.cpu.convolution:conv2d", "parallel", "layer"),
        ("mlpar.algorithms.svm.kernel_matrix:kernel_matrix", "parallel", "X"),
        ("mlpar.algorithms.svm.smo:fit_smo", "parallel", "Xy"),
        ("mlpar.algorithms.svm.pegasos:fit_pegasos", "project", "Xy"),
        ("mlpar.cpu.gil:received_type", "memmap", "array"),
        ("mlpar.cpu.gil:transfer_time", "memmap", "array"),
        ("mlpar.core.environment:environment_report", "measure_bandwidth", {}),
        ("mlpar.core.environment:copy_bandwidth", "parallel", {}),
        ("mlpar.algorithms.model_selection.cross_validation:run_tasks", "progress", "tasks"),
        ("mlpar.algorithms.model_selection.cross_validation:cross_validate", "progress", "cv"),
        ("mlpar.benchmarks.elementwise:run", "quick", {}),
        ("mlpar.benchmarks.hogwild:run", "quick", {}),
        ("mlpar.benchmarks.svm:run", "quick", {}),
        ("mlpar.claims.l01_loops_to_threads:numpy_beats_the_python_loop", "quick", {}),
        ("mlpar.gpu.backend:block_size", "power_of_two", dict(name="threads", value=128)),
    ]


@pytest.mark.parametrize("target, keyword, base", _flag_calls(), ids=lambda v: str(v)[:40])
@pytest.mark.parametrize("bad", ["no", 2])
def test_boolean_flags_take_bools_only(target, keyword, base, bad):
    import importlib

    import numpy as np

    module, name = target.split(":")
    func = getattr(importlib.import_module(module), name)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    y = (X[:, 0] > 0).astype(int)
    kwargs = {
        "layer": dict(images=np.zeros((1, 1, 4, 4)), filters=np.zeros((1, 1, 2, 2))),
        "X": dict(X=X), "Xy": dict(X=X, y=y), "array": dict(array=np.zeros(10)),
        "tasks": dict(func=abs, tasks=[(1,)]),
        "cv": dict(model=_logistic(), X=X, y=y, splits=2),
    }.get(base, base) if isinstance(base, str) else dict(base)
    with pytest.raises(TypeError, match=f"{keyword}: expected True or False"):
        func(**kwargs, **{keyword: bad})


def _logistic():
    from mlpar.algorithms.model_selection.cross_validation import make_model

    return make_model("logistic")


def test_gossip_and_topology_helpers_name_what_is_wrong():
    import networkx as nx
    import numpy as np

    from mlpar.algorithms.distributed import gossip, topologies
    from mlpar.algorithms.distributed.mapreduce import place_shards
    from mlpar.algorithms.model_selection.speedup import fits
    from mlpar.cluster.engines import make_engine
    from mlpar.cluster.peer_network import PeerNetwork

    X, y = np.ones((8, 2)), np.arange(8.0)
    for call, error, words in (
        (lambda: gossip.gather_broadcast(None, [np.ones(2)] * 2), TypeError, "net: expected a PeerNetwork"),
        (lambda: gossip.ring_allreduce(PeerNetwork(2), None), TypeError, "vectors"),
        (lambda: gossip.ring_allreduce(PeerNetwork(2), [np.ones(2), np.ones(3)]), ValueError, "one length"),
        (lambda: gossip.heterogeneous_split(X, y, True), TypeError, "n_nodes"),
        (lambda: gossip.heterogeneous_split(X, y, 9), ValueError, "at most one node per row"),
        (lambda: gossip.stable_lr(X, y, 0, heterogeneous=False), ValueError, "n_nodes"),
        (lambda: topologies.graph("ring", 10**12), ValueError, "n: expected"),  # was MemoryError
        (lambda: topologies.topology_matrix("ring", 10**12), ValueError, "n: expected"),
        (lambda: topologies.check_mixing(np.eye(2), object()), TypeError, "g: expected a networkx graph"),
        (lambda: topologies.warn_if_disconnected(None), TypeError, "g: expected a networkx graph"),
        (lambda: place_shards(None, X, y), TypeError, "eng: expected an open Engine"),
        (lambda: fits(2.5, 10), TypeError, "n_fits"),
    ):
        with pytest.raises(error, match=words):
            call()
    with make_engine("simulated", 2) as eng:
        with pytest.raises(ValueError, match="at least one row per worker"):
            place_shards(eng, X[:1], y[:1])
    assert topologies.warn_if_disconnected(nx.cycle_graph(4)) == 1


def test_scaling_curves_refuse_a_huge_repeat_before_allocating():
    from mlpar.cpu import scaling_laws

    for curve in (scaling_laws.speedup_curve, scaling_laws.scaled_speedup_curve):
        with pytest.raises(ValueError, match="repeat"):
            curve(lambda *a: None, [1, 2], repeat=10**12)  # was a MemoryError (21.8 TiB)
