"""The README and the pages in docs/ are tested like code: a reader copies their commands.

Every fenced ``bash`` and ``console`` block is read as a reader would run it (in a console
block, the lines after ``$ `` are commands and the rest is their output). Commands that are
quick and change nothing outside a scratch folder (``--help``, ``--list``, ``mkdir``/``cp``/
``cat`` of new paths, and the README's grading example) are run, in order, in a scratch folder
that sees the clone's top-level files; their shown output must match, timings and seed aside.
Every other command (installs, servers, long runs) must parse with ``bash -n`` and name files,
``make`` targets and variables, modules, subcommands and options that exist (a ``powershell``
block is not parsed, but the files it names must exist). Every relative
link, and the ``#anchor`` in one, must resolve. The last tests feed the checker broken pages,
so that it is known to fail.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [*PAGES, ROOT / "CONTRIBUTING.md"]      # pages whose links are checked too
BIN = Path(sys.executable).parent                # the environment's programs: .venv/bin in a clone

FENCE = re.compile(r"^(\s*)```\s*([\w-]*)\s*$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]{2,}$")   # SUBMISSIONS, SCHEDULER: the reader's own value
OUTPUT_OPTIONS = {"--out", "--summary", "--feedback", "--json"}   # their values are written, not read
FILE_SUFFIXES = (".py", ".ipynb", ".md", ".txt", ".toml", ".cfg", ".yml", ".csv", ".json")
RUN_TIMEOUT = 60


@dataclass
class Command:
    page: Path
    line: int          # where it starts in its page, 1-based
    text: str          # as bash would read it (continuation lines joined)
    output: list[str] = field(default_factory=list)   # the output a console block shows

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}: {self.text}"


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    commands: list[Command]


def strip_code(text: str, inline: bool = True) -> str:
    """The page without fenced blocks (and inline code): a link or heading there is not one."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        kept.append("" if fenced else re.sub(r"`[^`]*`", "", line) if inline else line)
    return "\n".join(kept)


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The page's bash and console blocks, split into commands."""
    lines = (page.read_text() if text is None else text).splitlines()
    found, i = [], 0
    while i < len(lines):
        start = FENCE.match(lines[i])
        if not start:
            i += 1
            continue
        indent, lang = len(start.group(1)), start.group(2)
        j = i + 1
        while j < len(lines) and not FENCE.match(lines[j]):
            j += 1
        body = [(n + 1, line[indent:]) for n, line in enumerate(lines[i + 1:j], start=i + 1)]
        if lang == "powershell":          # never run here; its paths (\\ read as /) are checked
            body = [(n, line.replace("\\", "/")) for n, line in body]
        if lang in ("bash", "console", "powershell"):
            found.append(Block(page, i + 1, lang, commands(page, lang, body)))
        i = j + 1
    return found


def commands(page: Path, lang: str, body: list[tuple[int, str]]) -> list[Command]:
    found: list[Command] = []
    pending: Command | None = None
    for number, line in body:
        if pending is not None:                  # a continuation line of the previous command
            pending.text += "\n" + line
            if not line.rstrip().endswith("\\"):
                pending = None
            continue
        if lang == "console" and not line.startswith("$ "):
            if found:
                found[-1].output.append(line)
            continue
        line = line[2:] if lang == "console" else line
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found.append(Command(page, number, line))
        if line.rstrip().endswith("\\"):
            pending = found[-1]
    return found


def simple_commands(text: str) -> list[list[str]]:
    """Split a command line at ``&&``, ``||``, ``;``, ``|`` into argument lists, comments dropped."""
    lexer = shlex.shlex(text.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    for token in lexer:
        if token in ("&&", "||", ";", "|", "&"):
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


def program(argv: list[str]) -> list[str]:
    """The argument list without leading ``NAME=value`` environment settings."""
    i = 0
    while i < len(argv) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
        i += 1
    return argv[i:]


def local(path: str) -> Path:
    """Where a path a reader types in the clone is here (``.venv/bin/x``: this environment's)."""
    if path.startswith(".venv/bin/"):
        return BIN / path.removeprefix(".venv/bin/")
    return ROOT / path


def installed_program(path: str) -> bool:
    """A ``.venv/bin/x`` a reader types exists here: the file, or a console script of that name
    declared by an installed package (``pip install --target`` writes no bin/ files)."""
    if local(path).exists():
        return True
    import importlib.metadata

    name = path.removeprefix(".venv/bin/")
    return bool(importlib.metadata.entry_points(group="console_scripts", name=name))


def is_python(word: str) -> bool:
    return Path(word).name in ("python", "python3") or word.endswith(("/python", "/python3"))


def is_placeholder(word: str) -> bool:
    return word.startswith("[") or bool(PLACEHOLDER.match(word.split("/")[0]))


# ---------------------------------------------------------------- what a command is allowed to be


@functools.cache
def makefile() -> tuple[set[str], set[str]]:
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.M))
    variables = set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*[?:]?=", text, re.M))
    return targets, variables


def help_command(argv: list[str]) -> tuple[str, ...] | None:
    """The ``--help`` command whose output must list argv's options, if any.

    None for programs whose options are not checked here (pytest's --help alone takes seconds;
    jupyter, ruff, pip, make and system tools are not this course's)."""
    if len(argv) >= 3 and is_python(argv[0]) and argv[1] == "-m" and argv[2].startswith("mlpar."):
        verb = argv[3] if argv[2] == "mlpar.course" and len(argv) > 3 else ""
        sub = [verb] if verb in verbs(argv[2]) else []
        return (sys.executable, "-m", argv[2], *sub, "--help")
    if len(argv) >= 2 and is_python(argv[0]) and argv[1].startswith("scripts/"):
        return (sys.executable, argv[1], "--help")
    if len(argv) >= 2 and Path(argv[0]).name == "dask" and argv[1] in ("scheduler", "worker"):
        return ("dask", argv[1], "--help")
    return None


@functools.cache
def run_help(words: tuple[str, ...]) -> str:
    """The output of a --help or --list command; an empty string when it failed."""
    if words[0] == "dask":
        # The click command `dask scheduler --help` prints, read here: a new interpreter would
        # import distributed again (seconds), and the test set-up has imported it already.
        import click
        from distributed.cli import dask_scheduler, dask_worker

        main = {"scheduler": dask_scheduler.main, "worker": dask_worker.main}[words[1]]
        return main.get_help(click.Context(main, info_name=words[1]))
    done = subprocess.run(words, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    return done.stdout if done.returncode == 0 else ""


def verbs(module: str) -> set[str]:
    """The subcommands (mlpar.course) or families (mlpar.bench) a module's usage line offers."""
    usage = re.search(r"\{([\w,-]+)\}", run_help((sys.executable, "-m", module, "--help")))
    return set(usage.group(1).split(",")) if usage else set()


def mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def problems(command: Command, created: set[str] | None = None) -> list[str]:
    """What is wrong with a command without running it: files, targets, modules, options."""
    created = set() if created is None else created
    found = []
    try:
        parts = simple_commands(command.text)
    except ValueError as error:
        return [f"{command}: cannot be split into words ({error})"]
    for argv in map(program, parts):
        if not argv:
            continue
        head, args = argv[0], argv[1:]
        if head.startswith(".venv/bin/") and not installed_program(head):
            found.append(f"{command}: no program {head} in the environment")
        if head == "make":
            targets, variables = makefile()
            for arg in args:
                name = arg.split("=")[0]
                if "=" in arg and name not in variables:
                    found.append(f"{command}: the Makefile has no variable {name}")
                elif "=" not in arg and not arg.startswith("-") and arg not in targets:
                    found.append(f"{command}: the Makefile has no target {arg}")
        if is_python(head) and args[:1] == ["-m"] and len(args) > 1:
            if importlib.util.find_spec(args[1].split(".")[0]) is None:
                found.append(f"{command}: no module {args[1]}")
        if head in ("mkdir", "cp"):
            created.update(a.rstrip("/") for a in (args if head == "mkdir" else args[-1:]))
        previous = ""
        for arg in args:
            path = arg.split("=", 1)[-1].strip("[]")
            looks_like_path = ("/" in path or path.endswith(FILE_SUFFIXES)) and "://" not in path
            if (looks_like_path and previous not in OUTPUT_OPTIONS and not is_placeholder(arg)
                    and not any(path.rstrip("/") == c or path.startswith(c + "/") for c in created)
                    and not any(ch in path for ch in "*<>@\"'")):
                if not local(path).exists() and not (ROOT / path.rstrip("/")).exists():
                    found.append(f"{command}: names {path}, which does not exist")
            if previous in OUTPUT_OPTIONS:      # written by the command: later ones may read it
                created.add(path)
                if previous == "--out":         # the grader's summary beside its grades
                    created.add(re.sub(r"(\.\w+)?$", r"_summary\1", path, count=1))
            previous = arg.strip("[]").split("=")[0]
        helper = help_command(argv)
        if helper is None:
            continue
        if helper[1].startswith("scripts/") and not (ROOT / helper[1]).exists():
            found.append(f"{command}: no script {helper[1]}")
            continue
        shown = " ".join(Path(w).name for w in helper[:1]) + " " + " ".join(helper[1:])
        text = run_help(helper)
        if not text:
            found.append(f"{command}: {shown} failed")
            continue
        words = [a.strip("[]").split("=")[0] for a in args]
        for option in (w for w in words if w.startswith("--")):
            if not mentions(text, option):
                found.append(f"{command}: {shown} does not list {option}")
        # the subcommand or family named right after the module: mlpar.course grade, mlpar.bench claims
        verb = args[2] if helper[1] == "-m" and len(args) > 2 else "-"
        if not verb.startswith("-") and not is_placeholder(verb) and verb not in verbs(args[1]):
            found.append(f"{command}: python -m {args[1]} has no {verb}")
        # the targets or environments a script is given must be among those its --list shows
        if helper[1].startswith("scripts/") and "--list" in text:
            listed = run_help((sys.executable, helper[1], "--list"))
            names = [w for w in words[1:] if not w.startswith("-") and "/" not in w
                     and not w.endswith(FILE_SUFFIXES)]
            for name in names:
                if not mentions(listed, name):
                    found.append(f"{command}: {helper[1]} --list does not list {name}")
    return found


def is_fast(command: Command, folder: Path) -> bool:
    """Quick, reads what is there and writes only new paths in the scratch folder: run it.

    File commands (mkdir, cp, cat) and a grading run qualify only when what they read exists
    in the folder, made by the commands before them in the same block (the README's example
    makes its class); a grading example that shows no set-up is only checked, not run."""
    try:
        parts = [program(argv) for argv in simple_commands(command.text)]
    except ValueError:
        return False
    for argv in parts:
        if not argv or any(is_placeholder(a) for a in argv):
            return False
        head, args = argv[0], argv[1:]
        if head in ("mkdir", "cp", "cat"):
            written = args if head == "mkdir" else args[-1:] if head == "cp" else []
            read = [] if head == "mkdir" else args[:-1] if head == "cp" else args
            if any((folder / w.split("/")[0]).is_symlink() for w in written):   # into the clone
                return False
            if not all((folder / r).exists() for r in read if not r.startswith("-")):
                return False
        elif argv[-1] in ("--help", "--list"):
            pass
        elif is_python(head) and args[:3] == ["-m", "mlpar.course", "grade"] and len(args) > 3:
            if not (folder / args[3]).is_dir() or (folder / args[3]).is_symlink():
                return False
        else:
            return False
    return True


VARIES = [(re.compile(r"seed \d+"), "seed #"),        # drawn per run
          (re.compile(r"\d+\.\d+"), "#"),               # timings
          (re.compile(r"^isolation: .*"), "isolation: #"),  # the grader's sandbox, per machine
          (re.compile(r"; NOT sandboxed"), "")]             # and its summary's mention of it


def normalise(lines: list[str]) -> list[str]:
    """Output as compared: the timings, the drawn seed and the machine's sandbox aside."""
    out = []
    for line in lines:
        for pattern, replacement in VARIES:
            line = pattern.sub(replacement, line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


@functools.cache
def tracked() -> set[str]:
    """The clone's top-level names under version control (all of them where git cannot say):
    a reader who ran the README's example in the clone left class/ and grades.csv there, and
    the test must neither read nor write those."""
    done = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    names = {line.split("/")[0] for line in done.stdout.splitlines()} if done.returncode == 0 else set()
    return names or {entry.name for entry in ROOT.iterdir()} - {".git"}


def scratch(tmp: Path) -> Path:
    """A folder that sees the clone's tracked top-level files and folders, so relative paths work."""
    for name in tracked():
        if (ROOT / name).exists():
            (tmp / name).symlink_to(ROOT / name)
    return tmp


def run(command: Command, folder: Path) -> list[str]:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    text = command.text.replace(".venv/bin/", f"{BIN}/")
    done = subprocess.run(["bash", "-c", text], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)
    found = []
    if done.returncode != 0:
        found.append(f"{command}: exit status {done.returncode}: {(done.stderr or done.stdout)[-500:]}")
    elif command.output and normalise(done.stdout.splitlines()) != normalise(command.output):
        shown, got = "\n".join(command.output), done.stdout.rstrip()
        found.append(f"{command}: the page shows\n{shown}\nbut it printed\n{got}")
    return found


# ---------------------------------------------------------------- links


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in strip_code(text, inline=False).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def link_problems(page: Path, text: str | None = None) -> list[str]:
    text = page.read_text() if text is None else text
    found = []
    for target in LINK.findall(strip_code(text)):
        if re.match(r"^[a-z]+:", target):        # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve()
        if path and not where.exists():
            found.append(f"{page.name}: link to {target}: no such file")
        elif anchor and (not path or where.suffix == ".md"):
            headings = anchors(where.read_text() if path else text)
            if anchor not in headings:
                found.append(f"{page.name}: link to {target}: {where.name} has no heading #{anchor}")
    return found


# ---------------------------------------------------------------- the tests


def all_commands() -> list[Command]:
    return [c for page in PAGES for b in blocks(page) for c in b.commands]


def test_the_pages_exist_and_link_both_ways():
    names = {"grading.md", "cluster.md", "testing.md", "troubleshooting.md"}
    assert names <= {p.name for p in PAGES}, f"docs/ lacks {names - {p.name for p in PAGES}}"
    readme = (ROOT / "README.md").read_text()
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in readme, f"the README does not link docs/{page.name}"
        assert "../README.md" in page.read_text(), f"docs/{page.name} does not link back to the README"


def test_the_claims_table_has_its_markers():
    """The lead's tooling replaces what lies between them with a fresh table of runs."""
    text = (ROOT / "docs" / "testing.md").read_text()
    begin, end = "<!-- mlpar:claims-runs -->", "<!-- /mlpar:claims-runs -->"
    assert text.count(begin) == 1 and text.count(end) == 1, "docs/testing.md needs each marker once"
    assert text.index(begin) < text.index(end)


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 160, f"README.md has {lines} lines; reference text belongs in docs/"


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    broken = link_problems(page)
    assert not broken, "\n".join(broken)


def test_every_command_names_what_exists():
    cmds = all_commands()
    assert len(cmds) >= 20, "the pages' commands were not found: is the block parser broken?"
    helpers = {h for c in cmds for argv in map(program, simple_commands(c.text)) if (h := help_command(argv))}
    with ThreadPoolExecutor(4) as pool:      # the --help texts are independent: fetch them at once
        list(pool.map(run_help, helpers))
    found = []
    for page in PAGES:
        for block in blocks(page):
            created: set[str] = set()
            script = "\n".join(c.text for c in block.commands)
            parsed = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
            if parsed.returncode and block.lang != "powershell":
                found.append(f"{page.name}:{block.line}: bash -n: {parsed.stderr.strip()}")
            for command in block.commands:
                found += problems(command, created)
    assert found == [], "\n".join(found)


def test_quick_commands_run_and_print_what_the_pages_show(tmp_path):
    found, ran = [], 0
    for page in PAGES:
        for n, block in enumerate(b for b in blocks(page) if b.lang != "powershell"):
            folder = tmp_path / f"{page.stem}-{n}"   # one per block: mkdir, cp, then grade
            folder.mkdir()
            scratch(folder)
            for command in block.commands:
                if is_fast(command, folder):
                    found += run(command, folder)
                    ran += 1
    assert ran >= 5, f"only {ran} commands were quick enough to run: is is_fast too strict?"
    assert found == [], "\n\n".join(found)


# ---------------------------------------------------------------- the checker can fail


def test_a_broken_link_or_anchor_fails(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# There\n\n## A section: `code`\n")
    good = "[a](there.md) [b](there.md#a-section-code) [c](#top) [d](https://example.org/x)\n# Top\n"
    assert link_problems(page, good) == []
    bad = "[a](nowhere.md) [b](there.md#no-such-section) [c](#nope) `[e](inline.md)`\n"
    assert len(link_problems(page, bad)) == 3


def test_a_wrong_command_fails():
    page = ROOT / "README.md"

    def first(text: str) -> Command:
        return blocks(page, f"```console\n$ {text}\n```\n")[0].commands[0]

    assert problems(first("make test PYTEST_PARALLEL=")) == []
    assert problems(first("make tset")), "an unknown make target must fail"
    assert problems(first("make test NO_SUCH_VARIABLE=1")), "an unknown make variable must fail"
    assert problems(first("python -m mlpar.course grade class --out g.csv --no-such-flag")), \
        "an option the grader does not have must fail"
    assert problems(first("python -m mlpar.course no-such-verb")), "an unknown subcommand must fail"
    assert problems(first(".venv/bin/python -m pytest notebooks/99_missing.ipynb")), \
        "a file that does not exist must fail"
    assert problems(first("python scripts/hostile_envs.py no-such-env")), \
        "an environment the script does not list must fail"


def test_a_wrong_output_fails(tmp_path):
    shown = "```console\n$ cat note.txt\nhello 1.5 s\n```\n"
    command = blocks(ROOT / "README.md", shown)[0].commands[0]
    (tmp_path / "note.txt").write_text("hello 2.7 s\n")
    assert run(command, tmp_path) == [], "timings are not compared"
    (tmp_path / "note.txt").write_text("goodbye 2.7 s\n")
    assert run(command, tmp_path), "a different output must fail"


def test_console_blocks_split_into_commands_and_output():
    text = "```console\n$ a --x \\\n    --y\nout 1\nout 2\n$ b\n```\n\n  ```bash\n  c  # note\n  ```\n"
    found = blocks(ROOT / "README.md", text)
    assert [b.lang for b in found] == ["console", "bash"]
    first, second = found[0].commands
    assert first.text == "a --x \\\n    --y" and first.output == ["out 1", "out 2"]
    assert second.text == "b" and second.output == []
    assert [c.text for c in found[1].commands] == ["c  # note"]
