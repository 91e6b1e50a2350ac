"""A submission rebuilt from the official student edition, keeping only the student's answers.

Every cell comes from the official notebook except the solution cells. Each solution cell comes
from the student's notebook, chosen as running it top to bottom in Jupyter would: the last cell
before the check cell that binds the exercise's function (``def``, ``f = lambda …``, an alias,
inside ``%%time``/``%%capture``), so a fix added below the official cell counts and a scratch
redefinition after the check does not; with no such cell before the check (cells reordered),
the last one that binds it. Other cells the student added are not run: their presence is the
flag ``extra_cells``; a locked cell the student changed or deleted is replaced by the official
one and flagged ``edited_cells``. A solution cell that cannot be found is ``missing_solution``.

:func:`job` is what the grading process runs (:mod:`mlpar.course.grading.runner`): the cells
grading mode needs (:mod:`mlpar.course.grading.plan`), plus any the student's answers read
names from, and a check per exercise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlpar.course.grading import integrity
from mlpar.course.grading.checker import observing
from mlpar.course.grading.plan import (
    LessonPlan,
    bindings,
    cell_source,
    closure,
    free_names,
    is_setup,
    magic_body,
    parse,
    prune_setup,
)


@dataclass
class Rebuilt:
    job: dict
    flags: list[str] = field(default_factory=list)           # for every row of the submission
    notes: list[str] = field(default_factory=list)           # what the flags refer to
    tampering: dict[str, list[str]] = field(default_factory=dict)  # exercise -> static findings
    matched_any: bool = False  # at least one cell of the submission is a cell of this lesson


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _defines(tree, name: str) -> bool:
    """The cell binds ``name`` at its top level: a ``def``, ``name = lambda …``, ``name = other``,
    an import as ``name``; inside ``%%time`` or ``%%capture`` too (:func:`plan.magic_body`)."""
    return tree is not None and name in bindings(magic_body(tree)).bound


def _chosen(plan: LessonPlan, their_code, their_trees, by_id) -> dict[int, int]:
    """official solution index -> their cell index, as running their notebook top to bottom would.

    The function a check sees in Jupyter is the one the last cell before the check cell bound.
    Their check cell is found by the official one's id, else by its text; when no defining cell
    comes before it (cells reordered, or the check deleted), the last defining cell is taken.
    """
    official = plan.cells
    position = {k: n for n, (k, _) in enumerate(their_code)}
    chosen: dict[int, int] = {}
    for ex in plan.exercises:
        if ex.solution in chosen:
            continue
        check = official[ex.check_cell]
        check_text = _normal(cell_source(check))
        at = by_id.get(check.get("id")) if check.get("id") else None
        if at is None:
            same = [k for k, c in their_code if _normal(cell_source(c)) == check_text]
            at = same[0] if same else None
        defining = [k for k, _ in their_code if _defines(their_trees.get(k), ex.function)]
        before = [k for k in defining if at is None or position[k] < position[at]]
        if before:
            chosen[ex.solution] = before[-1]
        elif defining:  # cells reordered (check first): their answer still counts
            chosen[ex.solution] = defining[-1]
    return chosen


def rebuild(plan: LessonPlan, notebook: dict, seed: int, instructor_cells: list | None = None) -> Rebuilt:
    """The job for one student's notebook of ``plan``'s lesson, with its flags."""
    official = plan.cells
    theirs = [c for c in notebook.get("cells", []) if isinstance(c, dict)]
    their_code = [(k, c) for k, c in enumerate(theirs) if c.get("cell_type") == "code"]
    their_trees = {k: parse(cell_source(c)) for k, c in their_code}
    by_id = {}
    for k, c in their_code:
        if isinstance(c.get("id"), str):
            by_id.setdefault(c["id"], k)
    known_sources = {_normal(cell_source(c)) for c in official + list(instructor_cells or [])}
    chosen = _chosen(plan, their_code, their_trees, by_id)

    out = Rebuilt(job={})
    official_ids = {c.get("id") for c in official if c.get("id")}
    matched = set(chosen.values())
    extra = []
    for k, c in their_code:
        source = _normal(cell_source(c))
        if k in matched or c.get("id") in official_ids or source in known_sources:
            if c.get("id") in official_ids or source in known_sources:
                out.matched_any = True
            continue
        if source:
            extra.append(k)
    their_by_source = {_normal(cell_source(c)) for _, c in their_code}
    edited = []
    for i, c in enumerate(official):
        if c.get("cell_type") != "code" or i in plan.solution_cells:
            continue
        k = by_id.get(c.get("id"))
        same = {_normal(cell_source(c))}  # the student edition's cell or the instructor's
        if instructor_cells and i < len(instructor_cells):
            same.add(_normal(cell_source(instructor_cells[i])))
        if (k is not None and _normal(cell_source(theirs[k])) not in same) or (
                k is None and not same & their_by_source):
            edited.append(i)
    if extra:
        out.flags.append("extra_cells")
        out.notes.append(f"extra_cells: {len(extra)} code cell(s) you added were not run "
                         f"(cells {', '.join(str(k + 1) for k in extra)} of your notebook); put "
                         "helpers inside the solution cell that uses them")
    if edited:
        out.flags.append("edited_cells")
        out.notes.append(f"edited_cells: {len(edited)} locked cell(s) changed or deleted; the "
                         "official ones were used")

    # names bound to modules anywhere in the lesson: what the tampering scan watches
    trees = list(plan.trees())  # a copy: the student's answers replace their solution cells below
    modules = set()
    for t in trees:
        modules |= set(bindings(t).imports)

    # the student's answers may read names from cells grading mode would skip: run those too
    for i, k in chosen.items():
        trees[i] = their_trees[k]
    cells = closure(trees, set(plan.grading) | set(chosen))
    needed = set()
    for i in cells:
        if not is_setup(trees[i]):
            needed |= free_names(trees[i])

    job_cells = []
    for i in sorted(cells):
        if official[i].get("cell_type") != "code":
            continue
        if i in plan.solution_cells:
            names = [e.name for e in plan.exercises if e.solution == i]
            if i in chosen:
                source = cell_source(theirs[chosen[i]])
                for name in names:
                    found = integrity.scan(source, modules)
                    if found:
                        out.tampering[name] = found
                job_cells.append({"kind": "solution", "exercises": names, "source": source})
            continue
        if i in plan.check_cells:
            for e in [e for e in plan.exercises if e.check_cell == i]:
                cell = {"kind": "check", "exercise": e.name, "module": e.module, "check": e.check,
                        "argument": e.function, "observing": observing(e.module, e.check)}
                if e.solution not in chosen:
                    cell["missing"] = (f"no solution: no cell of the notebook defines "
                                       f"`{e.function}`; the exercise counts as not done")
                job_cells.append(cell)
            continue
        source = cell_source(official[i])
        if is_setup(trees[i]):
            source = prune_setup(trees[i], needed)
            if not source:
                continue
        job_cells.append({"kind": "official", "source": source, "label": str(official[i].get("id") or i)})
    out.job = {"lesson": plan.lesson, "seed": seed, "cells": job_cells}
    return out
