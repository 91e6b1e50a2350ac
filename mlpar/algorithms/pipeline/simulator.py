"""A dependency-driven pipeline simulator: each op starts when its inputs are there and its device is free.

Given a ``Schedule`` (each device's order of F/B/W ops), the duration of each op per model stage
and the link between devices, ``simulate`` finds every op's start and end:

    start(op) = max( end of the previous op on its device,
                     end(input op) + link,   for each input op (F(i,s-1), B(i,s+1), F(i,s), B(i,s)) )
    link      = α + β·message_bytes + latency between different devices, 0 on the same device

(α, β and latency as in ``mlpar.cluster.cost_model.CostModel``; stage-to-stage messages go over
their own point-to-point links and do not queue behind each other. The op durations are given
here, so the model's per-sample time is not used; a straggler or jitter in it, which this
simulator has no way to apply, is refused rather than ignored.) No timetable is drawn by hand: the
start times follow from the orders and the dependencies alone. An order that asks for an op
before its input can exist (a backward before its forward, a cycle between two devices) never
finishes, and ``simulate`` says which op waits for which.

Outputs (``Timeline``): makespan; the two bubble definitions found in the literature,

    idle fraction    = 1 - Σ_d busy_d / (p · makespan)        GPipe: (p-1)/(m+p-1)
    bubble over ideal = (makespan - busy) / busy, busy = the busiest device's work   GPipe: (p-1)/m

peak activations (micro-batch stashes held at once) and bytes per device; a Gantt chart.
Re-materialisation (``remat=True``) keeps only each stage's input and runs the forward again
inside the backward: B takes t_f + t_b, a stash costs ``message_bytes`` instead of
``activation_bytes``, and during each B the stage holds its rebuilt activations
(``activation_bytes``) on top of the stashes (the (L/K)(N/M) term of GPipe's memory bound).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.pipeline.schedules import Op, Schedule
from mlpar.cluster.cost_model import CostModel
from mlpar.core import validation

COLOURS = {"F": "tab:blue", "B": "tab:orange", "W": "tab:green"}


#: The most model stages (p·v) a schedule may have here.
MAX_STAGES = 4096


def per_stage(name: str, value, n_stages: int) -> np.ndarray:
    """A duration (or size) for every model stage: a scalar for all, or one per stage, ≥ 0."""
    n_stages = validation.positive_int("n_stages", n_stages, maximum=MAX_STAGES)
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float)) if not isinstance(value, str) else None
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.size not in (1, n_stages):
        raise ValueError(f"{name}: expected a number or {n_stages} numbers (one per stage), got {value!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name}: expected non-negative finite durations, got {value!r}")
    return np.broadcast_to(arr, (n_stages,)).copy()


@dataclass(frozen=True, repr=False, eq=False)
class Timeline:
    """The simulated (or measured) run: one row per op, with its device, start and end."""

    schedule: Schedule
    ops: tuple  # Op per row
    device: np.ndarray
    start: np.ndarray
    end: np.ndarray
    peak_activations: np.ndarray  # (p,) stashes held at once
    peak_bytes: np.ndarray  # (p,)
    label: str = "simulated"

    @property
    def makespan(self) -> float:
        return float(self.end.max() - self.start.min())

    @property
    def busy(self) -> np.ndarray:
        """Seconds each device computes."""
        return np.bincount(self.device, weights=self.end - self.start, minlength=self.schedule.p)

    @property
    def idle_fraction(self) -> float:
        """1 - Σ busy / (p · makespan): the share of device time spent waiting."""
        return 1.0 - float(self.busy.sum()) / (self.schedule.p * self.makespan)

    @property
    def bubble_over_ideal(self) -> float:
        """(makespan - busiest device's work) / that work: the bubble relative to ideal time."""
        ideal = float(self.busy.max())
        return (self.makespan - ideal) / ideal

    def __repr__(self) -> str:
        s = self.schedule
        return (f"Timeline({s.name}, p={s.p}, m={s.m}" + (f", v={s.v}" if s.v > 1 else "") +
                f": makespan {self.makespan:.4g}, idle fraction {self.idle_fraction:.3f}, "
                f"bubble/ideal {self.bubble_over_ideal:.3f}, peak activations "
                f"{self.peak_activations.max()})")

    def plot(self, ax=None, *, title: str | None = None, numbers: bool | None = None):
        """Gantt chart: one row per device, F blue, B orange, W green; white is idle.

        With v > 1 chunks per device, each chunk has its own shade (chunk 0 darkest), named in
        the legend.
        """
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch

        if ax is None:
            _, ax = plt.subplots(figsize=(9, 0.45 * self.schedule.p + 1.2))
        t0 = self.start.min()
        if numbers is None:
            numbers = len(self.ops) <= 160
        p, v = self.schedule.p, self.schedule.v
        alphas = np.linspace(1.0, 0.35, v) if v > 1 else np.ones(1)  # one shade per chunk
        for kind, colour in COLOURS.items():
            for chunk in range(v):
                rows = [i for i, op in enumerate(self.ops)
                        if op.kind == kind and op.stage // p == chunk]
                for d in range(p):
                    mine = [i for i in rows if self.device[i] == d]
                    ax.broken_barh([(self.start[i] - t0, self.end[i] - self.start[i]) for i in mine],
                                   (d - 0.4, 0.8), facecolors=colour, alpha=float(alphas[chunk]),
                                   edgecolor="white", linewidth=0.5)
        if numbers:
            for i, op in enumerate(self.ops):
                ax.text((self.start[i] + self.end[i]) / 2 - t0, self.device[i], str(op.micro),
                        ha="center", va="center", fontsize=6, color="white")
        ax.set_yticks(range(self.schedule.p), [f"device {d}" for d in range(self.schedule.p)])
        ax.set_ylim(self.schedule.p - 0.5, -0.5)
        ax.set_xlabel("time")
        ax.set_title(title or f"{self.label}: {self!r}"[:110], fontsize=8, loc="left")
        kinds = [k for k in COLOURS if any(op.kind == k for op in self.ops)]
        handles = [Patch(color=COLOURS[k], label=k) for k in kinds]
        if v > 1:
            handles += [Patch(color="tab:grey", alpha=float(a), label=f"chunk {c}")
                        for c, a in enumerate(alphas)]
        # one row above the axes while it leaves room for the title on the left; two rows beyond
        ncol = len(handles) if len(handles) <= 4 else (len(handles) + 1) // 2
        ax.legend(handles=handles, fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0),
                  ncol=ncol, frameon=False, borderaxespad=0.1, handlelength=1.0)
        return ax


def dependencies(op: Op, schedule: Schedule) -> list[Op]:
    """The ops whose results ``op`` needs."""
    last = schedule.n_stages - 1
    if op.kind == "F":
        return [Op("F", op.micro, op.stage - 1)] if op.stage > 0 else []
    if op.kind == "B":
        return [Op("F", op.micro, op.stage)] + ([Op("B", op.micro, op.stage + 1)] if op.stage < last else [])
    return [Op("B", op.micro, op.stage)]


def check_ops(schedule: Schedule) -> None:
    """Every op once, on the device that holds its stage; W ops exactly when the backward is split."""
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule: expected a Schedule, got {type(schedule).__name__}")
    kinds = ("F", "B", "W") if schedule.split_backward else ("F", "B")
    m, S = schedule.m, schedule.n_stages
    seen = np.zeros((len(kinds), m, S), dtype=bool)
    for d, order in enumerate(schedule.orders):
        for op in order:
            if (op.kind not in kinds or not 0 <= op.micro < m or not 0 <= op.stage < S):
                raise ValueError(f"schedule: device {d} has an unknown op {op!r} (kinds {kinds}, "
                                 f"micro-batches 0..{m - 1}, stages 0..{S - 1})")
            if op.stage % schedule.p != d:
                raise ValueError(f"schedule: {op!r} is on device {d}, but stage {op.stage} lives on "
                                 f"device {schedule.device_of(op.stage)}")
            k = kinds.index(op.kind)
            if seen[k, op.micro, op.stage]:
                raise ValueError(f"schedule: {op!r} appears twice")
            seen[k, op.micro, op.stage] = True
    if not seen.all():
        k, i, s = (int(x) for x in np.argwhere(~seen)[0])
        raise ValueError(f"schedule: {int((~seen).sum())} op(s) missing, e.g. {Op(kinds[k], i, s)!r}")


def _check_link(link) -> None:
    """``link`` is None or a ``CostModel`` whose every field this simulator can honour."""
    if link is None:
        return
    if not isinstance(link, CostModel):
        raise TypeError(f"link: expected a CostModel or None, got {type(link).__name__}")
    if (link.straggler is not None and link.slowdown != 1.0) or link.jitter > 0:
        raise ValueError(f"link: expected a cost model of messages only (α, β, latency); the "
                         f"pipeline simulator cannot apply its straggler or jitter, got {link!r}: "
                         f"give slower stages longer t_f/t_b instead")


def zb_h1_makespan(p: int, m: int, t_f: float, t_b: float, t_w: float) -> float:
    """ZB-H1's makespan on equal stages with free links, m ≥ p.

    m(T_F + T_B + T_W) + (p − 1)·max(T_F, T_B, T_F + T_B − T_W). The familiar bubble
    (p − 1)(T_F + T_B − T_W) of Qi et al. (2024) is the case T_W ≤ T_F and T_W ≤ T_B: a
    longer W no longer hides in the drain, and the bubble stays (p − 1)·max(T_F, T_B).
    """
    p, m = validation.positive_int("p", p), validation.positive_int("m", m)
    if m < p:
        raise ValueError(f"m: expected at least p={p} micro-batches for this closed form, got {m}")
    t_f, t_b = validation.non_negative("t_f", t_f), validation.non_negative("t_b", t_b)
    t_w = validation.non_negative("t_w", t_w)
    return m * (t_f + t_b + t_w) + (p - 1) * max(t_f, t_b, t_f + t_b - t_w)


def simulate(schedule: Schedule, *, t_f=1.0, t_b=2.0, t_w=0.0, link: CostModel | None = None,
             message_bytes: int = 0, activation_bytes=None, remat: bool = False) -> Timeline:
    """Run ``schedule`` on virtual devices; durations are per model stage (scalars or sequences).

    With split backwards (``zb-h1``) ``t_b`` is the input-gradient part and ``t_w`` the weight-
    gradient part; otherwise B takes ``t_b`` (+ ``t_w``, if given). Raises ``ValueError`` if an op
    comes before its input exists.
    """
    check_ops(schedule)
    S = schedule.n_stages
    tf, tb, tw = per_stage("t_f", t_f, S), per_stage("t_b", t_b, S), per_stage("t_w", t_w, S)
    if not schedule.split_backward:
        tb = tb + tw
    if not isinstance(remat, bool):
        raise TypeError(f"remat: expected True or False, got {remat!r}")
    if remat:
        tb = tb + tf
    _check_link(link)
    message_bytes = validation.integer("message_bytes", message_bytes, minimum=0)
    hop = 0.0 if link is None else link.transfer_time(message_bytes)
    stash = per_stage("activation_bytes", message_bytes if activation_bytes is None else activation_bytes, S)
    rebuilt = None
    if remat:  # keep the input only; the B rebuilds the stage's activations for its micro-batch
        stash, rebuilt = np.full(S, float(message_bytes)), stash
    duration = {"F": tf, "B": tb, "W": tw}

    p, m = schedule.p, schedule.m
    orders = schedule.orders
    stage_device = [schedule.device_of(s) for s in range(S)]
    # hop[s]: the delay of a message between stage s and stage s+1 (0 on one device)
    hop_up = [hop if s + 1 < S and stage_device[s] != stage_device[s + 1] else 0.0 for s in range(S)]
    ends = {"F": [[None] * S for _ in range(m)], "B": [[None] * S for _ in range(m)],
            "W": [[None] * S for _ in range(m)]}
    end_f, end_b = ends["F"], ends["B"]
    durations = {k: v.tolist() for k, v in duration.items()}
    rows_op, rows_dev, rows_start, rows_end = [], [], [], []
    pointer, free = [0] * p, [0.0] * p
    waiting: dict[tuple, list[int]] = {}
    queue = deque(range(p))
    last = S - 1
    while queue:
        d = queue.popleft()
        order = orders[d]
        while pointer[d] < len(order):
            op = order[pointer[d]]
            kind, i, s = op
            t = free[d]
            blocked = None
            if kind == "F":
                if s > 0:
                    e = end_f[i][s - 1]
                    if e is None:
                        blocked = ("F", i, s - 1)
                    elif e + hop_up[s - 1] > t:
                        t = e + hop_up[s - 1]
            elif kind == "B":
                e = end_f[i][s]
                if e is None:
                    blocked = ("F", i, s)
                else:
                    t = max(t, e)
                    if s < last:
                        e = end_b[i][s + 1]
                        if e is None:
                            blocked = ("B", i, s + 1)
                        elif e + hop_up[s] > t:
                            t = e + hop_up[s]
            else:
                e = end_b[i][s]
                if e is None:
                    blocked = ("B", i, s)
                elif e > t:
                    t = e
            if blocked is not None:
                waiting.setdefault(blocked, []).append(d)
                break
            finish = t + durations[kind][s]
            ends[kind][i][s] = finish
            free[d] = finish
            pointer[d] += 1
            rows_op.append(op)
            rows_dev.append(d)
            rows_start.append(t)
            rows_end.append(finish)
            if waiting:
                for other in waiting.pop(op, ()):
                    queue.append(other)
    stuck = [d for d in range(p) if pointer[d] < len(orders[d])]
    if stuck:
        d = stuck[0]
        op = orders[d][pointer[d]]
        dep = next(x for x in dependencies(op, schedule) if ends[x.kind][x.micro][x.stage] is None)
        where = stage_device[dep.stage]
        if where == d:
            why = "which comes later on the same device"
        else:
            why = f"from device {where}, which is itself stuck before it"
        raise ValueError(f"schedule: invalid order: on device {d}, {op!r} comes before its input "
                         f"{dep!r} exists ({why}); ops never run: "
                         f"{sum(len(o) for o in orders) - len(rows_op)}")
    peak_n, peak_b = activation_peaks(schedule, stash, rebuilt)
    return Timeline(schedule, tuple(rows_op), np.array(rows_dev), np.array(rows_start),
                    np.array(rows_end), peak_n, peak_b)


def activation_peaks(schedule: Schedule, stash: np.ndarray,
                     rebuilt=None) -> tuple[np.ndarray, np.ndarray]:
    """Most micro-batch stashes (and bytes) each device holds: held from F to B (or to W).

    ``rebuilt`` (per stage, re-materialisation): bytes a B holds while it runs, on top of the
    stashes (the activations it recomputed for its micro-batch).
    """
    frees = "W" if schedule.split_backward else "B"
    counts, sizes = np.zeros(schedule.p, dtype=int), np.zeros(schedule.p)
    stash = np.asarray(stash, dtype=float).tolist()
    extra = None if rebuilt is None else np.asarray(rebuilt, dtype=float).tolist()
    for d, order in enumerate(schedule.orders):
        n, b = 0, 0.0
        for op in order:
            if op.kind == "F":
                n, b = n + 1, b + stash[op.stage]
                counts[d], sizes[d] = max(counts[d], n), max(sizes[d], b)
            if op.kind == "B" and extra is not None:
                sizes[d] = max(sizes[d], b + extra[op.stage])
            if op.kind == frees:
                n, b = n - 1, b - stash[op.stage]
    return counts, sizes


def closed_forms(p: int, m: int, t_f: float = 1.0, t_b: float = 2.0) -> dict:
    """GPipe / 1F1B on equal stages with free links, by hand: makespan and both bubble ratios."""
    p, m = validation.positive_int("p", p), validation.positive_int("m", m)
    t_f, t_b = validation.positive("t_f", t_f), validation.positive("t_b", t_b)
    return {"makespan": (m + p - 1) * (t_f + t_b), "idle_fraction": (p - 1) / (m + p - 1),
            "bubble_over_ideal": (p - 1) / m}


def all_schedules(p: int, m: int, v: int = 2, *, t_f: float = 1.0, t_b: float = 2.0,
                  layers_per_device: int = 4) -> dict:
    """Every schedule at one (p, m) on equal stages, memory counted in layer activations.

    A stash of one micro-batch holds one activation per layer of its stage (a chunk of an
    interleaved device has 1/v of them); re-materialisation keeps the stage's input only. ZB-H1
    splits the backward into equal halves, B and W. Interleaved needs p | m: skipped otherwise.
    """
    from mlpar.algorithms.pipeline import schedules as sc

    p, m, v = sc.check_sizes(p, m, v)
    units = validation.positive_int("layers_per_device", layers_per_device)
    common = {"message_bytes": 1, "activation_bytes": units}
    runs = {
        "gpipe": simulate(sc.gpipe(p, m), t_f=t_f, t_b=t_b, **common),
        "gpipe + remat": simulate(sc.gpipe(p, m), t_f=t_f, t_b=t_b, remat=True, **common),
        "1f1b": simulate(sc.one_f_one_b(p, m), t_f=t_f, t_b=t_b, **common),
        "1f1b + remat": simulate(sc.one_f_one_b(p, m), t_f=t_f, t_b=t_b, remat=True, **common),
        "zb-h1": simulate(sc.zb_h1(p, m), t_f=t_f, t_b=t_b / 2, t_w=t_b / 2, **common),
    }
    if m % p == 0 and v > 1:
        runs[f"interleaved, v={v}"] = simulate(sc.interleaved(p, m, v), t_f=t_f / v, t_b=t_b / v,
                                               message_bytes=1, activation_bytes=units / v)
    return runs


#: A marker per schedule of ``all_schedules``: points that coincide stay told apart.
MARKERS = {"gpipe": "o", "gpipe + remat": "s", "1f1b": "D", "1f1b + remat": "^", "zb-h1": "v"}


def time_over_ideal(runs: dict) -> dict:
    """Per schedule, (makespan − ideal) / ideal with one ideal for all: the busiest device's work
    *without* recomputation (the least such work among ``runs``). Equal to bubble over ideal
    time without re-materialisation; with it, the recomputed forwards count as lost time."""
    ideal = min(float(r.busy.max()) for r in runs.values())
    return {name: (r.makespan - ideal) / ideal for name, r in runs.items()}


def plot_memory_vs_bubble(runs: dict, ax=None):
    """Time over the no-recompute ideal against the busiest device's peak memory, one point per
    schedule (``time_over_ideal``; for schedules without re-materialisation it is the bubble
    over ideal time).

    Several schedules often land on the same point (1F1B and ZB-H1 hold the same activations;
    re-materialisation keeps GPipe's bubble), so there are no labels next to the points, where
    they would be written over each other: each schedule has its own marker, hollow and of its
    own size (coinciding points show as nested markers), named in a legend beside the axes.
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not runs or not all(
            isinstance(r, Timeline) for r in runs.values()):
        raise TypeError(f"runs: expected a non-empty dict of name -> Timeline (all_schedules), "
                        f"got {type(runs).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.2), constrained_layout=True)
    colours = plt.cm.tab10.colors
    lost = time_over_ideal(runs)
    for k, (label, r) in enumerate(runs.items()):
        marker = MARKERS.get(label, "P")
        ax.scatter(r.peak_bytes.max(), lost[label], s=190 - 26 * k, marker=marker,
                   facecolors="none", edgecolors=colours[k % len(colours)], linewidths=1.6,
                   label=label, zorder=3 + k)
    ax.set_xlabel("peak memory, busiest device\n[layer activations]")  # two lines: fits a narrow panel
    ax.set_ylabel("(time − ideal) / ideal\n(ideal: no bubble, no recompute)")
    ax.margins(0.15)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              labelspacing=1.1, frameon=False)
    return ax


def explore(name: str, p: int, m: int, v: int = 1, remat: bool = False,
            *, layers_per_device: int = 4) -> tuple[Timeline, dict]:
    """The lesson's widget, without drawing: ``name`` at (p, m, v) on equal stages, and every
    schedule at (p, m) for the memory plot (``all_schedules``).

    Forward 1 and backward 2 time units per device's share of the model (split B = W = 1 for
    ZB-H1); memory in layer activations, ``layers_per_device`` per device, 1/v per chunk.
    ``remat`` applies to the schedules without a split backward. Raises ``ValueError`` for a
    combination that does not exist (interleaved with m not a multiple of p).
    """
    from mlpar.algorithms.pipeline import schedules as sc

    if not isinstance(remat, bool):
        raise TypeError(f"remat: expected True or False, got {remat!r}")
    units = validation.positive_int("layers_per_device", layers_per_device)
    schedule = sc.make(name, p, m, v)
    split = schedule.split_backward
    timeline = simulate(schedule, t_f=1.0 / schedule.v, t_b=(1.0 if split else 2.0) / schedule.v,
                        t_w=1.0 if split else 0.0, message_bytes=1,
                        activation_bytes=units / schedule.v, remat=remat and not split)
    return timeline, all_schedules(p, m, v, layers_per_device=units)
