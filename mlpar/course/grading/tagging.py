"""``python -m mlpar.course tag-grading [--check]``: tag the cells grading mode runs.

Writes the cell tag ``grading`` onto exactly the cells :func:`mlpar.course.grading.plan.rule_cells`
selects in each instructor notebook (removing it from cells it no longer selects), touching only
cell metadata, by a JSON read-modify-write that leaves everything else byte for byte as it was.
Idempotent: a second run changes nothing. ``--check`` only names the notebooks out of date.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlpar.course.grading.plan import GRADING_TAG, rule_cells


def retag(nb: dict) -> bool:
    """Set the ``grading`` tags of ``nb`` in place; return whether anything changed."""
    cells = nb.get("cells", [])
    wanted = rule_cells(cells)
    changed = False
    for i, cell in enumerate(cells):
        meta = cell.setdefault("metadata", {})
        tags = list(meta.get("tags", []))
        has = GRADING_TAG in tags
        if (i in wanted) == has:
            continue
        changed = True
        if has:
            tags.remove(GRADING_TAG)
        else:
            tags.append(GRADING_TAG)
        if tags:
            meta["tags"] = tags
        else:
            meta.pop("tags", None)
    return changed


def dumps(nb: dict) -> str:
    """As nbformat writes a notebook (and ``mlpar.course`` adds a final newline)."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n"


def tag_notebooks(paths: list[Path], write: bool = True) -> list[Path]:
    """Retag each notebook; return those that changed (or, with ``write=False``, would)."""
    stale = []
    for path in paths:
        text = Path(path).read_text(encoding="utf-8")
        nb = json.loads(text)
        if retag(nb):
            stale.append(Path(path))
            if write:
                Path(path).write_text(dumps(nb), encoding="utf-8")
    return stale
