#!/usr/bin/env bash
# Re-run the commands whose figures the README and docs/ quote and keep their output in docs/runs/, one file each, so
# every figure there traces to a committed output. Each takes the machine on its own (run nothing beside it).
#
#   bash tools/record.sh [NAME ...]: make-bench bench-dataset remote decoders process-pairs cost diagnose distributed
#   (these by default), peers (the peers installed once), small-shm and faults (they mount a tmpfs: root),
#   interrupted, device-dryrun
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python BASELINE=benchmarks/baselines/cpu-2core.json
export LFW_CACHE="${LFW_CACHE:-$PWD/.cache/lfw-bench}" OMP_NUM_THREADS=1
# Each recording's output (runs/<name>.txt, its charts) goes to $STAGE, outside the tree, then into docs/ once it has
# succeeded: the runs it records see a clean checkout, and one that fails leaves docs/ as it was. $out: its scratch.
STAGE=$(mktemp -d)
mkdir -p "$STAGE/runs"
trap 'rm -rf "$STAGE" "${out:-}"' EXIT
stamp() { echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD): $*"; }

shown() {  # an ERE, then a command: the lines of its output and errors that match (\r splits lines); never fails
  "${@:2}" 2>&1 | tr '\r' '\n' | grep -E "$1" || true
}

per_core() {  # the machine's speed when a run was made: per-core images/s of its ceilings, from the newest autosave
  $PY -c '
from lfw.results import latest_run, load_run
run = load_run(latest_run())
rates = {k.removeprefix("per_core_images_per_s_"): v for k, v in run.machine.items() if k.startswith("per_core")}
cpu = run.machine.get("cpu", {}).get("brand_raw")
print(f"per-core images/s of that run ({run.path.name}): {rates}; cpu: {cpu}")
if "none" in rates:
    print("per-core rate (single-core ceiling of the none preset):", format(rates["none"], ",.0f"), "images/s")'
}

elapsed() {  # copy stdin to stdout, each line (progress bars split at carriage returns) after its seconds since start
  $PY -u -c '
import io, sys, time
t0 = time.monotonic()
for line in io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline=None):
    if line.strip():
        print(f"{time.monotonic() - t0:7.1f}", line.removesuffix("\n"))'
}

suite() {  # a run file, then options: pytest benchmarks with them saving the run there, its last line, its wall time
  local start=$SECONDS
  $PY -m pytest benchmarks "${@:2}" -q -p no:cacheprovider --benchmark-json="$1" 2>&1 | tail -1
  echo "wall time: $(( SECONDS - start )) s"
}

make_bench() {  # a fresh clone's make bench, install and synthetic data included: wall time by phase, the summary
  clone=$out/lfw-bench log=$clone/make-bench.log
  git clone -q . "$clone"
  stamp "git clone, then make bench in the clone (virtualenv and install, synthetic data, quick profile and remote" \
    "layer, report; PYTEST_ARGS=--durations=12)"
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(env -u OMP_NUM_THREADS nproc) usable cores"
  start=$SECONDS
  (cd "$clone" && env -u LFW_CACHE make bench PYTEST_ARGS=--durations=12 2>&1) | elapsed > "$log"
  total=$(( SECONDS - start ))
  at() { awk -v pat="$1" 'index($0, pat) { print $1; exit }' "$log"; }
  t_pytest=$(at " -m pytest benchmarks ") t_report=$(at " -m lfw.report ") t_estimate=$(at " -m lfw.suite.estimate")
  echo "wall time of make bench in a fresh clone: $total s"
  echo "  install (virtualenv, pip from local wheels): ${t_estimate:-$t_pytest} s"
  if [ -n "$t_estimate" ]; then echo "  estimate (lfw/suite/estimate.py): $(echo "$t_pytest - $t_estimate" | bc) s"; fi
  echo "  pytest (synthetic data, quick profile, remote layer): $(echo "$t_report - $t_pytest" | bc) s"
  echo "  report: $(echo "$total - $t_report" | bc) s"
  echo "what make bench said before it started (lfw/suite/estimate.py):"
  grep -m1 ' make bench: about ' "$log" | sed -E 's/^ *[0-9.]+ //' || echo "(none)"
  echo "pytest's own summary and slowest steps (the synthetic tree is made in the first benchmark's setup; the"
  echo "remote layer's rotation, endpoint start and upload run in its first case's call):"
  cut -c9- "$log" | sed -n '/slowest 12 durations/,/^=.*passed/p' | grep -v -e '^ *$' -e '^(' -e '^SKIPPED' \
    -e 'short test summary'
  echo "the report (python -m lfw.report):"
  cut -c9- "$log" | sed -n '/ -m lfw.report /,$p' | tail -n +2
  echo "decode pipelines of that run, stage by stage (tools/stage_table.py):"
  (cd "$clone" && PY=.venv/bin/python && $PY tools/stage_table.py && per_core)
}

