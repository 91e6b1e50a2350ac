# Two commands on a fresh clone: `make lab` and `make test`. Both create .venv and install
# mlpar (editable) with the pinned versions from constraints.txt when it is missing or stale.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mlpar-installed
# JupyterLab refuses to run as root unless told; containers and CI run as root.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: install lab test lint notebooks nav student bench clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[lab,dev]"
	@touch $@

# Token authentication stays on: open the URL with ?token=... that Jupyter prints.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(ROOT_FLAG) notebooks/00_index.ipynb

# Lint, unit tests, then strict nbval over every notebook (options in pyproject.toml).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

# Re-execute notebooks in place after an edit (all of them, or NB=notebooks/01_x.ipynb).
NB ?= notebooks/[0-9]*.ipynb
notebooks: $(STAMP)
	$(BIN)/python -m mlpar.course run $(NB)

# Regenerate the course index and the prev/next navigation cells.
nav: $(STAMP)
	$(BIN)/python -m mlpar.course nav

# Build the student edition (solutions removed) into build/student.
student: $(STAMP)
	$(BIN)/python -m mlpar.course student build/student

# Benchmarks: `make bench FAMILY=elementwise` (or all).
FAMILY ?= all
bench: $(STAMP)
	$(BIN)/python -m mlpar.bench $(FAMILY)

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
