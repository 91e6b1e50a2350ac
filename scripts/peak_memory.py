"""Peak memory of each lesson, for Binder's ~2 GB: the kernel plus every process it starts.

    python scripts/peak_memory.py                          # every lesson
    python scripts/peak_memory.py notebooks/05_mapreduce.ipynb --json memory.json

Each notebook runs top to bottom in a fresh kernel (as ``make notebooks`` does, without saving)
while a thread samples, every 0.1 s, the kernel and all its descendants (joblib/loky workers,
Dask scheduler and workers): the sum of their RSS (what ``top`` shows; shared pages counted once
per process, so an upper bound) and of their PSS (shared pages split between the processes
that share them: the closest figure to what a container's memory limit charges). Reports the
peak of each sum. Needs psutil (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MB = 700  # per lesson, so that two or three open kernels fit in Binder's 2 GB


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def sample(procs: list[psutil.Process]) -> tuple[float, float]:
    rss = pss = 0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
    return rss / 2**20, pss / 2**20


def peak_memory(path: Path, timeout: int = 300, interval: float = 0.1) -> dict:
    """Run one notebook; return its peak RSS and PSS sums in MiB and the seconds it took."""
    from mlpar.course.lessons import read_notebook
    from mlpar.course.run import client_for

    nb = read_notebook(path)
    client = client_for(nb, path, timeout)
    peak = {"rss": 0.0, "pss": 0.0, "processes": 0}
    done = threading.Event()

    def watch():
        while not done.is_set():
            km = getattr(client, "km", None)
            pid = getattr(getattr(km, "provisioner", None), "pid", None) if km else None
            if pid:
                procs = tree(pid)
                rss, pss = sample(procs)
                peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
                peak["processes"] = max(peak["processes"], len(procs))
            done.wait(interval)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.perf_counter()
    try:
        client.execute()
    finally:
        done.set()
        watcher.join()
    return {"notebook": path.name, "peak RSS MiB": round(peak["rss"]), "peak PSS MiB": round(peak["pss"]),
            "most processes": peak["processes"], "seconds": round(time.perf_counter() - start, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    rows = []
    for path in paths:
        row = peak_memory(path)
        row["under limit"] = row["peak PSS MiB"] < LIMIT_MB
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    over = [row["notebook"] for row in rows if not row["under limit"]]
    print(f"over {LIMIT_MB} MiB (PSS): {over or 'none'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