bench_dataset() {  # the suite on a user's own dataset: torchvision's ImageFolder over the quick profile's tree
  exec 2>&1
  stamp "pytest benchmarks --bench-dataset examples.imagefolder:faces -k \"workers or batch\" (quick profile)"
  suite "$out/run.json" --bench-dataset examples.imagefolder:faces -k "workers or batch"
  $PY -m lfw.report "$out/run.json" --out "$out/report" --format png | grep -v -e '^ *$'
}

remote() {  # the remote layer (quick), five runs: steady rates, their ceiling, Little's law, the limit per case
  exec 2>&1
  $PY -m tools.remote_runs --runs 5 --out "$out"
  echo
  echo "# python -m lfw.report on the last run (run-5.json): its summary line and the chart docs/remote-cpu-2core.png"
  $PY -m lfw.report "$out/run-5.json" --out "$out/report" --format png | grep -e "^remote storage" -e "^CV"
  cp "$out/report/remote.png" "$STAGE"/remote-cpu-2core.png
}

decoders() {  # every decode pipeline (full profile: full-size LFW, 7 rounds) against the two ceilings
  exec 2>&1
  stamp "pytest benchmarks -k decoders --bench-profile full (13,233 images, passes of 4,096, 7 rounds)"
  suite "$out/decoders.json" -k decoders --bench-profile full
  $PY - "$out/decoders.json" decoders images_per_s images_per_s_cv pil_ceiling_share memmap_ceiling_share \
    cpu_utilization cpu_ms_per_image main_cpu_share ttfb_s <<'EOF'
import sys
from lfw.cli.table import table
from lfw.results import load_run
run = load_run(sys.argv[1])
keys = sys.argv[3:]
print("machine: per-core images/s", {k: v for k, v in run.machine.items() if k.startswith("per_core")})
def number(v):
    return "-" if v is None else f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
rows = [(c.label, *(number(c.number(k)) for k in keys))
        for c in sorted(run.group(sys.argv[2]), key=lambda c: -(c.number("images_per_s") or 0))]
print(table(("case", *keys), rows, right=range(1, len(keys) + 1)))
EOF
  $PY -m lfw.report "$out/decoders.json" --out "$out/report" --format png | grep -e "^fastest" -e "^CV"
  cp "$out/report/decoders.png" "$STAGE"/decoders-cpu-2core.png
}

process_pairs() {  # how much two processes of the same code differ, case by case (an A/A A/B run)
  exec 2>&1
  stamp "python -m lfw.gate --ab HEAD, both sides the same commit, 10 process pairs"
  $PY -m lfw.gate --ab HEAD -k "workers0-uint8, workers0-none, workers2-none, workers2-uint8" \
    --min-pairs 10 --max-pairs 10 --ab-out "$out/ab" 2>/dev/null || true
  $PY - "$out/ab" <<'EOF'
import json, math, sys
from statistics import median
from lfw.cli.table import table
from lfw.results import keys as K, load_run
folder = sys.argv[1]
print("\nper case: the pairs' log ratio of images/s (current over base, one per pair of fresh processes), and")
print("how far the two passes of one process in its quad were apart (|log ratio|), over all pairs and sides")
sides = [{c.label: c for c in load_run(f"{folder}/{s}.json").cases} for s in ("base", "current")]
def by_pair(c):  # the images/s of the two passes of one process in each pair's quad
    rates, pairs = c.rounds("images_per_s"), c.extra[K.AB_PAIR]
    return [[r for r, q in zip(rates, pairs) if q == p][:2] for p in sorted(set(pairs))]
rows = []
for key, logs in json.load(open(f"{folder}/verdicts.json"))["log_ratios"].items():
    case, metric = key.split(":")
    if metric != "images_per_s":
        continue
    within = [abs(math.log(a / b)) for cases in sides for a, b in by_pair(cases[case])]
    spread = [abs(x) for x in logs]
    rows.append((case, f"{median(spread):.3f}", f"{max(spread):.3f}",
                 f"{math.exp(min(logs)):.3f}-{math.exp(max(logs)):.3f}", f"{median(within):.3f}"))
print(table(("case", "between processes: median |log ratio|", "largest", "ratios", "within a process: median"), rows,
            right={1, 2, 4}))
EOF
}

