"""Data-parallel gradient descent as MapReduce rounds, on any engine.

Least squares f(w) = (1/2n)‖Xw − y‖², gradient ∇f(w) = (1/n) Xᵀ(Xw − y). Split the rows of
X into m shards, one per worker; since Xᵀr = Σᵢ Xᵢᵀrᵢ, every round is

    broadcast  the server sends w to every worker                    (m messages of d floats)
    map        worker i computes gᵢ = Xᵢᵀ(Xᵢw − yᵢ) on its own rows  (n/m samples each)
    reduce     the server sums g = Σᵢ gᵢ                             (m messages back)
    update     w ← w − η g / n

which is *exactly* serial gradient descent, up to the order of floating-point additions. It
is bulk synchronous: the update waits for the slowest worker. Cost of a round on the model of
``simulated_cluster``: about (m + 1)(α + β·8d) + per_sample·n/m, so adding workers divides the
computation but multiplies the messages through the server's one link.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import tasks, validation
from .cost_model import CostModel
from .engines import engine_scope
from .simulated_cluster import Breakdown, SimulatedCluster


@dataclass(frozen=True)
class GDResult:
    """Weights, the loss before each update and after the last, and the clock at each."""

    weights: np.ndarray
    losses: np.ndarray  # (n_iter + 1,): f(w_0), …, f(w_T)
    times: np.ndarray  # (n_iter + 1,): elapsed seconds when w_t was ready (virtual or real)
    engine: str
    n_workers: int
    breakdown: Breakdown | None = None
    cluster: SimulatedCluster | None = None

    @property
    def time_per_iteration(self) -> float:
        return float((self.times[-1] - self.times[0]) / (len(self.times) - 1))

    def __repr__(self) -> str:
        return (
            f"GDResult({self.engine}, {self.n_workers} workers, {len(self.losses) - 1} iterations, "
            f"final loss {self.losses[-1]:.6g})"
        )

    def plot(self, ax=None, label: str | None = None):
        """Loss against (virtual or real) time."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3))
        ax.semilogy(self.times - self.times[0], self.losses, label=label or repr(self))
        ax.set_xlabel("seconds" + (" (virtual)" if self.engine == "simulated" else ""))
        ax.set_ylabel("loss f(w)")
        return ax


def _check_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = validation.array("X", X, ndim=2, dtype=np.float64, finite=True, min_size=1)
    y = validation.array("y", y, ndim=1, dtype=np.float64, finite=True)
    validation.same_length("X", X, "y", y)
    return X, y


