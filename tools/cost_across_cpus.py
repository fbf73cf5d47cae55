"""Instruction and move counts of two runs side by side, with each run's CPU model and counted stack.

    python tools/cost_across_cpus.py benchmarks/baselines/cpu-2core.json RUN.json > docs/runs/cost-across-cpus.txt

The evidence behind the gate's rule that counts compare wherever the counted stack matches, whatever the CPU.
"""

from __future__ import annotations

import sys

from lfw.results import keys as K
from lfw.results import load_run


def main(baseline: str, current: str) -> None:
    runs = [load_run(baseline), load_run(current)]
    for run in runs:
        stack = ", ".join(f"{k} {run.machine.get(k, 'not recorded')}" for k in K.COUNTED_STACK)
        print(f"{run.path}: {run.machine.get('cpu_model')} ({run.datetime}); {stack}")
    print(f"\n{'case':<18}{'metric':<26}{'first':>16}{'second':>16}{'change':>10}")
    first, second = runs[0].by_key(), runs[1].by_key()
    for key in sorted(k for k in first if k.startswith("cost/") and k in second):
        for metric in (K.INSTRUCTIONS_PER_IMAGE, *K.MOVES):
            a, b = first[key].number(metric), second[key].number(metric)
            if a is not None and b is not None:
                print(f"{key:<18}{metric:<26}{a:>16,.1f}{b:>16,.1f}{(b / a - 1) * 100 if a else 0.0:>+9.3f}%")


if __name__ == "__main__":
    main(*sys.argv[1:3])
