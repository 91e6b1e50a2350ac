"""The course's house-price regression data: synthetic, seeded, with known true weights.

Parallel gradient descent is easiest to see on a linear house-price predictor
``price ≈ w·x + b``. Real listings would need a download and a licence, so the course uses a
**synthetic** set drawn by :func:`generate` from a documented model, which also lets a lesson
check that training recovers the weights that made the data:

    price [k€] = 40 + 2.2·area_m2 + 12·rooms − 0.9·age_years − 3.5·distance_km + ε,
    ε ~ Normal(0, 20²)

with area ~ Gamma, rooms tied to area, age ~ Uniform(0, 80), distance ~ Exponential(mean 8).
``mlpar/core/datasets/house_prices.csv`` is ``write_csv(path, n_samples=4000, seed=2024)``;
its sha256 is in ``mlpar/core/datasets/MANIFEST.tsv``, and
``tests/algorithms/distributed/test_house_prices.py`` regenerates it byte for byte.

    >>> X, y = load()                       # X: (n, 5) standardized with a 1s column, y: (n,)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlpar.core import data, limits, validation

FEATURES = ("area_m2", "rooms", "age_years", "distance_km")
TRUE_INTERCEPT = 40.0
TRUE_WEIGHTS = np.array([2.2, 12.0, -0.9, -3.5])  # k€ per unit of each feature, in FEATURES order
NOISE_STD = 20.0
FILE = "house_prices.csv"
CSV_SAMPLES = 4000
CSV_SEED = 2024


def generate(n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n_samples`` houses: raw features of shape (n, 4) and prices of shape (n,).

    Values are rounded as they are written to the CSV (2 decimals), so a set generated in
    memory equals the one read back from the file.
    """
    n = validation.positive_int("n_samples", n_samples)
    limits.elements("n_samples", 6 * n)
    rng = np.random.default_rng(validation.seed("seed", seed))
    area = 25.0 + rng.gamma(shape=4.0, scale=18.0, size=n)
    # Bigger flats have more rooms, but not exactly: rooms = round(area / 30 ± 0.7), at least 1.
    rooms = np.clip(np.round(area / 30.0 + rng.normal(0.0, 0.7, size=n)), 1, None)
    age = rng.uniform(0.0, 80.0, size=n)
    distance = rng.exponential(8.0, size=n)
    X = np.round(np.column_stack([area, rooms, age, distance]), 2)
    y = TRUE_INTERCEPT + X @ TRUE_WEIGHTS + rng.normal(0.0, NOISE_STD, size=n)
    return X, np.round(y, 2)


def write_csv(path, n_samples: int = CSV_SAMPLES, seed: int = CSV_SEED) -> Path:
    """Write :func:`generate`'s output as CSV (header ``area_m2,...,price_keur``)."""
    validation.path("path", path)
    X, y = generate(n_samples, seed)
    path = Path(path)
    table = np.column_stack([X, y])
    header = ",".join(FEATURES + ("price_keur",))
    np.savetxt(path, table, fmt="%.2f", delimiter=",", header=header, comments="")
    return path


def read_csv(path=None) -> tuple[np.ndarray, np.ndarray]:
    """Raw features (n, 4) and prices (n,) from the course CSV (checked against the manifest)."""
    path = data.verify(FILE) if path is None else validation.path("path", path)
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    return np.ascontiguousarray(table[:, :-1]), np.ascontiguousarray(table[:, -1])


def design_matrix(raw: np.ndarray) -> np.ndarray:
    """Standardize each feature (mean 0, std 1) and prepend a column of ones: shape (n, d+1).

    Gradient descent converges in far fewer steps on standardized features, because the
    Hessian XᵀX/n is then close to a correlation matrix instead of having eigenvalues that
    differ by the ratio of squared feature scales.
    """
    raw = validation.array("raw", raw, ndim=2, dtype=np.float64, finite=True, min_size=1)
    std = raw.std(axis=0)
    if np.any(std == 0):
        raise ValueError("raw: expected every feature to vary, got a constant column")
    z = (raw - raw.mean(axis=0)) / std
    return np.ascontiguousarray(np.column_stack([np.ones(len(raw)), z]))


def true_standardized_weights(raw: np.ndarray) -> np.ndarray:
    """The generating model rewritten for :func:`design_matrix`'s columns: shape (d+1,).

    With z = (x − μ)/σ, w·x + b = (w σ)·z + (b + w·μ).
    """
    raw = validation.array("raw", raw, ndim=2, dtype=np.float64, finite=True, min_size=1)
    mu, sigma = raw.mean(axis=0), raw.std(axis=0)
    return np.concatenate([[TRUE_INTERCEPT + TRUE_WEIGHTS @ mu], TRUE_WEIGHTS * sigma])


def load(n_samples: int | None = None, seed: int = CSV_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Design matrix (n, 5) and prices (n,): the course CSV, or a fresh set of ``n_samples``.

    A larger in-memory set (same model, same seed convention) is what the speed measurements
    use: 4000 rows are too few for computation to outweigh a message between processes.
    """
    seed = validation.seed("seed", seed)  # checked even when the CSV is read and seed unused
    if n_samples is None:
        raw, y = read_csv()
    else:
        raw, y = generate(n_samples, seed)
    return design_matrix(raw), y
