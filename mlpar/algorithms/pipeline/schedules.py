"""Pipeline schedules: for each device, the order in which it runs its forward and backward ops.

A model cut into S = p·v stages runs on p devices; stage s lives on device s mod p (v = 1:
stage s on device s; v > 1: device d holds the v *chunks* d, d+p, d+2p, …, the Megatron-LM
interleaved layout). m micro-batches each pass forward through every stage and backward in
reverse. An operation is one of

    F(i, s)  forward of micro-batch i on stage s     needs F(i, s-1)
    B(i, s)  backward (input gradient, and the weight gradient unless W ops are split off)
             needs B(i, s+1), and F(i, s) for its stashed activations
    W(i, s)  weight gradient only (zero-bubble schedules)   needs B(i, s)

A schedule fixes only each device's *order*; when each op starts is for the simulator to find
(``mlpar.algorithms.pipeline.simulator``). The orders built here:

* ``gpipe``: all forwards, then all backwards, then a flush (Huang et al. 2019);
* ``1f1b``: p-1-d warm-up forwards on device d, then one forward / one backward, then the
  remaining backwards: PipeDream-Flush (Narayanan et al. 2021, PipeDream-2BW);
* ``interleaved``: 1F1B over v chunks per device (Narayanan et al. 2021, Megatron-LM);
* ``zb-h1``: 1F1B with each backward split into B and W, and d weight gradients on device d
  deferred to fill the drain (Qi et al. 2024, Zero Bubble Pipeline Parallelism);
* ``pipedream``: the 1F1B order without a flush, weights updated after every backward
  (Narayanan et al. 2019); ``weight_versions`` counts what weight stashing must keep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from mlpar.core import validation

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "pipedream")


class Op(NamedTuple):
    """One operation: ``kind`` is 'F', 'B' or 'W'; micro-batch ``micro``; model ``stage``."""

    kind: str
    micro: int
    stage: int

    def __repr__(self) -> str:
        return f"{self.kind}{self.micro}" + (f"@{self.stage}" if self.stage else "")


@dataclass(frozen=True)
class Schedule:
    """Per-device op orders: ``orders[d]`` is the tuple of ``Op`` that device d runs, in order."""

    name: str
    p: int
    m: int
    v: int
    orders: tuple
    split_backward: bool = False  # True: separate W ops carry the weight gradient

    @property
    def n_stages(self) -> int:
        return self.p * self.v

    def device_of(self, stage: int) -> int:
        return stage % self.p

    def __repr__(self) -> str:
        return f"Schedule({self.name}: p={self.p}, m={self.m}, v={self.v})"


MAX_OPS = 10_000_000  # ops in one schedule: p = 64, m = 512 is 65,536; more would only fill memory


def check_sizes(p, m, v=1) -> tuple[int, int, int]:
    """p, m, v as positive integers, or a ValueError/TypeError naming the bad one."""
    p, m, v = (validation.positive_int("p", p), validation.positive_int("m", m),
               validation.positive_int("v", v))
    if 3 * p * m * v > MAX_OPS:  # at most three ops (F, B, W) per micro-batch and stage
        raise ValueError(f"p, m, v: expected at most {MAX_OPS:,} operations in a schedule, "
                         f"got p={p}, m={m}, v={v} ({3 * p * m * v:,} with F, B and W)")
    return p, m, v


def gpipe(p: int, m: int) -> Schedule:
    """Fill and drain: every forward of the mini-batch, then every backward, on each device."""
    p, m, _ = check_sizes(p, m)
    orders = tuple(tuple([Op("F", i, d) for i in range(m)] + [Op("B", i, d) for i in range(m)])
                   for d in range(p))
    return Schedule("gpipe", p, m, 1, orders)


def one_f_one_b_order(p: int, m: int, stage: int) -> list[Op]:
    """Device ``stage``'s 1F1B order: warm-up forwards, then F/B pairs, then the last backwards.

    min(p-1-stage, m) forwards fill the pipeline; from then on each forward is followed by the
    oldest backward, so at most min(p-stage, m) micro-batches hold activations at once.
    """
    p, m, _ = check_sizes(p, m)
    stage = validation.integer("stage", stage, minimum=0, maximum=p - 1)
    warm = min(p - 1 - stage, m)
    order = [Op("F", i, stage) for i in range(warm)]
    for j in range(m - warm):
        order += [Op("F", warm + j, stage), Op("B", j, stage)]
    return order + [Op("B", i, stage) for i in range(m - warm, m)]


def one_f_one_b(p: int, m: int) -> Schedule:
    """One forward, one backward (PipeDream-Flush): GPipe's makespan, far fewer activations."""
    p, m, _ = check_sizes(p, m)
    return Schedule("1f1b", p, m, 1, tuple(tuple(one_f_one_b_order(p, m, d)) for d in range(p)))


