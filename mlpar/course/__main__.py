"""Command line of the course tooling: ``python -m mlpar.course run|nav|student|grade|tag-grading``."""

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
    _grading_commands(sub)
    args = parser.parse_args(argv)

    if args.command == "grade":
        return _grade(args)
    if args.command == "tag-grading":
        from mlpar.course.grading.tagging import tag_notebooks
        from mlpar.course.lessons import lesson_paths

        stale = tag_notebooks(args.notebooks or lesson_paths(), write=not args.check)
        for path in stale:
            print(("stale: " if args.check else "tagged: ") + str(path))
        return 1 if (args.check and stale) else 0

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


def _grading_commands(sub) -> None:
    from mlpar.course.grading.report import FLAGS

    p = sub.add_parser(
        "grade", help="grade a class's notebooks into a CSV",
        description="Grade every notebook under SUBMISSIONS (one folder per student, or a flat LMS "
                    "export) against the official lessons; see docs/grading.md.",
        epilog="flags: " + "; ".join(f"{k}: {v}" for k, v in FLAGS.items()))
    p.add_argument("submissions", type=Path)
    p.add_argument("--out", type=Path, required=True, help="grades CSV, one row per exercise")
    p.add_argument("--summary", type=Path, help="one row per student (default: OUT's name + _summary)")
    p.add_argument("--feedback", type=Path, help="folder for one markdown file per student")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once here (default 1)")
    p.add_argument("--scheduler", help="address of an existing Dask scheduler to grade on")
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock seconds per notebook")
    p.add_argument("--memory", type=int, default=4096, help="address-space limit per notebook, MB")
    p.add_argument("--resume", action="store_true", help="skip files whose sha256 OUT already has")
    p.add_argument("--seed", type=int, help="the checks' seed (default: drawn for this run)")
    p.add_argument("--official", type=Path, help="instructor notebooks (default: the course's)")
    p_tag = sub.add_parser("tag-grading", help="tag the cells grading mode runs (idempotent)")
    p_tag.add_argument("notebooks", nargs="*", type=Path)
    p_tag.add_argument("--check", action="store_true", help="only report notebooks out of date")


def _grade(args) -> int:
    from mlpar.course.grading.grade import GraderError, Options, grade
    from mlpar.course.grading.sandbox import SandboxUnavailable

    if args.timeout <= 0 or args.memory < 256 or args.jobs < 1:
        print("refused: --timeout must be > 0, --memory at least 256 (MB), --jobs at least 1",
              file=sys.stderr)
        return 2
    options = Options(timeout=args.timeout, memory_mb=args.memory)
    if args.seed is not None:
        options.seed = args.seed
    summary = args.summary or args.out.with_name(args.out.stem + "_summary.csv")
    import signal

    def terminated(signum, frame):  # a job scheduler, `timeout` or a closed terminal: stop as Ctrl-C does
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    # Ctrl-C stops grading whatever this process inherited: a parent that ignores SIGINT (a
    # shell's background job, a test runner) would otherwise pass SIG_IGN down, and Python then
    # never raises KeyboardInterrupt. A signal mask is inherited across exec too: a grader
    # started by a thread that had both signals blocked would never see them. Both are undone
    # here and put back after.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = (signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
            if hasattr(signal, "pthread_sigmask") else None)
    import faulthandler

    dump = hasattr(signal, "SIGUSR1")  # POSIX: `kill -USR1 <pid>` prints to the grader's stderr
    try:  # where every thread of a grader that seems stuck is (needs a real file descriptor)
        if dump:
            faulthandler.register(signal.SIGUSR1, file=sys.stderr.fileno(), all_threads=True)
    except (AttributeError, OSError, ValueError):  # stderr captured in memory: no stack dumps
        dump = False
    try:
        grade(args.submissions, args.out, official=args.official, jobs=args.jobs,
              scheduler=args.scheduler, options=options, resume=args.resume, summary=summary,
              feedback=args.feedback)
    except (GraderError, SandboxUnavailable) as exc:
        print(f"grader could not run: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: the rows graded so far are in {args.out}; run the same command with "
              "--resume to go on", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if dump:
            faulthandler.unregister(signal.SIGUSR1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