cost() {  # the cost layer's own run: instructions per image of each preset, and how long valgrind takes
  exec 2>&1
  stamp "python -m lfw.measure.cost (one valgrind process, 16 images per preset, as the quick profile counts)"
  root=$($PY -c "from lfw.data.root import resolve_root; print(resolve_root(synthetic_images=2000).path)")
  $PY -m lfw.measure.cost --root "$root" --cache-dir "$LFW_CACHE/callgrind" --batch-size 16 --batches 1 \
    none simple heavy uint8
}

diagnose() {  # measured vs simulated batches/s of a training loop
  exec 2>&1
  stamp "python -m lfw.diagnose, 2 workers, batch 64, transform none, 30 batches"
  for step in 10 50 150; do
    echo "--- --step-ms $step"
    $PY -m lfw.diagnose --workers 2 --step-ms "$step" --batch-size 64 --batches 30 --quiet --no-chart
  done
}

distributed() {  # two ranks against one, the same per-rank configuration
  for n in 2 1; do
    stamp "torchrun --standalone --nproc-per-node=$n -m lfw.distributed --workers 1 --epochs 3"
    $PY -m torch.distributed.run --standalone --nproc-per-node="$n" -m lfw.distributed --workers 1 --epochs 3 \
      --out "$out/w$n.json" 2>/dev/null
  done
}

peers() {  # make peers (the peers extra installed once before): its wall time, the Peers table and the verdicts
  stamp "make peers (the peers layer in the quick profile; its extra and FFmpeg's libraries installed before)"
  echo "machine: $($PY -c 'from lfw.measure.machine import cpu_model, usable_cores
print(cpu_model(), "x", usable_cores(), "usable cores")')"
  start=$SECONDS
  shown '[0-9]+ (passed|failed|skipped)|^(SKIPPED|FAILED)|^make.*Error' make peers
  echo "wall time of make peers: $(( SECONDS - start )) s"
  $PY -m tools.peers_table
  per_core
  # The peers docs/peers.md says were not measured, and why: what pip says of them under the suite's constraints.
  echo "probe: pip index versions mosaicml-streaming ffcv; pip install --dry-run mosaicml-streaming==0.13.0, then" \
    "mosaicml-streaming, -c constraints.txt"
  for dist in mosaicml-streaming ffcv; do $PY -m pip index versions $dist 2>/dev/null | grep -m1 "^$dist" || true; done
  $PY -m pip install --dry-run mosaicml-streaming==0.13.0 -c constraints.txt 2>&1 \
    | grep -E -e 'depends on numpy' -e 'requested \(constraint\) numpy' -e '^ERROR: ResolutionImpossible' || true
  $PY -m pip install --dry-run mosaicml-streaming -c constraints.txt 2>&1 | grep -o 'mosaicml-streaming-[0-9.]*[0-9]' \
    | sed 's/^/  without a version, pip would install /' || true
  cp reports/peers/peers.png "$STAGE"/peers-cpu-2core.png
}

