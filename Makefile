# lfw-bench: `make bench` (the main job) and `make test` (the tests) set everything up themselves:
# a virtualenv in .venv, the project and its dependencies, synthetic LFW in .cache/ on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROFILE ?= quick
PYTEST_ARGS ?=

# Synthetic data lives inside the project (ignored by git); pinned threads keep numbers comparable.
export LFW_CACHE ?= $(CURDIR)/.cache/lfw-bench
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: venv install data test unit smoke bench report gate baseline lint clean help

help:
	@echo "make bench     run the benchmark matrix (PROFILE=quick|full) and write charts + summary to reports/"
	@echo "make test      unit tests, then every benchmark once (no timing)"
	@echo "make gate      quick profile, then gate it against benchmarks/baselines/<runner>.json"
	@echo "make baseline  save this runner's baseline (refuses to overwrite; FORCE=1 to replace)"
	@echo "make report    charts + summary from the newest saved run"
	@echo "make lint      ruff"

venv: $(STAMP)
install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

data: $(STAMP)
	$(PY) -m lfw.cache_data --profile $(PROFILE)

unit: $(STAMP)
	$(PY) -m pytest tests -q $(PYTEST_ARGS)

smoke: $(STAMP)
	$(PY) -m pytest benchmarks -q --benchmark-disable --bench-profile smoke $(PYTEST_ARGS)

test: unit smoke

bench: $(STAMP)
	$(PY) -m pytest benchmarks --bench-profile $(PROFILE) --benchmark-autosave $(PYTEST_ARGS)
	$(PY) -m lfw.report --out reports

report: $(STAMP)
	$(PY) -m lfw.report --out reports

lint: $(STAMP)
	$(PY) -m ruff check .

clean:
	rm -rf reports/*.png reports/*.svg reports/README.md .pytest_cache .ruff_cache
