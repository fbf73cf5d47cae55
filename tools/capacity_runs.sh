#!/usr/bin/env bash
# "A lost core is the machine, not the code", both sides, measured on this machine and gated against the committed
# baseline (docs/gating.md). Each run is the quick profile's workers and decoders groups (the
# multi-worker efficiency the gate judges; the other groups are left out with -k, which the gate accepts):
#   one-core     under taskset -c 0: the affinity gives one core
#   hog          a busy process at nice -20 pinned to core 1: the machine gives one core, the affinity still two
#   serialized   every image load (LFWDataset.__getitem__) behind one machine-wide lock
#                (benchmarks/gate_rates/serialized_decode/; the workers group only: the decode pipelines do not
#                load through LFWDataset)
# Runs, logs and the gate's output go to benchmarks/gate_rates/capacity/; a summary line per run to stdout.
# Usage: bash tools/capacity_runs.sh [one-core|hog|serialized ...]   (default: all three)
set -u
cd "$(dirname "$0")/.."
out=benchmarks/gate_rates/capacity
mkdir -p "$out"
py=.venv/bin/python
select='workers_transform or decoders'
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 LFW_CACHE="${LFW_CACHE:-$PWD/.cache/lfw-bench}"

measure() {  # name, then the command prefix
  local name=$1; shift
  test -e "$out/$name.json" && { echo "$name: $out/$name.json exists; remove it to measure again" >&2; return 2; }
  "$@" "$py" -m pytest benchmarks -q -p no:cacheprovider --bench-profile quick -k "$select" \
    --benchmark-json="$out/$name.json" > "$out/$name.log" 2>&1
  "$py" -m lfw.gate benchmarks/baselines/cpu-2core.json "$out/$name.json" > "$out/$name.gate.txt" 2>&1
  echo "$name: gate exit $? ($(tail -n +1 "$out/$name.gate.txt" | grep -E '^(REGRESSED|no regression|INCOMPLETE)' | head -1))"
}

for what in "${@:-one-core hog serialized}"; do
  for name in $what; do
    case $name in
      one-core) measure one-core taskset -c 0 ;;
      hog)
        nice -n -20 taskset -c 1 "$py" -c "while True: pass" &
        hog=$!
        trap 'kill $hog 2>/dev/null' EXIT
        measure hog env
        kill "$hog"; wait "$hog" 2>/dev/null; trap - EXIT ;;
      serialized) select=workers_transform measure serialized env PYTHONPATH="$PWD/benchmarks/gate_rates/serialized_decode:$PWD" ;;
      *) echo "unknown run $name" >&2; exit 2 ;;
    esac
  done
done
