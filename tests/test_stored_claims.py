"""A rendered notebook is what most readers see: a stored claim that failed (✗) must be read by
the prose around it, not contradicted by it.

A lesson's claim prints ``✓``/``✗``/``n/a`` lines (``mlpar.core.claims``). When the committed
output of a cell shows ``✗``, the nearest markdown cell before or after it must say what a failed
claim means there (mention "✗" or that the claim did not hold), or the cell itself must print a
reading of this run ("How to read this run: ..."); otherwise the notebook shows
evidence against its own text and the lesson must be re-executed where the claim holds, or its
prose rewritten to read the figure honestly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
FAILED_CLAIM = re.compile(r"^\s*✗ \[\d\d\] (?P<statement>[^:]+)", re.MULTILINE)
READS_A_FAILURE = re.compile(r"✗|did not hold|does not hold|doesn't hold|not hold here|fails here",
                             re.IGNORECASE)
# A line the lesson prints after a failed claim to read it (not the claim's own "likely cause").
PRINTED_READING = re.compile(r"^How to read this run: \S", re.MULTILINE)


def _output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]))
        else:
            parts.append("".join(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def _nearest_markdown(cells: list, index: int, step: int) -> str:
    i = index + step
    while 0 <= i < len(cells):
        if cells[i]["cell_type"] == "markdown":
            return "".join(cells[i]["source"])
        i += step
    return ""


def unread_failures(notebook: dict) -> list[str]:
    """``cell N: statement`` for every stored ✗ claim whose neighbouring prose ignores it."""
    cells = notebook["cells"]
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        output = _output_text(cell)
        failures = FAILED_CLAIM.findall(output)
        if not failures:
            continue
        prose = _nearest_markdown(cells, index, -1) + "\n" + _nearest_markdown(cells, index, +1)
        if not READS_A_FAILURE.search(prose) and not PRINTED_READING.search(output):
            found += [f"cell {index}: {statement.strip()}" for statement in failures]
    return found


def _notebook(cells):
    return {"cells": [
        {"cell_type": kind, "source": [text], **({"outputs": [{"name": "stdout", "text": [out]}]}
                                                 if kind == "code" else {})}
        for kind, text, out in cells]}


def test_detector_flags_a_failed_claim_beside_prose_that_assumes_it():
    nb = _notebook([
        ("markdown", "Threads double the speed of horner.", ""),
        ("code", "claim()", "✗ [01] compute-bound horner, 1 -> 2 threads: 1.2× (needs >= 1.7×)\n"),
        ("markdown", "As expected, compute-bound work scales.", ""),
    ])
    assert unread_failures(nb) == ["cell 1: compute-bound horner, 1 -> 2 threads"]


@pytest.mark.parametrize("prose", [
    "If the line above shows ✗, another program held a core while it ran.",
    "Here the claim did not hold: the host shares its cores.",
])
def test_detector_accepts_prose_that_reads_a_failure(prose):
    nb = _notebook([
        ("code", "claim()", "✗ [05] calibrated model on dask ×2: 1.6× (needs <= 1.3×)\n"),
        ("markdown", prose, ""),
    ])
    assert unread_failures(nb) == []


def test_detector_accepts_a_reading_printed_by_the_cell_but_not_the_likely_cause():
    claim = "✗ [02] BLAS a @ b, 1 -> 2 threads: 1.2× (needs >= 1.7×)\n    likely cause: busy\n"
    read = claim + "\nHow to read this run: BLAS's threads gained 1.2x here, short of the claim.\n"
    assert unread_failures(_notebook([("code", "c()", read), ("markdown", "BLAS scales.", "")])) == []
    assert unread_failures(_notebook([("code", "c()", claim), ("markdown", "BLAS scales.", "")])) \
        == ["cell 0: BLAS a @ b, 1 -> 2 threads"]


def test_detector_ignores_held_and_not_applicable_claims():
    nb = _notebook([
        ("code", "claim()", "✓ [02] ikj vs ijk: 20× (needs >= 3×)\n"
                            "n/a [02] BLAS threads (needs >= 1.7×): needs at least 2 usable cores\n"),
        ("markdown", "Loop order matters.", ""),
    ])
    assert unread_failures(nb) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_stored_failed_claim_goes_unread(path):
    failures = unread_failures(json.loads(path.read_text(encoding="utf-8")))
    assert not failures, (
        f"{path.name} stores a failed claim (✗) beside prose that does not mention it: "
        f"{failures}. Re-execute the lesson where the claim holds, or let the prose read the ✗.")
