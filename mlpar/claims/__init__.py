"""Each lesson's central claims as functions that measure and check them, one module per lesson.

A module ``lNN_<lesson>.py`` defines ``CLAIMS``: a tuple of functions ``f(quick: bool) -> Claim``
(see ``mlpar.core.claims``). The lesson calls the same function in a cell, so the text beside it
and the evidence cannot drift apart; ``python -m mlpar.bench claims`` runs them all.
"""

from __future__ import annotations

import importlib
import pkgutil


def lesson_modules() -> list[str]:
    """Names of the per-lesson claim modules, in lesson order."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("l"))


def all_claims() -> list:
    """Every claim function of every lesson, in lesson order."""
    from mlpar.gpu import backend

    try:  # numba reads the CUDA choice once, at its first import: make it before any lesson does
        backend.choose_cuda_backend()
    except RuntimeError:
        pass  # numba came first; lesson 10's claims then say they cannot run here
    found = []
    for name in lesson_modules():
        found += list(importlib.import_module(f"{__name__}.{name}").CLAIMS)
    return found
