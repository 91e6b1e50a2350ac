"""Benchmarks: print measured figures, from one run, for one family or all of them.

    python -m mlpar.bench elementwise
    python -m mlpar.bench all --json build/bench.json

A family is a module ``mlpar/benchmarks/<family>.py`` with ``run(quick=False) -> dict`` and
``report(figures) -> str``. Benchmarks measure; they do not assert. Targets are printed next to
the figures so a reader can see which ones this machine meets. A family may also define
``failed(figures) -> bool``; the command then exits with 1 when it returns True (``claims``
does this, so a script can tell that a lesson's claim did not hold here).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path

from mlpar import benchmarks


def families() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlpar.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", choices=families() + ["all"])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = parser.parse_args(argv)
    names = families() if args.family == "all" else [args.family]
    results = {}
    status = 0
    for name in names:
        module = importlib.import_module(f"{benchmarks.__name__}.{name}")
        figures = module.run(quick=args.quick)
        results[name] = figures
        print(f"== {name} ==")
        print(module.report(figures), flush=True)
        if getattr(module, "failed", None) and module.failed(figures):
            status = 1
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=float) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