def interleaved(p: int, m: int, v: int) -> Schedule:
    """Interleaved 1F1B with v chunks per device; m must be a multiple of p.

    Device d runs its m·v forwards in groups of p micro-batches per chunk (chunk 0 for micro-
    batches 0…p-1, chunk 1 for the same ones, …), backwards in the mirror order, after
    2(p-1-d) + (v-1)p warm-up forwards. Bubble over ideal time: (p-1)/(v·m).
    """
    p, m, v = check_sizes(p, m, v)
    if m % p:
        raise ValueError(f"m: expected a multiple of p={p} for the interleaved schedule, got {m}")
    total = m * v

    def micro(k):
        return (k // (p * v)) * p + k % p

    orders = []
    for d in range(p):
        def fwd(k, d=d):
            return Op("F", micro(k), ((k // p) % v) * p + d)

        def bwd(k, d=d):
            return Op("B", micro(k), (v - 1 - (k // p) % v) * p + d)

        # v = 1 is plain 1F1B; with chunks, Megatron-LM's warm-up fills every chunk first.
        warm = min(p - 1 - d, m) if v == 1 else min(2 * (p - 1 - d) + (v - 1) * p, total)
        order = [fwd(k) for k in range(warm)]
        for j in range(total - warm):
            order += [fwd(warm + j), bwd(j)]
        orders.append(tuple(order + [bwd(k) for k in range(total - warm, total)]))
    return Schedule("interleaved", p, m, v, tuple(orders))


def zb_h1(p: int, m: int) -> Schedule:
    """Zero-bubble ZB-H1: 1F1B with B and W split; device d defers d of its W ops.

    Device d follows the 1F1B order of F and B; a W op follows each B, but the W of micro-batch
    j waits until d more backwards have run, so the chain of input gradients B that crosses the
    devices is never delayed by a weight gradient. The d W ops left at the end fill the time in
    which device d would otherwise wait for the drain. Activations: at most p per device.
    Makespan with durations T_F, T_B, T_W and m ≥ p: m(T_F+T_B+T_W) + (p-1)(T_F+T_B-T_W) when
    T_W ≤ min(T_F, T_B); in general (p-1)·max(T_F, T_B, T_F+T_B-T_W) is the bubble
    (``simulator.zb_h1_makespan``).
    """
    p, m, _ = check_sizes(p, m)
    orders = []
    for d in range(p):
        lag = min(d, m)
        order, done_b = [], 0
        for op in one_f_one_b_order(p, m, d):
            order.append(op)
            if op.kind == "B":
                done_b += 1
                if done_b > lag:
                    order.append(Op("W", done_b - 1 - lag, d))
        orders.append(tuple(order + [Op("W", j, d) for j in range(m - lag, m)]))
    return Schedule("zb-h1", p, m, 1, tuple(orders), split_backward=True)


def pipedream(p: int, m: int) -> Schedule:
    """Asynchronous PipeDream: the 1F1B order with no flush; an update after every backward."""
    s = one_f_one_b(p, m)
    return Schedule("pipedream", s.p, s.m, 1, s.orders)


def make(name: str, p: int, m: int, v: int = 1) -> Schedule:
    """A schedule by name (one of ``SCHEDULES``); v is used by 'interleaved' only."""
    if not isinstance(name, str) or name not in SCHEDULES:
        raise ValueError(f"name: expected a schedule, one of {', '.join(map(repr, SCHEDULES))}, "
                         f"got {name!r}")
    p, m, v = check_sizes(p, m, v)
    if name == "interleaved":
        return interleaved(p, m, v)
    return {"gpipe": gpipe, "1f1b": one_f_one_b, "zb-h1": zb_h1, "pipedream": pipedream}[name](p, m)


def from_orders(name: str, orders, *, p: int, m: int, v: int = 1, split_backward=False) -> Schedule:
    """A schedule from hand-written per-device orders of ('F'|'B'|'W', micro, stage) triples."""
    p, m, v = check_sizes(p, m, v)
    if len(orders) != p:
        raise ValueError(f"orders: expected one order per device ({p}), got {len(orders)}")
    built = []
    for d, order in enumerate(orders):
        ops = []
        for item in order:
            try:
                kind, micro, stage = item
            except (TypeError, ValueError):
                raise ValueError(
                    f"orders[{d}]: expected (kind, micro, stage) triples, got {item!r}") from None
            ops.append(Op(str(kind), int(micro), int(stage)))
        built.append(tuple(ops))
    return Schedule(name, p, m, v, tuple(built), bool(split_backward))


@dataclass(frozen=True)
class WeightVersions:
    """What asynchronous weight updates cost per stage: versions kept and gradient delay."""

    policy: str
    versions_kept: np.ndarray  # (p,) most weight versions a stage holds at once
    delay: np.ndarray  # (p,) largest number of updates between a gradient's weights and its use


def weight_versions(schedule: Schedule, *, update_every: int = 1) -> WeightVersions:
    """Walk each device's order with asynchronous updates and count stashed weight versions.

    ``update_every = 1``: PipeDream. Each backward B(i, s) applies its gradient at once; F(i, s)
    uses the newest weights and stashes them for its own backward (weight stashing). Stage s
    then keeps p-s versions and its gradients are p-1-s updates stale.
    ``update_every = k ≥ p``: PipeDream-2BW. Gradients of a batch of k micro-batches are summed
    and applied after the batch's last backward; micro-batches of batch b use version b-1 (the
    one before the newest), so every stage keeps two versions and the delay is 1.
    """
    if not isinstance(schedule, Schedule) or schedule.v != 1 or schedule.split_backward:
        raise ValueError(f"schedule: expected a 1F1B-style Schedule with v=1, got {schedule!r}")
    k = validation.positive_int("update_every", update_every)
    p = schedule.p
    if k > 1 and k < p:
        raise ValueError(f"update_every: expected 1 (PipeDream) or at least p={p} (2BW), got {k}")
    kept, delay = np.zeros(p, dtype=int), np.zeros(p, dtype=int)
    for d, order in enumerate(schedule.orders):
        updates, in_flight = 0, {}  # micro-batch -> version it was run with
        for op in order:
            if op.kind == "F":
                if k == 1:
                    version = updates
                else:
                    version = max(op.micro // k - 1, 0)
                    if version > updates:
                        raise ValueError(f"schedule: version {version} not yet made at {op!r}")
                in_flight[op.micro] = version
                kept[d] = max(kept[d], len(set(in_flight.values()) | {updates}))
            else:
                version = in_flight.pop(op.micro)
                if k == 1:
                    delay[d] = max(delay[d], updates - version)
                    updates += 1
                elif (op.micro + 1) % k == 0:  # last micro-batch of a batch: apply the sum
                    delay[d] = max(delay[d], updates - version)
                    updates += 1
    return WeightVersions("pipedream" if k == 1 else "2bw", kept, delay)
