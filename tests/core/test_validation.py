import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlpar.core import validation as v


@given(st.integers(min_value=1, max_value=10**9))
def test_positive_int_accepts_positive(n):
    assert v.positive_int("n", n) == n


@pytest.mark.parametrize("bad", [0, -3])
def test_positive_int_rejects_non_positive(bad):
    with pytest.raises(ValueError, match=r"n_threads: expected a positive integer, got -?\d"):
        v.positive_int("n_threads", bad)


@pytest.mark.parametrize("bad", [1.5, "2", True, None])
def test_positive_int_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="n: expected a positive integer"):
        v.positive_int("n", bad)


def test_integer_bounds_and_numpy_ints():
    assert v.integer("k", np.int64(3), minimum=0, maximum=5) == 3
    with pytest.raises(ValueError, match="k: expected an integer <= 5, got 6"):
        v.integer("k", 6, maximum=5)


def test_number_intervals():
    assert v.positive("step", 0.1) == 0.1
    assert v.non_negative("alpha", 0) == 0.0
    with pytest.raises(ValueError, match=r"step: expected a number in \(0.0, inf\], got 0.0"):
        v.positive("step", 0.0)
    with pytest.raises(ValueError, match="finite"):
        v.number("x", float("nan"))
    with pytest.raises(TypeError, match="x: expected a number, got str"):
        v.number("x", "1")
    with pytest.raises(ValueError, match=r"p: expected a number in \(0, 1\]"):
        v.number("p", 0, low=0, high=1, low_open=True)


def test_choice_names_the_options():
    assert v.choice("engine", "dask", ["simulated", "dask"]) == "dask"
    with pytest.raises(ValueError, match="engine: expected one of 'simulated', 'dask', got 'spark'"):
        v.choice("engine", "spark", ["simulated", "dask"])


def test_array_checks():
    x = np.zeros((3, 2))
    assert v.array("x", x, ndim=2, dtype=np.float64) is x
    with pytest.raises(TypeError, match="x: expected a numpy array, got list"):
        v.array("x", [1.0])
    with pytest.raises(ValueError, match="x: expected a 1-D array, got 2-D shape"):
        v.array("x", x, ndim=1)
    with pytest.raises(TypeError, match=r"x: expected dtype float64, got int64; convert with \.astype"):
        v.array("x", np.zeros(3, dtype=np.int64), dtype=np.float64)
    with pytest.raises(ValueError, match="C-contiguous"):
        v.array("x", np.zeros(10)[::2], contiguous=True)
    with pytest.raises(ValueError, match="NaN or inf"):
        v.array("x", np.array([1.0, np.nan]), finite=True)
    with pytest.raises(ValueError, match="at least 1 elements"):
        v.array("x", np.zeros(0), min_size=1)


def test_same_shape_and_length():
    with pytest.raises(ValueError, match=r"y: expected shape \(3,\) to match x, got \(4,\)"):
        v.same_shape("x", np.zeros(3), "y", np.zeros(4))
    with pytest.raises(ValueError, match="y: expected 3 rows to match X, got 2"):
        v.same_length("X", np.zeros((3, 2)), "y", np.zeros(2))


def test_seed_and_callable():
    assert v.seed("seed", 0) == 0
    with pytest.raises(ValueError, match="seed: expected an integer >= 0, got -1"):
        v.seed("seed", -1)
    with pytest.raises(TypeError, match="func: expected a function, got int"):
        v.callable_("func", 3)


def test_contiguity_message_tells_fortran_order_from_a_strided_view():
    with pytest.raises(ValueError, match="got a Fortran-ordered"):
        v.array("x", np.asfortranarray(np.zeros((3, 2))), contiguous=True)
    with pytest.raises(ValueError, match="got a strided view"):
        v.array("x", np.zeros((3, 4))[:, ::2], contiguous=True)


@pytest.mark.parametrize("bad", ["no", "yes", 2, 1, 0, 1.0, None, [True]])
def test_flag_takes_bools_only(bad):
    with pytest.raises(TypeError, match="parallel: expected True or False"):
        v.flag("parallel", bad)


def test_flag_accepts_python_and_numpy_bools():
    assert v.flag("parallel", True) is True
    assert v.flag("parallel", np.bool_(False)) is False


def test_choice_names_the_argument_for_any_value():
    with pytest.raises(TypeError, match="kernel: expected one of 'rbf'"):
        v.choice("kernel", np.zeros(3), ("rbf", "poly"))
    with pytest.raises(ValueError, match="kernel: expected one of"):
        v.choice("kernel", "sigmoid", ("rbf", "poly"))


def test_broadcast_views_bigger_than_memory_are_refused_before_any_copy():
    huge = np.broadcast_to(np.float64(1.0), (10**12,))  # 8 TB of virtual size, 8 real bytes
    with pytest.raises(ValueError, match="x: expected an array backed by memory"):
        v.array("x", huge)
    small = np.broadcast_to(np.float64(1.0), (10,))  # a small one is fine for array()...
    assert v.array("x", small) is small
    with pytest.raises(ValueError, match="broadcast view"):  # ...but not where memory is shared
        v.real_array("x", small)


def test_finite_loss_names_the_step_size():
    assert v.finite_loss([1.0, 0.5], "lr", 0.1) == 0.5
    with pytest.raises(ValueError, match=r"lr: training diverged with lr=2.5.*not finite"):
        v.finite_loss([1.0, float("inf")], "lr", 2.5)
    with pytest.raises(ValueError, match=r"step: training diverged.*grew"):
        v.finite_loss([1.0, 2e6], "step", 3.0)


def test_positive_int_maximum_and_path():
    with pytest.raises(ValueError, match="repeat: expected a positive integer <= 1,000, got 5,000"):
        v.positive_int("repeat", 5000, maximum=1000)
    with pytest.raises(TypeError, match="path: expected a path"):
        v.path("path", 3)


@pytest.mark.parametrize("cores", [1, 2, 16, 128])
def test_workers_are_capped_at_a_multiple_of_the_usable_cores(monkeypatch, cores):
    from mlpar.core import environment, limits

    monkeypatch.setenv(environment.HARDWARE_VARIABLE, f"cores={cores}")
    cap = limits.WORKERS_PER_CORE * cores
    assert limits.workers("n_jobs", cap) == cap
    assert limits.workers("n_jobs", -1, allow_all=True) == -1
    with pytest.raises(ValueError, match=rf"n_jobs: expected at most {cap} "):
        limits.workers("n_jobs", cap + 1)
    with pytest.raises(ValueError, match="n_jobs: expected a positive integer"):
        limits.workers("n_jobs", -1)


def test_elements_are_checked_against_memory_before_allocating():
    assert limits_elements(1000) == 1000
    with pytest.raises(ValueError, match="n: expected arrays of at most"):
        limits_elements(10**12)


def limits_elements(count):
    from mlpar.core import limits

    return limits.elements("n", count)


def test_text_accepts_str_only():
    assert v.text("name", "W") == "W"
    for bad in (3, None, b"W"):
        with pytest.raises(TypeError, match="name: expected a str"):
            v.text("name", bad)
