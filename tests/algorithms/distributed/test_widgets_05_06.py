"""Lessons 05 and 06's widgets, moved through every option their text suggests (issue 31 §4).

Each notebook's own ``explore`` is taken from its cell (without the ``interact`` decorator) and
called in this process at the ends of every slider, with the figures the lesson computes before
it stood in by small fixed ones (the calibrated model of lesson 05 is a measured one; any model
will do for what the widget must show).
"""

import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NOTEBOOKS = Path(__file__).parents[3] / "notebooks"


def _widget(notebook, namespace):
    cells = [c for c in json.loads((NOTEBOOKS / notebook).read_text())["cells"]
             if c["cell_type"] == "code"]
    for cell in cells:
        source = "".join(cell["source"])
        if source.startswith("import inspect"):  # the lesson's imports and SEED
            exec(compile(source, "imports", "exec"), namespace)
    for cell in cells:
        source = "".join(cell["source"])
        if "def explore(" in source:
            body = source[source.index("def explore("):]  # without the @interact(...) decorator
            exec(compile(body, "explore", "exec"), namespace)
            shown = []
            namespace["plt"].show = lambda shown=shown: shown.append(plt.gcf())
            return namespace["explore"], shown
    raise AssertionError(f"{notebook}: no cell defines explore")


@pytest.fixture(scope="module")
def explore05():
    from mlpar.algorithms.distributed import house_prices
    from mlpar.cluster.cost_model import CostModel

    X_big, y_big = house_prices.load(20_000)
    cluster = CostModel(alpha=1.5e-4, latency=4e-5, beta=3e-9, per_sample=6e-7, seed=0)
    return _widget("05_mapreduce.ipynb", {"X_big": X_big, "y_big": y_big, "cluster": cluster})


def _numbers(text):
    return [float(v) for v in re.findall(r"([\d.]+) ms per iteration", text)]


@pytest.mark.parametrize("n_workers", [1, 16, 256])
@pytest.mark.parametrize("slowdown", [1.0, 10.0])
@pytest.mark.parametrize("message_bytes", [10.0, 1e8])
def test_05_every_end_of_every_slider(explore05, capsys, n_workers, slowdown, message_bytes):
    func, shown = explore05
    func(n_workers=n_workers, slowdown=slowdown, message_bytes=message_bytes)
    out = capsys.readouterr().out
    assert "ms per iteration (simulated)" in out and "Breakdown(" in out and shown
    plt.close("all")


def test_05_the_parts_the_text_names_grow_where_it_says(explore05, capsys):
    func, _ = explore05

    def shares(**options):
        func(**options)
        out = capsys.readouterr().out
        plt.close("all")
        found = dict(re.findall(r"(compute|communication|waiting) ([\d.]+)%", out))
        return {k: float(v) for k, v in found.items()}, _numbers(out)[0]

    few, _ = shares(n_workers=4, slowdown=1.0, message_bytes=48)
    many, _ = shares(n_workers=256, slowdown=1.0, message_bytes=48)
    assert many["waiting"] + many["communication"] > few["waiting"] + few["communication"]
    _, plain = shares(n_workers=16, slowdown=1.0, message_bytes=48)
    _, slow = shares(n_workers=16, slowdown=10.0, message_bytes=48)
    assert slow > plain  # the straggler slows the round
    _, small = shares(n_workers=16, slowdown=1.0, message_bytes=10)
    _, big = shares(n_workers=16, slowdown=1.0, message_bytes=1e8)
    assert big > 10 * small  # a bigger model's messages dominate


@pytest.fixture(scope="module")
def explore06():
    from mlpar.algorithms.distributed import house_prices, least_squares
    from mlpar.cluster.cost_model import CostModel

    X, y = house_prices.load()
    optimum = least_squares.loss(X, y, np.linalg.lstsq(X, y, rcond=None)[0])
    namespace = {
        "X": X, "y": y, "optimum": optimum, "target": 1.05 * optimum,
        "cluster": CostModel(alpha=20e-6, beta=1e-9, per_sample=5e-6, jitter=1.0, seed=0),
        "common": dict(n_workers=8, n_updates=1200, lr=0.05, batch_size=32, seed=0),
    }

    def time_to(run, target):
        hit = np.flatnonzero(run.losses <= target)
        return run.times[hit[0]] if hit.size else np.inf

    namespace["time_to"] = time_to
    return _widget("06_parameter_server.ipynb", namespace)


@pytest.mark.parametrize("s", [0, 10])
@pytest.mark.parametrize("slowdown", [1.0, 8.0])
@pytest.mark.parametrize("lr", [0.01, 0.05, 1.0])
def test_06_every_end_of_every_slider(explore06, capsys, s, slowdown, lr):
    func, shown = explore06
    before = len(shown)
    func(s=s, slowdown=slowdown, lr=lr)
    out = capsys.readouterr().out
    if lr >= 1.0:
        # the text: too large a step diverges; the widget says which schedule did, and why
        assert "diverged" in out and "lr" in out
    else:
        assert len(shown) == before + 1
        assert out.count("ms for 600 updates") == 3 and f"ssp, s={s}" in out
        assert "max staleness" in out
        staleness = int(re.search(rf"ssp, s={s} .*max staleness (\d+)", out).group(1))
        assert staleness <= s  # the histogram the text points to stays within the bound
    plt.close("all")


def test_06_a_persistent_straggler_slows_sync_and_not_async(explore06, capsys):
    func, _ = explore06
    times = {}
    for slowdown in (1.0, 8.0):
        func(s=2, slowdown=slowdown, lr=0.05)
        out = capsys.readouterr().out
        times[slowdown] = {m: float(v) for m, v in
                           re.findall(r"^(sync|async)\s+([\d.]+) ms for 600", out, re.M)}
        plt.close("all")
    assert times[8.0]["sync"] > 2 * times[1.0]["sync"]
    assert times[8.0]["async"] < 1.5 * times[1.0]["async"]
