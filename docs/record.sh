#!/usr/bin/env bash
# Re-run the commands whose figures the README quotes and keep their output in docs/runs/, one file each, so
# every figure there traces to a committed output. Each takes the machine on its own (run nothing beside it).
#
#   bash docs/record.sh [make-bench|process-pairs|cost|diagnose|distributed ...]   (default: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export LFW_CACHE="${LFW_CACHE:-$PWD/.cache/lfw-bench}" OMP_NUM_THREADS=1
mkdir -p docs/runs
stamp() { echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD): $*"; }

make_bench() {  # the quick profile's wall time, and the summary make bench ends with
  { stamp "make bench (quick profile, data cached, virtualenv installed)"
    start=$(date +%s)
    make bench 2>&1 | tr '\r' '\n' | grep -v -e '^rotation ' -e '^ *$' | tail -25
    echo "wall time of make bench: $(( $(date +%s) - start )) s"
  } > docs/runs/make-bench.txt
}

process_pairs() {  # how much two processes of the same code differ, case by case (an A/A A/B run)
  out=$(mktemp -d)
  { stamp "python -m lfw.gate --ab HEAD, both sides the same commit, 10 process pairs"
    $PY -m lfw.gate --ab HEAD -k "workers0-uint8, workers0-none, workers2-none, workers2-uint8" \
        --min-pairs 10 --max-pairs 10 --ab-out "$out/ab" 2>/dev/null || true
    $PY - "$out/ab" <<'EOF'
import json, math, sys
from statistics import median
from lfw.results import load_run
folder = sys.argv[1]
doc = json.load(open(f"{folder}/verdicts.json"))
print("\nper case: the pairs' log ratio of images/s (current over base, one per pair of fresh processes), and")
print("how far the two passes of one process in its quad were apart (|log ratio|), over all pairs and sides")
sides = {s: {c.label: c for c in load_run(f"{folder}/{s}.json").cases} for s in ("base", "current")}
for key, logs in doc["log_ratios"].items():
    case, metric = key.split(":")
    if metric != "images_per_s":
        continue
    within = []
    for cases in sides.values():
        c = cases[case]
        rates, pairs = c.rounds("images_per_s"), c.extra["ab_pair"]
        for p in sorted(set(pairs)):
            two = [r for r, q in zip(rates, pairs) if q == p]
            within.append(abs(math.log(two[0] / two[1])))
    spread = [abs(x) for x in logs]
    print(f"  {case:16s} between processes: median |log ratio| {median(spread):.3f}, largest {max(spread):.3f} "
          f"(ratios {math.exp(min(logs)):.3f}-{math.exp(max(logs)):.3f}); within a process: median "
          f"{median(within):.3f}")
EOF
  } > docs/runs/process-pairs.txt 2>&1
  rm -rf "$out"
}

cost() {  # the cost layer's own run: instructions per image of each preset, and how long valgrind takes
  { stamp "python -m lfw.measure.cost (one valgrind process, 16 images per preset, as the quick profile counts)"
    root=$($PY -c "from lfw.data_root import resolve_root; print(resolve_root(synthetic_images=2000).path)")
    $PY -m lfw.measure.cost --root "$root" --cache-dir "$LFW_CACHE/callgrind" --batch-size 16 --batches 1 \
        none simple heavy uint8
  } > docs/runs/cost.txt 2>&1
}

diagnose() {  # measured vs simulated batches/s of a training loop
  { stamp "python -m lfw.diagnose, 2 workers, batch 64, transform none, 30 batches"
    for step in 10 50 150; do
      echo "--- --step-ms $step"
      $PY -m lfw.diagnose --workers 2 --step-ms "$step" --batch-size 64 --batches 30 --quiet --no-chart
    done
  } > docs/runs/diagnose.txt 2>&1
}

distributed() {  # two ranks against one, the same per-rank configuration
  out=$(mktemp -d)
  { for n in 2 1; do
      stamp "torchrun --standalone --nproc-per-node=$n -m lfw.distributed --workers 1 --epochs 3"
      $PY -m torch.distributed.run --standalone --nproc-per-node="$n" -m lfw.distributed --workers 1 --epochs 3 \
          --out "$out/w$n.json" 2>/dev/null
    done
  } > docs/runs/distributed.txt
  rm -rf "$out"
}

for what in "${@:-make-bench process-pairs cost diagnose distributed}"; do
  for one in $what; do "${one//-/_}"; done
done
