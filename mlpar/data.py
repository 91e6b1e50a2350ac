"""Find the course's small datasets and check that they are the files we think they are.

Lessons run from the repository root, from ``notebooks/``, from an installed copy, or on
Colab (where the set-up cell clones the course to ``/content/mlpar``). ``data_path`` looks in
each of those places, in that order after an explicit ``MLPAR_DATA`` environment variable.
``data/MANIFEST.tsv`` lists every file with its sha256, source and licence.
"""

from __future__ import annotations

import csv
import hashlib
import os
from pathlib import Path

from . import validation

_COLAB_CHECKOUT = Path("/content/mlpar")


def data_dir() -> Path:
    """The ``data/`` folder of the course."""
    candidates = []
    if os.environ.get("MLPAR_DATA"):
        candidates.append(Path(os.environ["MLPAR_DATA"]))
    cwd = Path.cwd()
    candidates += [cwd / "data", cwd.parent / "data", Path(__file__).resolve().parents[1] / "data"]
    candidates.append(_COLAB_CHECKOUT / "data")
    for folder in candidates:
        if (folder / "MANIFEST.tsv").is_file():
            return folder
    raise FileNotFoundError(
        "could not find the course's data/ folder (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); run from the repository, or set MLPAR_DATA to the folder"
    )


def manifest() -> dict[str, dict[str, str]]:
    """Rows of ``data/MANIFEST.tsv`` keyed by file name."""
    with open(data_dir() / "MANIFEST.tsv", newline="", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f, delimiter="\t")}


def data_path(name: str) -> Path:
    """Path of a file listed in the manifest, e.g. ``data_path("house_prices.csv")``."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a file name string, got {type(name).__name__}")
    validation.choice("name", name, sorted(manifest()))
    return data_dir() / name


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(name: str) -> Path:
    """``data_path(name)`` after checking the file's sha256 against the manifest."""
    path = data_path(name)
    expected = manifest()[name]["sha256"]
    actual = sha256(path)
    if actual != expected:
        raise ValueError(f"{name}: sha256 {actual} does not match the manifest's {expected}")
    return path
