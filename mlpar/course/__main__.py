"""Command line of the course tooling: ``python -m mlpar.course run|nav|student``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlpar.course import student_edition
from mlpar.course.lessons import ROOT, navigate
from mlpar.course.run import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlpar.course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="re-execute notebooks in place")
    p_run.add_argument("notebooks", nargs="+", type=Path)
    p_run.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    p_nav = sub.add_parser("nav", help="regenerate index, navigation and Colab cells")
    p_nav.add_argument("--check", action="store_true", help="only report stale files")
    p_student = sub.add_parser("student", help="build the student edition (make student: into student/)")
    p_student.add_argument("outdir", type=Path)
    p_student.add_argument("--check", action="store_true", help="only report files that are out of date")
    args = parser.parse_args(argv)

    if args.command == "run":
        for path in args.notebooks:
            print(f"{path}: {run(path, args.timeout):.1f} s", flush=True)
        return 0
    if args.command == "nav":
        stale = navigate(write=not args.check)
        for path in stale:
            print(("stale: " if args.check else "updated: ") + str(path.relative_to(ROOT)))
        return 1 if (args.check and stale) else 0
    if args.check:
        out_of_date = student_edition.stale(args.outdir)
        for name in out_of_date:
            print(f"stale: {args.outdir / name}")
        return 1 if out_of_date else 0
    try:
        written = student_edition.build(args.outdir)
    except ValueError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