def loss(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """f(w) = (1/2n)‖Xw − y‖²."""
    r = X @ w - y
    return float(r @ r) / (2 * len(y))


def shards(n_samples: int, n_workers: int) -> list[slice]:
    """Contiguous row ranges, sizes differing by at most one (like ``np.array_split``)."""
    n = validation.positive_int("n_samples", n_samples)
    m = validation.positive_int("n_workers", n_workers)
    if m > n:
        raise ValueError(f"n_workers: expected at most n_samples = {n} workers, got {m}")
    bounds = np.linspace(0, n, m + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def serial_gradient_descent(X, y, *, lr: float = 0.5, n_iter: int = 50) -> GDResult:
    """The reference: w ← w − η (1/n) Xᵀ(Xw − y) from w = 0, in one process."""
    X, y = _check_data(X, y)
    lr = validation.positive("lr", lr)
    n_iter = validation.positive_int("n_iter", n_iter)
    w = np.zeros(X.shape[1])
    losses = [loss(X, y, w)]
    for _ in range(n_iter):
        w = w - lr * (X.T @ (X @ w - y)) / len(y)
        losses.append(loss(X, y, w))
    return GDResult(w, np.array(losses), np.arange(n_iter + 1, dtype=float), "serial", 1)


def gradient_descent(
    X,
    y,
    *,
    n_workers: int | None = None,
    engine="simulated",
    lr: float = 0.5,
    n_iter: int = 50,
    cost: CostModel | None = None,
    message_bytes: int | None = None,
    address: str | None = None,
) -> GDResult:
    """Parallel gradient descent by MapReduce rounds; same weights on every engine.

    ``engine`` is a name ('simulated', 'processes', 'dask') or an open ``Engine`` (reused,
    not closed: start a Dask cluster once for several runs); ``n_workers`` defaults to 2 with
    a name and to the engine's own count with an engine. ``cost`` prices the simulated
    engine; ``message_bytes`` pretends each message is that big (a larger model) there.
    """
    X, y = _check_data(X, y)
    lr = validation.positive("lr", lr)
    n_iter = validation.positive_int("n_iter", n_iter)
    with engine_scope(engine, n_workers, cost=cost, address=address) as eng:
        parts = shards(len(y), eng.n_workers)
        # Each worker keeps its rows for the whole run; only w and gᵢ travel afterwards.
        data = [(eng.put(i, X[s]), eng.put(i, y[s])) for i, s in enumerate(parts)]
        eng.start()
        eng.reset_clock()
        w = np.zeros(X.shape[1])
        losses, times = [], [eng.elapsed()]
        for _ in range(n_iter):
            jobs = [
                eng.submit(i, tasks.partial_gradient, Xi, yi, w,
                           samples=s.stop - s.start, nbytes=message_bytes)
                for i, ((Xi, yi), s) in enumerate(zip(data, parts, strict=True))
            ]
            results = eng.gather(jobs)
            # Reduce in worker order, whatever order replies came in: identical sums everywhere.
            g = results[0][0].copy()
            for gi, _ in results[1:]:
                g += gi
            losses.append(sum(sse for _, sse in results) / (2 * len(y)))
            w = w - lr * g / len(y)
            times.append(eng.elapsed())
        losses.append(loss(X, y, w))
        cluster = getattr(eng, "cluster", None)
        return GDResult(
            w, np.array(losses), np.array(times), eng.name, eng.n_workers,
            cluster.breakdown() if cluster is not None else None, cluster,
        )


@dataclass(frozen=True)
class Prediction:
    """A real engine's measured time per iteration beside the calibrated model's prediction."""

    engine: str
    n_workers: int
    measured: float
    predicted: float
    cost: CostModel

    @property
    def ratio(self) -> float:
        """measured / predicted: 1 is a perfect model, 2 means reality is twice as slow."""
        return self.measured / self.predicted

    def __repr__(self) -> str:
        return (
            f"Prediction({self.engine} ×{self.n_workers}: measured {self.measured * 1e3:.3g} ms, "
            f"model {self.predicted * 1e3:.3g} ms per iteration, ratio {self.ratio:.2f})"
        )


def measure_and_predict(engine, X, y, *, n_iter: int = 20, repeat: int = 7) -> Prediction:
    """Calibrate a ``CostModel`` on a real ``engine``, then time MapReduce rounds on it.

    The prediction is the simulated engine's time per iteration with that model and the same
    data and worker count. Calibration never times a gradient task through the engine (α, β
    come from echo round trips, the compute from a local timing), so agreement is a test of
    the model, not a fit to the answer.
    """
    from .cost_model import calibrate

    X, y = _check_data(X, y)
    n_iter = validation.positive_int("n_iter", n_iter)
    engine.start()
    cost = calibrate(engine, X, y, repeat=repeat)
    # Two runs; the first iteration of each is a warm-up (first transfers, caches). The median
    # iteration is robust to the odd one hit by another program on a shared machine.
    runs = [gradient_descent(X, y, engine=engine, n_iter=n_iter + 1) for _ in range(2)]
    measured = float(np.median(np.concatenate([np.diff(r.times)[1:] for r in runs])))
    simulated = gradient_descent(X, y, n_workers=engine.n_workers, n_iter=2, cost=cost)
    return Prediction(engine.name, engine.n_workers, measured, simulated.time_per_iteration, cost)
