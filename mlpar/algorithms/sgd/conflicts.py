"""Counting the races of lock-free SGD on real threads, without atomic instructions.

Two kinds of race can hit a lock-free update of ``w_j`` (Niu, Recht, Ré and Wright, 2011,
call the sets of coordinates one update touches its *edge*; two updates race when their
edges meet while both are in flight):

* a **stale read**: another thread wrote ``w_j`` after this update read it for the margin
  and before this update writes ``w_j`` back;
* a **lost update**: two read-modify-writes ``w[j] -= ...`` interleave; both read the old
  value, both write, and one of the increments vanishes.

``RaceCounts`` is the one record of both counts: the real threads here and the virtual
clock of ``mlpar.algorithms.sgd.conflict_model`` report through it, so their rates mean
the same thing.

How often races happen depends on how long an update is *in flight*. ``work_per_update``
adds the same amount of compute between each update's read and its write (a stand-in for a
gradient whose cost does not depend on the row), so every density is measured at the same
time per update: the other thread then writes about ``density`` of the coordinates during
one update, and the rates rise with the density, as the Hogwild analysis says they should.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from mlpar.algorithms.sgd.hogwild import NO_ROWS, chunk_bounds, run_in_threads
from mlpar.algorithms.sgd.sparse_data import SparseProblem, make_sparse_problem
from mlpar.algorithms.sgd.sparse_logistic import check_training_data, minus_sigmoid_gradient
from mlpar.core import limits, validation
from mlpar.cpu.spinlock import arrive_and_wait, load_relaxed, new_lock, store_release

# Logistic-map steps between read and write in the sweep: about a microsecond or two, several
# times longer than the densest row's own reads and writes, so time per update is ~constant.
SWEEP_WORK_PER_UPDATE = 2_000
# Rates from fewer concurrent writes than this are noise (the threads barely overlapped).
MIN_CONCURRENT_WRITES = 1_000
PAD_R = 3.9  # the logistic map's chaotic regime: the padding loop cannot be shortcut
# Caps that refuse runs of days before they start (the sweep's padding is 2,000 per update).
MAX_EPOCHS = 10_000
MAX_WORK_PER_UPDATE = 10_000_000


@dataclass(frozen=True)
class RaceCounts:
    """Races counted over ``writes`` coordinate writes (measured or simulated)."""

    threads: int
    writes: int
    stale_reads: int
    lost_updates: int

    @property
    def stale_rate(self) -> float:
        """Stale reads per coordinate write."""
        return self.stale_reads / self.writes

    @property
    def lost_rate(self) -> float:
        """Lost updates per coordinate write."""
        return self.lost_updates / self.writes


@dataclass(frozen=True)
class ConflictCount(RaceCounts):
    """Races seen in one instrumented lock-free run on real threads.

    ``concurrent_writes``: writes made by updates during which another thread made progress.
    Races can only happen then; on a busy machine the threads often run one after the
    other, so the rates per *concurrent* write are the ones to compare between densities.
    """

    density: float = 0.0
    work_per_update: int = 0
    concurrent_writes: int = 0
    #: nnz / (n_samples · n_features) of the problem: what the races depend on
    actual_density: float = float("nan")

    @property
    def overlap(self) -> float:
        """Share of the writes made while another thread was running too."""
        return self.concurrent_writes / self.writes

    @property
    def stale_rate_concurrent(self) -> float:
        """Stale reads per concurrent write (NaN if the threads never overlapped)."""
        return self.stale_reads / self.concurrent_writes if self.concurrent_writes else float("nan")

    @property
    def lost_rate_concurrent(self) -> float:
        """Lost updates per concurrent write (NaN if the threads never overlapped)."""
        return self.lost_updates / self.concurrent_writes if self.concurrent_writes else float("nan")


@numba.njit(nogil=True, cache=True)
def _instrumented_worker(
    indptr, indices, data, y, w, hits, seen, order, start, stop, step, barrier, parties, work,
    progress, me,
):
    """A lock-free chunk that also counts stale reads; ``hits`` counts lost updates.

    Stale read: the value of ``w_j`` used for the margin differs from the value found just
    before writing ``w_j`` (another thread wrote it in between). Lost update: every write
    to ``w_j`` also does ``hits[j] += 1`` with the same unsynchronised read-modify-write;
    increments that vanish (``Σ hits`` < writes made) were overwritten by another thread.
    ``work`` logistic-map steps run between the read and the write (the update's "compute").
    Overlap: thread ``me`` bumps ``progress[me]`` after each update; an update during which
    the other threads' progress moved ran concurrently with them.
    Returns (stale reads, writes made concurrently).
    """
    arrive_and_wait(barrier, parties)
    stale = 0
    concurrent = 0
    x = 0.5
    for k in range(start, stop):
        i = order[k]
        a, b = indptr[i], indptr[i + 1]
        before = 0
        for t in range(progress.size):
            if t != me:
                before += load_relaxed(progress, t)
        margin = 0.0
        for p in range(a, b):
            seen[p - a] = load_relaxed(w, indices[p])
            margin += data[p] * seen[p - a]
        for _ in range(work):
            x = PAD_R * x * (1.0 - x)
        # 0.0 * x is not folded away (x could be NaN for all the compiler knows), so the
        # padding really runs; for the finite x of the map it changes nothing.
        scale = step * y[i] * minus_sigmoid_gradient(y[i] * margin) + 0.0 * x
        for p in range(a, b):
            j = indices[p]
            now = load_relaxed(w, j)
            if now != seen[p - a]:
                stale += 1
            w[j] = now - scale * data[p]
            hits[j] += 1
        after = 0
        for t in range(progress.size):
            if t != me:
                after += load_relaxed(progress, t)
        if after != before:
            concurrent += b - a
        # a release store: a plain one could be kept in a register until the loop ends
        store_release(progress, me, progress[me] + 1)
    return stale, concurrent


def count_conflicts(
    problem: SparseProblem,
    *,
    threads: int = 2,
    step: float = 0.5,
    epochs: int = 1,
    seed: int = 0,
    work_per_update: int = 0,
) -> ConflictCount:
    """Run lock-free SGD with counters and report its stale reads and lost updates.

    Counting without atomics: a stale read is found by comparing the value read for the
    margin with a fresh read just before the write; a lost update by conservation, since
    every write also increments a shared counter ``hits[j]`` with a plain (non-atomic)
    ``+= 1`` and the threads count their own writes privately. With one thread both are 0.
    """
    threads = limits.workers("threads", threads)
    step = validation.positive("step", step)
    epochs = validation.positive_int("epochs", epochs, maximum=MAX_EPOCHS)
    seed = validation.seed("seed", seed)
    work_per_update = validation.integer("work_per_update", work_per_update, minimum=0,
                                         maximum=MAX_WORK_PER_UPDATE)
    problem = check_training_data(problem)
    p = problem
    rng = np.random.default_rng(seed)
    w = np.zeros(p.n_features)
    hits = np.zeros(p.n_features, dtype=np.int64)
    row_sizes = np.diff(p.indptr)
    seen = [np.empty(int(row_sizes.max()), dtype=np.float64) for _ in range(threads)]
    barrier = new_lock()
    # compile on this thread before the workers start
    progress = np.zeros(threads, dtype=np.int64)
    _instrumented_worker(
        p.indptr, p.indices, p.data, p.y, w, hits, seen[0], NO_ROWS, 0, 0, step, barrier, 1, 0,
        progress, 0,
    )
    stale = 0
    concurrent = 0
    writes = 0
    for _ in range(epochs):
        order = rng.permutation(p.n_samples)
        bounds = chunk_bounds(p.n_samples, threads)
        barrier[0] = 0
        args = [
            (p.indptr, p.indices, p.data, p.y, w, hits, seen[t], order, bounds[t],
             bounds[t + 1], step, barrier, threads, work_per_update, progress, t)
            for t in range(threads)
        ]
        for s, c in run_in_threads(_instrumented_worker, args):
            stale += int(s)
            concurrent += int(c)
        writes += int(row_sizes.sum())
    lost = writes - int(hits.sum())
    return ConflictCount(threads, writes, stale, lost, p.density, work_per_update, concurrent,
                         p.actual_density)


def stale_rate_model(density: float, threads: int) -> float:
    """The lesson's model of the stale-read rate per concurrent write: ``1 − (1 − d)^(P − 1)``.

    At a fixed time per update, each of the other ``P − 1`` threads makes about one update
    while ours is in flight, and that update writes a given coordinate with probability
    ``d`` (the density); the read of ``w_j`` is stale if at least one of them wrote ``w_j``.
    For 2 threads this is ``d`` itself.
    """
    density = validation.number("density", density, low=0.0, high=1.0)
    threads = validation.positive_int("threads", threads)
    return 1.0 - (1.0 - density) ** (threads - 1)


@dataclass(frozen=True)
class ConflictSweep:
    """Measured stale-read and lost-update rates of lock-free SGD against density."""

    threads: int
    counts: tuple[ConflictCount, ...]

    @property
    def densities(self) -> np.ndarray:
        return np.array([c.density for c in self.counts])

    @property
    def actual_densities(self) -> np.ndarray:
        """nnz / (n_samples · n_features) of each problem (at least 1 / n_features)."""
        return np.array([c.actual_density for c in self.counts])

    def __repr__(self) -> str:
        lines = [f"{'density':>8}{'actual':>8}{'writes':>11}{'overlap':>9}{'model':>8}"
                 f"{'stale/cw':>10}{'lost/cw':>10}"]
        for c in self.counts:
            if c.concurrent_writes < MIN_CONCURRENT_WRITES:  # too few to be a rate
                rates = f"{'—':>10}{'—':>10}"
            else:
                rates = f"{c.stale_rate_concurrent:>10.3g}{c.lost_rate_concurrent:>10.3g}"
            model = stale_rate_model(c.actual_density, self.threads)
            lines.append(f"{c.density:>8g}{c.actual_density:>8.3g}{c.writes:>11,}"
                         f"{c.overlap:>9.2f}{model:>8.3g}{rates}")
        lines.append(f"(— : fewer than {MIN_CONCURRENT_WRITES:,} concurrent writes; "
                     "cw = concurrent write; actual = nnz / (rows · features); "
                     "model = stale reads per cw at the actual density)")
        return "\n".join(lines)

    def plot(self, axes=None):
        """Left: both rates per concurrent write against the *actual* density nnz/(n·d),
        log-log, with the model line ``stale_rate_model``; points with fewer than
        ``MIN_CONCURRENT_WRITES`` concurrent writes are left out (the threads barely ran
        together). Right: the share of writes made while the threads overlapped."""
        import matplotlib.pyplot as plt

        if axes is None:
            _, axes = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True,
                                   gridspec_kw={"width_ratios": [2, 1]})
        left, right = axes
        d = self.actual_densities
        enough = np.array([c.concurrent_writes >= MIN_CONCURRENT_WRITES for c in self.counts])
        for attr, label, marker in (
            ("stale_rate_concurrent", "stale reads", "o"),
            ("lost_rate_concurrent", "lost updates", "s"),
        ):
            rates = np.array([getattr(c, attr) for c in self.counts])
            shown = enough & (rates > 0)
            left.plot(d[shown], rates[shown], marker=marker, label=label)
        grid = np.geomspace(d.min(), d.max(), 50)
        model = [stale_rate_model(x, self.threads) for x in grid]
        # The legend names the model without its formula: lesson 04's Exercise 3 derives it.
        left.plot(grid, model, "k--", lw=1,
                  label="model: d" if self.threads == 2 else f"model, P = {self.threads}")
        left.set_xscale("log")
        left.set_yscale("log")
        left.set_xlabel("actual density d = nnz / (rows · features)")
        left.set_ylabel("events per concurrent write")
        left.legend(fontsize=8)
        left.set_title(f"lock-free SGD, {self.threads} threads (measured)", fontsize=9)
        right.bar(np.arange(d.size), [c.overlap for c in self.counts], color="gray")
        right.set_xticks(np.arange(d.size), [f"{x:.2g}" for x in d], rotation=45, fontsize=8)
        right.set_ylim(0, 1)
        right.set_xlabel("actual density")
        right.set_ylabel("share of writes concurrent")
        right.set_title("did the threads overlap?", fontsize=9)
        return axes


def conflict_sweep(
    densities,
    *,
    n_features: int = 200,
    n_samples: int = 4_000,
    epochs: int = 3,
    work_per_update: int = SWEEP_WORK_PER_UPDATE,
    threads: int = 2,
    seed: int = 0,
    progress: bool = False,
) -> ConflictSweep:
    """``count_conflicts`` on one problem per density, at a fixed time per update.

    Every density gets the same number of updates (``n_samples`` per epoch) and the same
    ``work_per_update`` between each update's read and write, so an update is in flight
    for about the same time whatever its row size: what changes with the density is only
    how many coordinates the other threads write meanwhile. ``progress`` shows a
    ``tqdm.auto`` bar over the densities.
    """
    if isinstance(densities, np.ndarray):  # refuses broadcast views of 10**12 "densities"
        densities = validation.array("densities", densities, ndim=1, numeric=True)
    if isinstance(densities, (str, bytes)) or not hasattr(densities, "__iter__"):
        raise TypeError(f"densities: expected a sequence of densities in (0, 1], got "
                        f"{validation.describe(densities)}")
    densities = [
        validation.number(f"densities[{k}]", d, low=0.0, high=1.0, low_open=True)
        for k, d in enumerate(densities)
    ]
    if not densities:
        raise ValueError("densities: expected at least one density, got none")
    n_features = validation.positive_int("n_features", n_features)
    n_samples = validation.positive_int("n_samples", n_samples)
    limits.elements("n_features", n_features)
    limits.elements("n_samples", n_samples * n_features)  # the densest problem's nonzeros
    epochs = validation.positive_int("epochs", epochs, maximum=MAX_EPOCHS)
    work_per_update = validation.integer("work_per_update", work_per_update, minimum=0,
                                         maximum=MAX_WORK_PER_UPDATE)
    threads = limits.workers("threads", threads)
    seed = validation.seed("seed", seed)
    progress = validation.flag("progress", progress)
    if n_samples < threads:
        raise ValueError(f"n_samples: expected at least one sample per thread ({threads}), "
                         f"got {n_samples}")
    counts = []
    steps = enumerate(densities)
    if progress:
        from tqdm.auto import tqdm

        steps = tqdm(steps, total=len(densities), desc="densities")
    for k, density in steps:
        problem = make_sparse_problem(n_samples, n_features, density, seed=seed + k)
        counts.append(count_conflicts(problem, threads=threads, epochs=epochs, seed=seed,
                                      work_per_update=work_per_update))
    return ConflictSweep(threads, tuple(counts))
