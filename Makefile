# Two commands on a fresh clone: `make lab` and `make test`. Both create .venv and install
# mlpar (editable) with the pinned versions from constraints.txt when it is missing or stale.
# PYTHON picks the interpreter (`make install PYTHON=python3.12`); VENV the folder, so the
# install matrix (scripts/check_installs.py) can build throw-away environments the same way.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mlpar-installed
# JupyterLab refuses to run as root unless told; containers and CI run as root.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: install lab test lint notebooks notebooks-cluster nav student student-check bench installs memory mutants clean

install: $(STAMP)

# Debian and Ubuntu split `venv` and `ensurepip` into the python3-venv package; without it
# `python3 -m venv` fails half-way with a message about ensurepip. Check first and say so.
$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c "import sys; assert sys.version_info >= (3, 10)" 2>/dev/null || { \
	  echo "mlpar needs Python 3.10 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1)." \
	       "Pick another with 'make install PYTHON=python3.12'."; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -c "import ensurepip, venv" 2>/dev/null || { \
	  echo "'$(PYTHON) -m venv' is not available: on Debian/Ubuntu install it with" \
	       "'sudo apt-get install python3-venv' (or python3.X-venv for your version), then run make again."; \
	  exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[lab,dev]"
	@touch $@

# Token authentication stays on: open the URL with ?token=... that Jupyter prints.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(ROOT_FLAG) notebooks/00_index.ipynb

# Lint, unit tests, then strict nbval over every notebook (options in pyproject.toml).
# The slow install checks are opt-in (MLPAR_SLOW_TESTS=1) and do not run here.
# PYTEST_STATUS_FILE (set by .ci/run) receives pytest's own exit status, which make hides.
PYTEST_STATUS_FILE ?= /dev/null
# Two pytest processes (pytest-xdist), each notebook's cells kept together in one of them
# (loadfile): the suite is CPU-bound and single-threaded, so two halve its time on 2 cores.
# `make test PYTEST_PARALLEL=` runs it in one process.
PYTEST_PARALLEL ?= -n 2 --dist loadfile
test: $(STAMP)
	$(BIN)/ruff check .
	@status=0; $(BIN)/python -m pytest $(PYTEST_PARALLEL) || status=$$?; echo $$status > $(PYTEST_STATUS_FILE); \
	if [ $$status = 5 ]; then echo "pytest collected no tests (exit 5)"; fi; exit $$status

lint: $(STAMP)
	$(BIN)/ruff check .

# Re-execute notebooks in place after an edit (all of them, or NB=notebooks/01_x.ipynb).
NB ?= notebooks/[0-9]*.ipynb
notebooks: $(STAMP)
	$(BIN)/python -m mlpar.course run $(NB)

# The distributed lessons (03, 05, 06, 07) under strict nbval against `dask scheduler` and two
# `dask worker` programs started on 127.0.0.1 (MLPAR_DASK_SCHEDULER set; stopped afterwards).
notebooks-cluster: $(STAMP)
	$(BIN)/python scripts/cluster_notebooks.py

# Regenerate the course index and the prev/next navigation cells.
nav: $(STAMP)
	$(BIN)/python -m mlpar.course nav

# The student edition (solutions removed), published in student/; a test checks it is current.
student: $(STAMP)
	$(BIN)/python -m mlpar.course student student

student-check: $(STAMP)
	$(BIN)/python -m mlpar.course student student --check

# Mutation test of the exercise checks: every mutant of every reference solution through its
# check, the score per check, surviving mutants with their diffs (issue 35 §3). make test runs
# a seeded sample (tests/exercises/test_mutants.py). `make mutants LESSON=05` for one lesson.
LESSON ?=
mutants: $(STAMP)
	$(BIN)/python -m mlpar.course.mutants $(if $(LESSON),--lesson $(LESSON))

# Benchmarks: `make bench FAMILY=elementwise` (or all).
FAMILY ?= all
bench: $(STAMP)
	$(BIN)/python -m mlpar.bench $(FAMILY)

# Install matrix: every supported interpreter found here, Binder's set, a wheel, ipywidgets 7.
installs: $(STAMP)
	$(BIN)/python scripts/check_installs.py

# Peak memory of each lesson's kernel (and its children), for Binder's ~2 GB.
memory: $(STAMP)
	$(BIN)/python scripts/peak_memory.py

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
