"""Lessons 05 and 06's calibrated α–β model on two Dask clusters: the LocalCluster the lessons
start, and a cluster mlpar did not start (reached by address only).

    python -m mlpar.bench cluster
    MLPAR_DASK_SCHEDULER=tcp://scheduler:8786 python -m mlpar.bench cluster   # your cluster

For each cluster: the MapReduce round of lesson 05 (``claims.l05_mapreduce.predict_on``) and
the asynchronous parameter server of lesson 06 (``claims.l06_parameter_server.predict_dask``),
each calibrated on that cluster and then measured on it, as the lessons do. The "external"
cluster is the one ``MLPAR_DASK_SCHEDULER`` names or, when it is unset, ``dask scheduler``
and two ``dask worker`` programs started here on 127.0.0.1
(``dask_cluster.command_line_cluster``). The goal is measured/predicted within 1.3× either way;
the figures are this machine's, at this load.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from mlpar.claims import l05_mapreduce, l06_parameter_server
from mlpar.cluster import dask_cluster
from mlpar.cluster.engines import DaskEngine
from mlpar.core import environment, validation

TARGET_RATIO = l05_mapreduce.MODEL_TOLERANCE


@contextmanager
def _without_scheduler_variable():
    """The lessons' own LocalCluster, even where MLPAR_DASK_SCHEDULER points elsewhere."""
    saved = os.environ.pop(dask_cluster.SCHEDULER_VARIABLE, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[dask_cluster.SCHEDULER_VARIABLE] = saved


def _measure(engine, quick: bool) -> list[dict]:
    rows = []
    for lesson, prediction in (
        ("05 MapReduce round", l05_mapreduce.predict_on(engine, quick)),
        ("06 async parameter server", l06_parameter_server.predict_dask(quick, engine=engine)),
    ):
        rows.append({"lesson": lesson, "per": prediction.per, "measured_s": prediction.measured,
                     "predicted_s": prediction.predicted, "ratio": prediction.ratio})
    return rows


def run(quick: bool = False) -> dict:
    quick = validation.flag("quick", quick)
    load_before = os.getloadavg()[0]  # other programs on the machine move these timings
    with _without_scheduler_variable(), DaskEngine(2) as engine:
        local = _measure(engine.start(), quick)
    address = os.environ.get(dask_cluster.SCHEDULER_VARIABLE)
    if address:
        where = f"the cluster at {address} ({dask_cluster.SCHEDULER_VARIABLE})"
        with DaskEngine(2, address) as engine:
            external = _measure(engine.start(), quick)
    else:
        where = "dask scheduler + 2 dask worker programs started here on 127.0.0.1"
        with dask_cluster.command_line_cluster(2) as started, DaskEngine(2, started) as engine:
            external = _measure(engine.start(), quick)
    return {"clusters": {"LocalCluster (started by the lesson)": local, where: external},
            "load_average": [load_before, os.getloadavg()[0]],
            "cores": environment.usable_cores()}


def report(figures: dict) -> str:
    lines = [f"{'cluster / lesson':<44}{'measured':>11}{'predicted':>12}{'ratio':>7}"
             f"  within {TARGET_RATIO:g}×"]
    for cluster, rows in figures["clusters"].items():
        lines.append(cluster)
        for r in rows:
            ok = 1 / TARGET_RATIO <= r["ratio"] <= TARGET_RATIO
            lines.append(f"  {r['lesson']:<42}{r['measured_s'] * 1e3:>8.3g} ms"
                         f"{r['predicted_s'] * 1e3:>9.3g} ms{r['ratio']:>7.2f}  "
                         f"{'yes' if ok else 'NO'}   (per {r['per']})")
    before, after = figures["load_average"]
    lines.append(f"load average {before:.1f} → {after:.1f} on {figures['cores']} usable cores "
                 f"(the model gives each worker and the server a core of its own)")
    return "\n".join(lines)
