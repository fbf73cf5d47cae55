#!/usr/bin/env bash
# The machine as it is, measured and gated (docs/gating-measured.md, "A lost core is the machine, not the code").
#   bash tools/capacity_runs.sh [RUN ...]   (default: probe healthy one-core quota hog serialized half half-handover)
#   base=RUN.json bash tools/capacity_runs.sh half-gate
# Runs, logs and the gate's output go to benchmarks/gate_rates/capacity/<date>/ (out=DIR sets another); a summary
# line per run to stdout. The quota runs need root and cgroup v1's cpu controller at /sys/fs/cgroup/cpu (the group
# is removed after). The runs:
#   probe          python -m lfw.measure (the CPU facts and 15 capacity probes) in a small process, in one holding
#                  6 GiB, under taskset -c 0, under a CPU quota of 1.0 and of 1.5 (a cgroup)
# and, each the quick profile's workers, decoders and data-wait groups (the multi-worker efficiency and the data
# wait the gate judges; it accepts the other groups left out with -k), gated against
# benchmarks/baselines/cpu-2core.json unless said:
#   healthy        nothing changed
#   one-core       under taskset -c 0: the affinity gives one core
#   quota          under a cgroup CPU quota of one CPU: the affinity still gives two
#   hog            a busy process at nice -20 pinned to core 1: the machine gives one core, the affinity still two
#   serialized     the workers group only, every image load (LFWDataset.__getitem__, which the decode pipelines do
#                  not use) behind one machine-wide lock (benchmarks/gate_rates/serialized_decode/)
#   half           the workers and data-wait groups beside a busy process at the same priority pinned to each core
#                  (every core at about half its rate), gated against this date's healthy run
#   half-handover  the same, with the hand-over 30 ms slower per batch (benchmarks/gate_rates/slow_handover/: a sleep)
#   half-copy      the same, with the hand-over copying every batch 8 times (benchmarks/gate_rates/copy_handover/: work)
#   half-gate      the whole make gate with a busy process on each core, against base=RUN.json (a make gate run
#                  of unchanged code on this machine at full speed, copied beside it as full.json)
set -u
cd "$(dirname "$0")/.."
# One benchmark job at a time on a machine (the Makefile's lock): the whole campaign holds it, so make gate inside
# runs with LOCK= (taking the lock again would wait for itself).
if [ -z "${LFW_CAPACITY_LOCKED:-}" ] && command -v flock > /dev/null; then
  LFW_CAPACITY_LOCKED=1 exec flock /tmp/lfw-cpu.lock bash "$0" "$@"
fi
out=${out:-benchmarks/gate_rates/capacity/$(date -u +%F)}
mkdir -p "$out"
py=.venv/bin/python
select='workers_transform or decoders or data_wait'
cpu=/sys/fs/cgroup/cpu
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 LFW_CACHE="${LFW_CACHE:-$PWD/.cache/lfw-bench}"

quota() {  # cores, then a command: run it in a fresh cgroup with that CPU quota
  local cores=$1 group="$cpu/lfw-capacity-$$" status=2; shift
  test -w "$cpu" || { echo "error: a CPU quota needs root and cgroup v1's cpu controller at $cpu" >&2; return 2; }
  mkdir "$group" || return 2
  # One write each (the kernel reads a write as the whole value): printf, not a program that writes in pieces.
  if echo 100000 > "$group/cpu.cfs_period_us" && awk -v c="$cores" 'BEGIN { printf "%d\n", c * 100000 }' \
      > "$group/cpu.cfs_quota_us"; then
    sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$group" "$@"
    status=$?
  fi
  rmdir "$group"
  return $status
}

hogs() {  # nice, cores (a comma list), then a command: run it beside a busy process pinned to each of those cores
  local nice=$1 cores=$2 pids=() status; shift 2
  for c in ${cores//,/ }; do nice -n "$nice" taskset -c "$c" "$py" -c "while True: pass" & pids+=($!); done
  trap 'kill ${pids[*]} 2>/dev/null' EXIT
  "$@"; status=$?
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null; trap - EXIT
  return $status
}

measure() {  # name, then the command prefix; gated against $base (default the committed baseline)
  local name=$1; shift
  test -e "$out/$name.json" && { echo "$name: $out/$name.json exists; remove it to measure again" >&2; return 2; }
  "$@" "$py" -m pytest benchmarks -q -p no:cacheprovider --bench-profile quick -k "$select" \
    --benchmark-json="$out/$name.json" > "$out/$name.log" 2>&1
  "$py" -m lfw.gate "${base:-benchmarks/baselines/cpu-2core.json}" "$out/$name.json" > "$out/$name.gate.txt" 2>&1
  echo "$name: gate exit $? ($(grep -E '^(REGRESSED|no regression|INCOMPLETE)' "$out/$name.gate.txt" | head -1));" \
    "$("$py" -c 'import sys; from lfw.results import load_run; from lfw.results.limits import machine_line
print(machine_line(load_run(sys.argv[1])))' "$out/$name.json")"
}

probe() {  # the CPU facts and 15 capacity probes under each condition, into $out/probe.txt
  { echo "# $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD): bash tools/capacity_runs.sh probe"
    for how in "plain" "hold 6 GiB" "taskset -c 0" "quota 1.0" "quota 1.5"; do
      echo; echo "## $how (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
      case $how in
        plain) "$py" -m lfw.measure ;;
        "hold 6 GiB") "$py" -m lfw.measure --hold-gib 6 ;;
        "taskset -c 0") taskset -c 0 "$py" -m lfw.measure ;;
        quota*) quota "${how#quota }" "$py" -m lfw.measure ;;
      esac
    done
  } > "$out/probe.txt" 2>&1
  echo "probe: $out/probe.txt"
}

injected() { env "PYTHONPATH=$PWD/benchmarks/gate_rates/$1:$PWD" "${@:2}"; }  # a folder there, then a command
halves='workers_transform or data_wait'  # the groups the half runs measure
for name in ${@:-probe healthy one-core quota hog serialized half half-handover}; do
  case $name in
    probe) probe ;;
    healthy) measure healthy env ;;
    one-core) measure one-core taskset -c 0 ;;
    quota) measure quota quota 1.0 ;;
    hog) measure hog hogs -20 1 ;;
    serialized) select=workers_transform measure serialized injected serialized_decode ;;
    half) select=$halves base=$out/healthy.json measure half hogs 0 0,1 ;;
    half-handover) select=$halves base=$out/healthy.json measure half-handover hogs 0 0,1 injected slow_handover ;;
    half-copy) select=$halves base=$out/healthy.json measure half-copy hogs 0 0,1 injected copy_handover ;;
    half-gate)
      test -f "${base:-}" || { echo "error: half-gate needs base=RUN.json (a make gate run at full speed)" >&2; exit 2; }
      cp "$base" "$out/full.json"
      hogs 0 0,1 make gate LOCK= BASELINE="$out/full.json" > "$out/half-gate.txt" 2>&1
      echo "half-gate: make gate exit $? ($(grep -E '^(REGRESSED|no regression|INCOMPLETE)' "$out/half-gate.txt" | head -1))" ;;
    *) echo "unknown run $name" >&2; exit 2 ;;
  esac
done
