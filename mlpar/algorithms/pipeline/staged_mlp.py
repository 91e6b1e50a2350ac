"""A numpy MLP cut into p stages, one real process per stage, run in a pipeline schedule's order.

Each stage process holds its layers and runs its device's order from a ``Schedule``: for F(i)
it waits for micro-batch i's activations from the stage before (stage 0 has the inputs), runs
its layers and sends the result to the next stage; for B(i) it waits for the gradient from the
stage after (the last stage starts from the loss), back-propagates through its layers,
accumulates its weight gradients and sends the input gradient back. Messages go straight from
stage to stage (``multiprocessing`` queues, one inbox per stage); nobody coordinates the
stages, so the timeline that comes out is what the dependencies and the orders allow.

The model: ``widths`` = (d_0, …, d_L), layer l maps d_l → d_{l+1} with tanh, the last layer
linear; loss = (1/2N) Σ_n ‖f(x_n) − y_n‖². Micro-batch i has N/m rows and its loss is its own
mean, scaled by 1/m, so the accumulated gradients equal the full-batch gradient
(``full_gradient``); without the 1/m they are m times too large.

    >>> with StagedPipeline(params, p=2) as pipe:
    ...     run = pipe.run(X, Y, schedules.one_f_one_b(2, 8))
    ...     link = pipe.calibrate_link()            # α, β of these queues (a CostModel)
    >>> predicted = predict(run, link)               # the simulator from measured durations
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mlpar.algorithms.pipeline import simulator
from mlpar.algorithms.pipeline.schedules import Schedule
from mlpar.cluster import cost_model
from mlpar.core import limits, validation


def init_mlp(widths, *, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Weights W_l (d_l, d_{l+1}) ~ N(0, 1/d_l) and biases b_l (d_{l+1},) ~ N(0, 0.01)."""
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths: expected a list of layer sizes, got {type(widths).__name__}")
    widths = [validation.positive_int("widths", w, maximum=1 << 14) for w in widths]
    if len(widths) < 2:
        raise ValueError(f"widths: expected at least two sizes (input, output), got {widths}")
    rng = np.random.default_rng(validation.seed("seed", seed))
    return [(rng.standard_normal((a, b)) / np.sqrt(a), 0.1 * rng.standard_normal(b))
            for a, b in zip(widths[:-1], widths[1:], strict=True)]


def demo_problem(width: int = 512, n_layers: int = 4, rows: int = 1024, *, seed: int = 0):
    """An MLP of ``n_layers`` square layers and a random regression batch: (params, X, Y)."""
    width, rows = validation.positive_int("width", width), validation.positive_int("rows", rows)
    n_layers = validation.positive_int("n_layers", n_layers)
    limits.elements("width, n_layers, rows", width * (width * n_layers + 2 * rows))
    params = init_mlp([width] * (n_layers + 1), seed=seed)
    rng = np.random.default_rng(seed + 1)
    return params, rng.standard_normal((rows, width)), rng.standard_normal((rows, width))


def split_layers(n_layers: int, p: int, v: int = 1) -> list[range]:
    """The layers of each of the p·v stages: equal consecutive blocks."""
    n_layers = validation.positive_int("n_layers", n_layers)
    p, v = validation.positive_int("p", p), validation.positive_int("v", v)
    if n_layers % (p * v):
        raise ValueError(f"v: expected p·v = {p}·{v} to divide the {n_layers} layers, got v={v}")
    size = n_layers // (p * v)
    return [range(s * size, (s + 1) * size) for s in range(p * v)]


class Stage:
    """Some consecutive layers: forward stashes what backward needs; backward accumulates."""

    def __init__(self, layers, final_linear: bool):
        self.layers = [(np.asarray(W, dtype=float), np.asarray(b, dtype=float)) for W, b in layers]
        self.final_linear = final_linear  # the model's last layer has no tanh
        self.grads = [(np.zeros_like(W), np.zeros_like(b)) for W, b in self.layers]
        self.stash: dict[int, list[np.ndarray]] = {}

    def forward(self, micro: int, x: np.ndarray) -> np.ndarray:
        outputs = [x]
        for k, (W, b) in enumerate(self.layers):
            z = outputs[-1] @ W + b
            outputs.append(z if self.final_linear and k == len(self.layers) - 1 else np.tanh(z))
        self.stash[micro] = outputs
        return outputs[-1]

    def backward(self, micro: int, g: np.ndarray) -> np.ndarray:
        outputs = self.stash.pop(micro)
        for k in range(len(self.layers) - 1, -1, -1):
            if not (self.final_linear and k == len(self.layers) - 1):
                g = g * (1.0 - outputs[k + 1] ** 2)  # tanh' = 1 - tanh²
            dW, db = self.grads[k]
            dW += outputs[k].T @ g
            db += g.sum(axis=0)
            g = g @ self.layers[k][0].T
        return g


