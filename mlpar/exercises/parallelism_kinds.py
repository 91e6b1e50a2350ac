"""Checks for lesson 00: the kinds of parallelism, usable cores, method vs task vs optimizer."""

from __future__ import annotations

from . import call, passed

# Each example names one mechanism; the answer is the kind of parallelism it relies on.
KIND_EXAMPLES = {
    "one vmulpd instruction multiplies four doubles": "SIMD",
    "the core overlaps four independent additions in flight": "ILP",
    "numba prange splits a loop over the cores of one machine": "multithreading",
    "Spark sends each partition's gradient over the network": "distributed",
    "OpenBLAS runs a matrix product on every core": "multithreading",
    "a parameter server on another machine collects gradients": "distributed",
}

ROLES = {
    "support vector machine": "method",
    "principal component analysis": "method",
    "supervised learning": "task",
    "dimensionality reduction": "task",
    "sequential minimal optimization": "optimizer",
    "stochastic gradient descent": "optimizer",
}

_QUOTA_CASES = [  # (affinity cores, cgroup quota in cores or None, expected usable threads)
    (2, None, 2),
    (8, 2.0, 2),
    (8, 1.5, 1),
    (4, 16.0, 4),
    (16, 0.5, 1),
]


def check_kind_of_parallelism(kind_of_parallelism) -> None:
    name = "Exercise 1 (kinds of parallelism)"
    for example, kind in KIND_EXAMPLES.items():
        got = call(name, kind_of_parallelism, example)
        if got != kind:
            raise AssertionError(
                f"{name}: for {example!r} you answered {got!r}. Ask: is it one instruction on "
                "many numbers (SIMD), independent instructions in one core (ILP), several cores "
                "sharing memory (multithreading), or machines talking over a network (distributed)?"
            )
    passed(name, f"{len(KIND_EXAMPLES)} examples classified")


def check_usable_threads(usable_threads) -> None:
    name = "Exercise 2 (usable threads)"
    for affinity, quota, expected in _QUOTA_CASES:
        got = call(name, usable_threads, affinity, quota)
        if got != expected:
            hint = ("a quota of q cores lets you run about floor(q) threads at full speed, "
                    "but never fewer than 1, and never more than the affinity allows")
            raise AssertionError(
                f"{name}: usable_threads({affinity}, {quota}) returned {got!r}, expected "
                f"{expected}; {hint}"
            )
    passed(name, f"{len(_QUOTA_CASES)} machines")


def check_role(role) -> None:
    name = "Exercise 3 (method, task or optimizer)"
    for thing, expected in ROLES.items():
        got = call(name, role, thing)
        if got != expected:
            raise AssertionError(
                f"{name}: {thing!r} is not a {got!r}. A task says what to achieve, a method is "
                "a model family that achieves it, an optimizer is how the method's parameters "
                "are fitted."
            )
    passed(name, f"{len(ROLES)} terms")
