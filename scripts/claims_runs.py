"""Run every lesson's claims several times in a row and tabulate how steady each verdict is.

    python scripts/claims_runs.py                 # five runs, print the Markdown table
    python scripts/claims_runs.py --runs 3 --write docs/testing.md

Each run is ``python -m mlpar.bench claims --json`` in a fresh interpreter, one after the other,
so a run starts with cold caches and no pool left by the previous one, as a student's would.
The table gives, per claim, the value of each run, the spread (largest minus smallest, as a
share of the median) and whether all runs gave the same verdict. ``--write FILE`` replaces the
text between ``<!-- mlpar:claims-runs -->`` and ``<!-- /mlpar:claims-runs -->`` in FILE.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

START, END = "<!-- mlpar:claims-runs -->", "<!-- /mlpar:claims-runs -->"


def one_run() -> dict:
    with tempfile.TemporaryDirectory(prefix="mlpar-claims-") as folder:
        out = Path(folder) / "claims.json"
        load = os.getloadavg()[0]
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mlpar.bench", "claims", "--json", str(out)],
                       stdout=subprocess.DEVNULL, check=False)
        figures = json.loads(out.read_text())["claims"]
    return {"claims": figures["claims"], "seconds": time.perf_counter() - started,
            "load": load}


def verdict(claim: dict) -> str:
    from mlpar.core.claims import UNDECIDED

    if claim["held"] is None:
        return "undecided" if (claim.get("not_applicable") or "").startswith(UNDECIDED) else "n/a"
    return "✓" if claim["held"] else "✗"


def table(runs: list[dict]) -> str:
    from mlpar.core import environment

    rows = []
    for i, first in enumerate(runs[0]["claims"]):
        same = [r["claims"][i] for r in runs]
        values = [c["value"] for c in same if c["value"] is not None and math.isfinite(c["value"])]
        verdicts = [verdict(c) for c in same]
        median = statistics.median(values) if values else math.nan
        spread = (max(values) - min(values)) / abs(median) if values and median else math.nan
        cells = " · ".join(f"{v:.3g}" for v in values) if values else "–"
        steady = "yes" if len(set(verdicts)) == 1 else "**no**"
        rows.append(f"| {first['lesson']} | {first['statement']} | {first['comparison']} "
                    f"{first['threshold']:g}{first['unit']} | {cells} | "
                    f"{'–' if math.isnan(spread) else f'{spread:.0%}'} | {' '.join(verdicts)} | "
                    f"{steady} |")
    cpu = platform.processor() or platform.machine()
    loads = ", ".join(f"{r['load']:.1f}" for r in runs)
    seconds = ", ".join(f"{r['seconds']:.0f}" for r in runs)
    head = (f"{len(runs)} runs of `python -m mlpar.bench claims` in a row on {date.today()}, "
            f"{environment.usable_cores()} usable cores ({cpu}), "
            f"load average at each start: {loads}; {seconds} s per run. Spread: "
            "(largest − smallest) / median over the runs.\n\n"
            "| lesson | claim (as the first run printed it) | needs | value in each run | spread | "
            "verdicts | same in all |\n"
            "|---|---|---|---|---|---|---|")
    return head + "\n" + "\n".join(rows)


def write(path: Path, text: str) -> None:
    page = path.read_text(encoding="utf-8")
    if START not in page or END not in page:
        raise ValueError(f"{path}: expected the markers {START} and {END}")
    before, rest = page.split(START, 1)
    _, after = rest.split(END, 1)
    path.write_text(f"{before}{START}\n{text}\n{END}{after}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="how many runs (default 5)")
    parser.add_argument("--write", type=Path, help="replace the marked table in this file")
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 50:
        parser.error(f"--runs: expected 1 to 50, got {args.runs}")
    runs = []
    for i in range(args.runs):
        runs.append(one_run())
        print(f"run {i + 1}: {runs[-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    text = table(runs)
    print(text)
    if args.write:
        write(args.write, text)
    unsteady = any(len({verdict(r["claims"][i]) for r in runs}) > 1
                   for i in range(len(runs[0]["claims"])))
    broken = any(c["held"] is False for r in runs for c in r["claims"])
    return 1 if unsteady or broken else 0


if __name__ == "__main__":
    sys.exit(main())