def full_gradient(params, X: np.ndarray, Y: np.ndarray):
    """Loss and gradients of the unsplit model on the whole batch (the reference)."""
    if not isinstance(params, (list, tuple)) or not params or not all(
            isinstance(layer, (list, tuple)) and len(layer) == 2 for layer in params):
        raise TypeError(f"params: expected a list of (W, b) pairs (init_mlp), got "
                        f"{validation.describe(params)}")
    width_in, width_out = np.shape(params[0][0])[0], np.shape(params[-1][0])[-1]
    X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
    Y = validation.array("Y", Y, ndim=2, dtype=np.float64, min_size=1)
    validation.same_length("X", X, "Y", Y)
    validation.finite_data("X", X)
    validation.finite_data("Y", Y)
    if X.shape[1] != width_in or Y.shape[1] != width_out:
        raise ValueError(f"X, Y: expected {width_in} and {width_out} columns to match params, "
                         f"got {X.shape[1]} and {Y.shape[1]}")
    stage = Stage(params, final_linear=True)
    out = stage.forward(0, X)
    loss = 0.5 * float(np.sum((out - Y) ** 2)) / len(X)
    stage.backward(0, (out - Y) / len(X))
    return loss, stage.grads


# -- the stage processes ----------------------------------------------------------------------


def _stage_main(index: int, commands, inboxes, results) -> None:
    """Runs in stage process ``index``: obey its commands until 'stop'.

    Commands and the neighbours' messages come on separate queues: stage 0 may start a run and
    send its first activation before the coordinator has told stage 1 to run, and a shared
    queue would hand stage 1 that activation in place of its command.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # one core per stage, as on one device
        inbox, waiting = inboxes[index], {}

        def receive(kind, micro):
            while (kind, micro) not in waiting:  # messages may arrive in another order
                what, i, payload = inbox.get()
                waiting[(what, i)] = payload
            return waiting.pop((kind, micro))

        while True:
            command = commands[index].get()
            if command[0] == "stop":
                return
            if command[0] == "call":
                results.put(("reply", index, command[1](*command[2])))
                continue
            _, layers, final, order, inputs, targets, scale = command
            stage, last = Stage(layers, final), index == len(inboxes) - 1
            outputs, loss, log = {}, 0.0, []
            for kind, micro, _ in order:
                if kind == "F":
                    x = inputs[micro] if index == 0 else receive("act", micro)
                    t0 = time.perf_counter()
                    out = stage.forward(micro, x)
                    t1 = time.perf_counter()
                    if last:
                        outputs[micro] = out
                    else:
                        inboxes[index + 1].put(("act", micro, out))
                else:
                    if last:
                        out, y = outputs.pop(micro), targets[micro]
                        loss += scale * 0.5 * float(np.sum((out - y) ** 2)) / len(y)
                        g = scale * (out - y) / len(y)
                    else:
                        g = receive("grad", micro)
                    t0 = time.perf_counter()
                    g = stage.backward(micro, g)
                    t1 = time.perf_counter()
                    if index > 0:
                        inboxes[index - 1].put(("grad", micro, g))
                log.append((t0, t1))
            results.put(("done", index, stage.grads, loss, log))


@dataclass(frozen=True, repr=False, eq=False)
class StagedRun:
    """One real pipelined gradient: accumulated gradients, loss, measured timeline."""

    gradients: list
    loss: float
    timeline: simulator.Timeline
    message_bytes: int

    def stage_durations(self) -> tuple[np.ndarray, np.ndarray]:
        """Median measured F and B time of each stage (seconds)."""
        t = self.timeline
        p = t.schedule.p
        kinds = np.array([op.kind for op in t.ops])
        took = t.end - t.start
        return tuple(np.array([np.median(took[(t.device == d) & (kinds == k)]) for d in range(p)])
                     for k in ("F", "B"))

    def __repr__(self) -> str:
        s = self.timeline.schedule
        return (f"StagedRun({s.name}, p={s.p}, m={s.m}: measured makespan "
                f"{self.timeline.makespan * 1e3:.1f} ms)")


def predict(run: StagedRun, link: cost_model.CostModel | None) -> simulator.Timeline:
    """The simulator's timeline for the same schedule from the measured stage durations."""
    if not isinstance(run, StagedRun):
        raise TypeError(f"run: expected a StagedRun (StagedPipeline.run), got {type(run).__name__}")
    if link is not None and not isinstance(link, cost_model.CostModel):
        raise TypeError(f"link: expected a CostModel or None, got {type(link).__name__}")
    t_f, t_b = run.stage_durations()
    return simulator.simulate(run.timeline.schedule, t_f=t_f, t_b=t_b, link=link,
                              message_bytes=run.message_bytes)


