"""Run the distributed lessons under strict nbval against a Dask cluster mlpar did not start.

Starts ``dask scheduler`` and ``dask worker`` programs on 127.0.0.1 (see
``mlpar.cluster.dask_cluster.command_line_cluster``), sets ``MLPAR_DASK_SCHEDULER`` to the
scheduler's address, and runs pytest (strict nbval, as ``make test``) on the notebooks; the
scheduler and workers are stopped afterwards, whatever the result. The stored outputs must
pass both with and without the cluster: that is what this checks.

    .venv/bin/python scripts/cluster_notebooks.py            # lessons 03, 05, 06, 07
    .venv/bin/python scripts/cluster_notebooks.py notebooks/05_mapreduce.ipynb

To use a cluster of your own instead, set the variable yourself and run pytest:
``MLPAR_DASK_SCHEDULER=tcp://host:8786 .venv/bin/python -m pytest notebooks/05_mapreduce.ipynb``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from mlpar.cluster.dask_cluster import SCHEDULER_VARIABLE, command_line_cluster

REPO = Path(__file__).resolve().parents[1]
LESSONS = ["03_model_selection", "05_mapreduce", "06_parameter_server", "07_gossip"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*",
                        default=[f"notebooks/{name}.ipynb" for name in LESSONS])
    parser.add_argument("--workers", type=int, default=2,
                        help="dask worker programs to start (default 2, as the lessons' own)")
    args = parser.parse_args(argv)
    with command_line_cluster(args.workers) as address:
        print(f"{SCHEDULER_VARIABLE}={address} ({args.workers} workers)", flush=True)
        env = dict(os.environ, **{SCHEDULER_VARIABLE: address})
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.notebooks]
        return subprocess.call(command, cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main())
