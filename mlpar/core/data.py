"""Find the course's small datasets and check that they are the files we think they are.

The files ship inside the package (``mlpar/core/datasets/``, package data of the wheel), so
they are found the same way from a clone, an editable install, ``pip install .``, a wheel or
Colab, whatever the working directory: through ``importlib.resources``. Setting the
``MLPAR_DATA`` environment variable to a folder that holds its own ``MANIFEST.tsv`` reads the
files from there instead (a course fork with other data, or a read-only site-packages).
``MANIFEST.tsv`` lists every file with its sha256, source and licence.
"""

from __future__ import annotations

import csv
import hashlib
import os
from importlib import resources
from pathlib import Path

from mlpar.core import validation

PACKAGED = "datasets"  # folder of package data inside mlpar/core/


def packaged_dir() -> Path:
    """The data folder shipped with the installed package."""
    folder = resources.files("mlpar.core").joinpath(PACKAGED)
    # A zip import would give a non-filesystem Traversable; pip never installs mlpar that way.
    return Path(str(folder))


def data_dir() -> Path:
    """The folder the course's data files are read from: ``MLPAR_DATA`` if set, else the package's."""
    override = os.environ.get("MLPAR_DATA")
    folder = Path(override) if override else packaged_dir()
    if not (folder / "MANIFEST.tsv").is_file():
        where = f"MLPAR_DATA={override!r}" if override else "the installed mlpar package"
        raise FileNotFoundError(
            f"no MANIFEST.tsv in {folder} (from {where}); "
            + ("point MLPAR_DATA at a folder with a MANIFEST.tsv, or unset it"
               if override else "reinstall mlpar (`pip install .`): its package data is missing")
        )
    return folder


def manifest() -> dict[str, dict[str, str]]:
    """Rows of ``MANIFEST.tsv`` keyed by file name."""
    with open(data_dir() / "MANIFEST.tsv", newline="", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f, delimiter="\t")}


def data_path(name: str) -> Path:
    """Path of a file listed in the manifest, e.g. ``data_path("house_prices.csv")``."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a file name string, got {type(name).__name__}")
    validation.choice("name", name, sorted(manifest()))
    return data_dir() / name


def sha256(path: Path) -> str:
    path = validation.path("path", path)
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