class _EchoLink:
    """Enough of an engine for ``cost_model.measure_messages``: tasks run on a stage process."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.n_workers = pipe.p

    def put(self, worker, value):
        return value

    def submit(self, worker, func, *args):
        self.pipe._commands[worker].put(("call", func, args))
        return worker

    def gather(self, tasks):
        return [self.pipe._get()[2] for _ in tasks]


class StagedPipeline:
    """p stage processes (spawned, one BLAS thread each), started once, closed on exit."""

    def __init__(self, params, p: int, *, timeout: float = 120.0):
        self.params = list(params)
        self.p = validation.positive_int("p", p)
        self.blocks = split_layers(len(self.params), self.p)
        self.timeout = validation.positive("timeout", timeout)
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._commands = [ctx.Queue() for _ in range(self.p)]
        self._inboxes = [ctx.Queue() for _ in range(self.p)]
        self._results = ctx.Queue()
        self._procs = [ctx.Process(target=_stage_main,
                                   args=(i, self._commands, self._inboxes, self._results),
                                   daemon=True) for i in range(self.p)]
        for proc in self._procs:
            proc.start()
        try:
            self._call_all(_ready)
        except BaseException:
            self.close()
            raise

    def _get(self):
        """The next reply from any stage; an error, not a hang, if a stage process died."""
        import queue

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._results.get(timeout=0.2)
            except queue.Empty:
                dead = [i for i, proc in enumerate(self._procs) if not proc.is_alive()]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"stage process(es) {dead} stopped, or no reply within "
                                       f"{self.timeout:g} s") from None

    def _call_all(self, func, *args):
        for q in self._commands:
            q.put(("call", func, args))
        return [self._get() for _ in self._commands]

    def run(self, X: np.ndarray, Y: np.ndarray, schedule: Schedule, *, scale: bool = True) -> StagedRun:
        """Accumulated gradients of one mini-batch, pipelined over m = schedule.m micro-batches."""
        X = validation.array("X", X, ndim=2, dtype=np.float64, min_size=1)
        Y = validation.array("Y", Y, ndim=2, dtype=np.float64, min_size=1)
        validation.same_length("X", X, "Y", Y)
        validation.finite_data("X", X)  # before any stage is sent work
        validation.finite_data("Y", Y)
        if not isinstance(schedule, Schedule) or schedule.p != self.p or schedule.v != 1:
            raise ValueError(f"schedule: expected a Schedule with p={self.p} and v=1, got {schedule!r}")
        simulator.check_ops(schedule)
        if schedule.split_backward:
            raise ValueError(f"schedule: expected F and B ops only, got {schedule.name} with W ops")
        m = schedule.m
        if len(X) % m:
            raise ValueError(f"schedule: expected m to divide the {len(X)} rows, got m={m}")
        xs, ys = np.split(X, m), np.split(Y, m)
        factor = 1.0 / m if scale else 1.0
        for d, q in enumerate(self._commands):
            layers = [self.params[k] for k in self.blocks[d]]
            q.put(("run", layers, d == self.p - 1, [tuple(op) for op in schedule.orders[d]],
                   xs if d == 0 else None, ys if d == self.p - 1 else None, factor))
        done = sorted((self._get() for _ in range(self.p)),
                      key=lambda r: r[1])
        grads = [g for r in done for g in r[2]]
        ops, device, start, end = [], [], [], []
        for d, r in enumerate(done):
            for op, (t0, t1) in zip(schedule.orders[d], r[4], strict=True):
                ops.append(op)
                device.append(d)
                start.append(t0)
                end.append(t1)
        t0 = min(start)
        peaks = simulator.activation_peaks(schedule, np.zeros(self.p))[0]
        nbytes = xs[0].shape[0] * self.params[self.blocks[0][-1]][0].shape[1] * 8
        timeline = simulator.Timeline(schedule, tuple(ops), np.array(device),
                                      np.array(start) - t0, np.array(end) - t0, peaks,
                                      np.zeros(self.p), label="measured")
        return StagedRun(grads, sum(r[3] for r in done), timeline, int(nbytes))

    def calibrate_link(self, *, repeat: int = 7) -> cost_model.CostModel:
        """α and β of a message between processes here, by the course's round-trip method."""
        alpha, beta = cost_model.measure_messages(_EchoLink(self), repeat=repeat)
        return cost_model.CostModel(alpha=alpha, beta=beta)

    def close(self) -> None:
        for proc, q in zip(self._procs, self._commands, strict=True):
            if proc.is_alive():
                q.put(("stop",))
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        # The processes are gone; a message nobody will read (a stage that died mid-run) must
        # not keep this process waiting to flush it, so the queues are closed without joining.
        for q in [*self._commands, *self._inboxes, self._results]:
            q.cancel_join_thread()
            q.close()
        # Drop every reference, so that the queues' named semaphores are unlinked now rather
        # than at interpreter exit (a notebook kernel that is killed never gets there).
        self._procs, self._commands, self._inboxes, self._results = [], [], [], None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _ready():
    return True