small_shm() {  # make test and make bench where /dev/shm is a container's (root: a private mount namespace + tmpfs)
  local bench='[0-9]+ (passed|failed)|of /dev/shm|^(INCOMPLETE|best|recommended|left out)|^  [a-z0-9]+: |^make.*Error'
  for size in 64m 16m; do
    stamp "make test-small-shm SHM=$size (make test with /dev/shm mounted at $size)"
    shown '^tmpfs|[0-9]+ (passed|failed)|of /dev/shm|^make.*Error' flock /tmp/lfw-cpu.lock make test-small-shm SHM=$size
  done
  stamp "make bench with /dev/shm mounted at 64m (quick profile and the remote layer)"
  shown "^tmpfs|$bench|^(no recommendation|fastest|remote storage)" \
    unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && make bench'
  small=$(ls -t .benchmarks/*/*.json | head -1)
  stamp "python -m lfw.gate $BASELINE $(basename "$small") (that run, against the 2-core baseline)"
  $PY -m lfw.gate "$BASELINE" "$small" --summary-md /tmp/lfw-gate-shm.md 2>&1 | grep -v '^  test_' || true
  stamp "make bench with this machine's own /dev/shm ($(df -h --output=size /dev/shm | tail -1 | tr -d ' '))"
  shown "$bench" make bench
}

interrupted() {  # Ctrl-C during make bench: what it leaves behind, and what make report and the gate say of it
  exec 2>&1
  stamp "timeout --preserve-status -s INT 45 make bench (SIGINT to make and the pytest under it, as Ctrl-C)"
  status=0
  timeout --preserve-status -s INT 45 make bench > /tmp/lfw-interrupted.log 2>&1 || status=$?
  while pgrep -f 'pytest benchmarks' > /dev/null; do sleep 1; done  # make returns first; pytest is still saving
  shown 'incomplete run|Saved benchmark data|^make.*Error|[0-9]+ passed' cat /tmp/lfw-interrupted.log
  echo "make bench exit status: $status"
  run=$(tr '\r' '\n' < /tmp/lfw-interrupted.log | sed -n 's/.*Saved benchmark data in: //p' | tail -1)
  echo "the run it saved: $(basename "$run")"
  echo "processes left that the run started: $(pgrep -fc 'lfw\.|moto_server|pass_server' || true)"
  if [ -z "$run" ]; then
    echo "no run was saved: nothing for make report or the gate to read"
  else
    echo "--- make report"
    make report 2>&1 | grep -v -e '^\.venv' | head -4 || true
    echo "--- python -m lfw.gate $BASELINE <that run> (what make gate runs)"
    status=0
    $PY -m lfw.gate "$BASELINE" "$run" --summary-md /tmp/lfw-gate.md || status=$?
    echo "gate exit status: $status"
  fi
  echo "--- python -m lfw.history show .benchmarks"
  $PY -m lfw.history show .benchmarks --out /tmp/lfw-history 2>&1 | grep -e 'incomplete' | head -2 || true
}

faults() {  # a full disk during an autosave; a tree with 50 truncated files through make bench, the report and the gate
  exec 2>&1
  disk=$out/disk bad=$out/bad
  mkdir "$disk" "$bad"
  stamp "an autosave into a folder with 12 KB free (root: unshare -m, a 96 KB tmpfs on the storage folder)"
  unshare -m sh -c '
    mount -t tmpfs -o size=96k tmpfs "$1"
    run() {
      status=0; make bench PROFILE=smoke LAYERS= PYTEST_ARGS="-k bs16 --benchmark-storage=file://$1" \
        > "$2" 2>&1 || status=$?
      tr "\r" "\n" < "$2" | grep -E -e "^error:" -e "Saved benchmark data" -e "[0-9]+ passed" -e "^make.*bench\]"
      echo "make exit status: $status"; }
    echo "--- an earlier run, saved while there is room"; run "$1" "$2/faults-1.log"
    store=$(dirname "$(ls "$1"/*/0001_*.json)")
    avail=$(df -B1 --output=avail "$1" | tail -1); head -c $((avail - 12288)) /dev/zero > "$1/filler"
    echo "free before the second run: $(df -B1 --output=avail "$1" | tail -1) bytes"
    ls -a "$store"; sha256sum "$store"/*.json
    echo "--- make bench again, with 12 KB free"; run "$1" "$2/faults-2.log"
    echo "--- the folder after it (no new file, no temporary file; the earlier run byte-identical)"
    ls -a "$store"; sha256sum "$store"/*.json' sh "$disk" "$out"
  echo
  stamp "LFW_ROOT at the quick profile's 2,000-image tree with 50 files truncated to half their size"
  cp -r .cache/lfw-bench/synthetic-lfw-2000-seed0/lfw "$bad/lfw"
  $PY -c 'import sys, pathlib
paths = sorted(pathlib.Path(sys.argv[1]).glob("*/*.jpg"))
for p in paths[::40][:50]: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
print(f"truncated 50 of {len(paths)} files, every 40th by name: {paths[0].parent.name}/{paths[0].name}, ...")' "$bad/lfw"
  echo "--- make bench LAYERS= PYTEST_ARGS='-k workers2-none' (without the option: the case fails, naming it)"
  shown 'cannot decode|[0-9]+ (passed|failed)' \
    env LFW_ROOT="$bad/lfw" make bench LAYERS= PYTEST_ARGS="-k workers2-none" | cut -c1-400
  echo "--- LFW_ROOT=<that tree> make bench SKIP_BAD_IMAGES=1 (the quick profile and the remote layer)"
  start=$SECONDS
  shown '[0-9]+ (passed|failed)|^SKIPPED IMAGES|^INCOMPLETE|^report:|^make.*Error' \
    env LFW_ROOT="$bad/lfw" make bench SKIP_BAD_IMAGES=1
  echo "make bench ended after $(( SECONDS - start )) s"
  run=$(ls -t .benchmarks/*/*.json | head -1)
  echo "--- the run it saved, $(basename "$run"): what its machine_info records"
  $PY -c 'import sys; from lfw.results import load_run; r = load_run(sys.argv[1])
print({k: r.machine[k] for k in ("dataset_path", "dataset_files", "skipped_images", "skipped_image_files")})' "$run"
  echo "--- python -m lfw.gate $BASELINE <that run> (a clean run against it)"
  status=0
  $PY -m lfw.gate "$BASELINE" "$run" --summary-md "$disk/gate.md" --verdict-json "$disk/verdict.json" || status=$?
  echo "gate exit status: $status"
}

device_dryrun() {  # the device campaign's dry run: every step's code on the CPU; PY312=<python 3.12> runs it again
  exec 2>&1
  stamp "bash tools/device_wheels.sh (the wheels the campaign installs, .whl/)"
  bash tools/device_wheels.sh 2>&1 | grep -e ' wheels, ' -e '^travelling' -e '^installable'
  echo
  for py in "$PY" ${PY312:-}; do
    stamp "$py tools/device_campaign.py --dry-run --out <fresh folder> (.whl/ from tools/device_wheels.sh)"
    echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(env -u OMP_NUM_THREADS nproc) usable cores, no GPU:" \
      "the GPU paths ran on the CPU stand-in; figures are of the 160-image smoke tree, one round, and not GPU figures"
    echo "# $py's own pytest-benchmark, before .whl/ goes first: $("$py" -c \
      'import importlib.metadata as m; print(m.version("pytest-benchmark"))')"
    dry=$(mktemp -d) && rmdir "$dry"
    start=$(date +%s.%N) status=0
    "$py" tools/device_campaign.py --dry-run --out "$dry" > /tmp/lfw-dryrun.log 2>&1 || status=$?
    tr '\r' '\n' < /tmp/lfw-dryrun.log | grep -a -e '^limits' -e '^python' -e '^torch' -e '^numpy' -e '^pytest' \
      -e '^usable_cores' -e '^peers_ready' -e '^wheels' -e '^== ' -e '^   ' -e '^dry run' | grep -v '^ *$'
    echo "# exit status: $status; wall time: $(echo "$(date +%s.%N) - $start" | bc | cut -d. -f1) s"
    echo "# files written: $(ls "$dry" | tr '\n' ' ')"
    rm -rf "$dry"
    echo
  done
}

for one in ${@:-make-bench bench-dataset remote decoders process-pairs cost diagnose distributed}; do
  out=$(mktemp -d)
  ( "${one//-/_}" ) > "$STAGE/runs/$one.txt"  # a failure stops the script here (set -e): nothing of it reaches docs/
  cp -r "$STAGE/." docs/ && rm -rf "${STAGE:?}"/* "$out" && mkdir -p "$STAGE/runs"
done
