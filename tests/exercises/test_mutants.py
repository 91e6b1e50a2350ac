"""Mutation test of the exercise checks (issue 35 §3): every mutant of a solution fails its check.

``make mutants`` (``python -m mlpar.course.mutants``) runs every mutant of every exercise and
prints the score per check. Here a seeded sample runs inside ``make test``'s budget: one mutant
per exercise (``MLPAR_MUTANT_SEED`` picks another; the default is fixed so a run is
reproducible) and every mutant of the kinds issue 35 names as wrong answers that passed
(``mutants.ALWAYS``: the work done by the caller, by thread 0 or block 0, the library's
function). A surviving mutant that is not listed, with its reason, in ``equivalent_mutants.py``
is a hole in that check: the test fails and shows the mutant's diff.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from mlpar.course import mutants

SEED = int(os.environ.get("MLPAR_MUTANT_SEED", "0"))
PER_EXERCISE = 1


def _equivalents() -> dict:
    return mutants.load_equivalents(Path(__file__).with_name("equivalent_mutants.py"))


@pytest.fixture(scope="module")
def every_mutant():
    return mutants.plan()


@pytest.fixture(scope="module")
def sample_run(every_mutant):
    work = mutants.draw(every_mutant, PER_EXERCISE, SEED)
    events = mutants.run(work, reference=False)
    return work, events


def test_sampled_mutants_are_killed_by_their_checks(sample_run):
    work, events = sample_run
    results = mutants.scores(events, _equivalents())
    failed = [e for e in events if e.get("event") in ("setup_failed", "worker_failed")]
    assert failed == [], failed
    ran = {(lesson["lesson"], t["name"], m["key"])
           for lesson in work for t in lesson["targets"] for m in t["mutants"]}
    seen = {(e["lesson"], e["exercise"], e["key"]) for e in events if e.get("event") == "mutant"}
    assert ran - seen == set(), "every sampled mutant has an outcome"
    survivors = [(s, e) for s in results for e in s.survived]
    assert survivors == [] or False, "surviving mutants (a check passed a wrong solution):\n" + \
        "\n".join(f"{s.lesson} {s.exercise}: {e['key']}\n{e['diff']}" for s, e in survivors)


def test_no_check_crashes_on_a_sampled_mutant(sample_run):
    # a check reports a wrong answer with AssertionError; any other exception is its own bug
    _, events = sample_run
    crashed = [e for e in events if e.get("how") == "check crashed"]
    assert crashed == [], "\n".join(f"{e['lesson']} {e['exercise']}: {e['key']}: {e['message']}"
                                    for e in crashed)


def test_every_exercise_has_mutants_of_each_kind_it_can_have(every_mutant):
    names = {(lesson["lesson"][:2], t["name"]): {m["kind"] for m in t["mutants"]}
             for lesson in every_mutant for t in lesson["targets"]}
    assert len(names) >= 40, sorted(names)
    assert all(kinds for kinds in names.values()), [k for k, v in names.items() if not v]
    # the §3 mutations that target the parallel structure, where the solutions have it
    assert "prange" in names[("01", "axpy")] and "prange" in names[("02", "parallel_matmul")]
    assert {"thread0", "block0"} <= names[("10", "axpy_kernel")]
    assert "caller" in names[("00", "parallel_sum_of_squares")]
    assert "caller" in names[("04", "epochs")]


def test_every_equivalent_mutant_listed_still_exists(every_mutant):
    keys = {(lesson["lesson"][:2], t["name"], m["key"])
            for lesson in every_mutant for t in lesson["targets"] for m in t["mutants"]}
    stale = [k for k in _equivalents() if k not in keys]
    assert stale == [], f"equivalent_mutants.py names mutants that no longer exist: {stale}"
    assert all(reason.strip() for reason in _equivalents().values())


TOY = '''\
def scale(x, k):
    # BEGIN SOLUTION
    out = []
    for v in x:
        out.append(k * v + 1)
    return out
    # END SOLUTION
'''


def test_the_tool_finds_a_survivor_and_kills_a_hang(tmp_path):
    # A check too weak to see the constant (it asks only for more than 1.5 at v = k = 1) lets
    # `+ 1 -> + 2` survive; a mutant that loops forever is stopped by the timeout (killed).
    weak_check = "assert scale([1.0], 1)[0] > 1.5\n"
    all_of_them = mutants.mutants_of(TOY, "scale")
    keys = [m.key for m in all_of_them]
    assert "const: 1 -> (2)" in keys and "binop: k * v -> (k / v)" in keys
    assert len(set(keys)) == len(keys)
    hang = TOY.replace("        out.append(k * v + 1)", "        while True:\n            pass")
    chosen = [m for m in all_of_them if m.key in ("const: 1 -> (2)", "binop: k * v + 1 -> (k * v - 1)")]
    lesson = {"lesson": "99_toy", "setup": [], "all_targets": [{"name": "scale", "reference": TOY}],
              "targets": [{"name": "scale", "reference": TOY, "check_source": weak_check,
                           "mutants": [m.__dict__ for m in chosen]
                           + [{"key": "hang", "kind": "drop-stmt", "source": hang, "diff": ""}]}]}
    events = mutants.run([lesson], timeout=3, python=sys.executable)
    outcome = {e["key"]: (e["status"], e["how"]) for e in events if e.get("event") == "mutant"}
    assert outcome == {"const: 1 -> (2)": ("survived", "check passed"),
                       "binop: k * v + 1 -> (k * v - 1)": ("killed", "check refused"),
                       "hang": ("killed", "timeout")}
    score = mutants.scores(events, {})[0]
    assert (score.killed, len(score.survived)) == (2, 1)
    assert "+        out.append(k * v + (2))" in score.survived[0]["diff"]


def test_structural_mutants_move_the_work_off_the_pool_and_the_grid():
    pool = textwrap.dedent('''\
        def total(x, executor):
            # BEGIN SOLUTION
            return sum(executor.map(lambda c: float(c @ c), x))
            # END SOLUTION
        ''')
    caller = [m for m in mutants.mutants_of(pool, "total") if m.kind == "caller"]
    assert len(caller) == 1 and "_mutant_caller_map(executor.map" in caller[0].source
    namespace = {}
    exec(compile(caller[0].source, "<mutant>", "exec"), namespace)
    seen = []

    class Pool:
        def map(self, f, items):
            seen.append([f(i) for i in items])
            return seen[-1]

    import numpy as np

    assert namespace["total"]([np.ones(2), np.ones(3)], Pool()) == 5.0
    assert seen == [[None, None]]  # the pool got do-nothing tasks; the caller did the sums
    kernel = textwrap.dedent('''\
        @cuda.jit
        def k(x):
            # BEGIN SOLUTION
            for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
                x[i] += 1
            # END SOLUTION
        ''')
    by_kind = {m.kind: m.source for m in mutants.mutants_of(kernel, "k")}
    assert "if cuda.grid(1) == 0:" in by_kind["thread0"] and "range(0, x.shape[0], 1)" in by_kind["thread0"]
    assert "if cuda.blockIdx.x == 0:" in by_kind["block0"]
    numba = "@njit(parallel=True)\ndef f(x):\n    # BEGIN SOLUTION\n    for i in prange(3):\n" \
            "        x[i] = 0\n    # END SOLUTION\n"
    assert "for i in range(3)" in {m.kind: m.source for m in mutants.mutants_of(numba, "f")}["prange"]
