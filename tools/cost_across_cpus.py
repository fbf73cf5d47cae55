"""Instruction and move counts of two runs side by side, with each run's CPU model and counted stack.

    python tools/cost_across_cpus.py benchmarks/baselines/cpu-2core.json RUN.json > docs/runs/cost-across-cpus.txt

The evidence behind the gate's rule that counts compare wherever the counted stack matches, whatever the CPU.
"""

from __future__ import annotations

import sys

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.errors import cli_entry
from lfw.results import keys as K
from lfw.results import load_run


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python tools/cost_across_cpus.py", description=__doc__.splitlines()[0])
    p.add_argument("first", help="a saved run with the cost layer (the baseline)")
    p.add_argument("second", help="the run to set beside it")
    args = p.parse_args(argv)
    runs = [load_run(args.first), load_run(args.second)]
    for run in runs:
        stack = ", ".join(f"{k} {run.machine.get(k, 'not recorded')}" for k in K.COUNTED_STACK)
        print(f"{run.path}: {run.machine.get('cpu_model')} ({run.datetime}); {stack}")
    first, second = runs[0].by_key(), runs[1].by_key()
    rows = [(key, metric, f"{a:,.1f}", f"{b:,.1f}", f"{(b / a - 1) * 100 if a else 0.0:+.3f}%")
            for key in sorted(k for k in first if k.startswith("cost/") and k in second)
            for metric in (K.INSTRUCTIONS_PER_IMAGE, *K.MOVES)
            if (a := first[key].number(metric)) is not None and (b := second[key].number(metric)) is not None]
    print("\n" + table(("case", "metric", "first", "second", "change"), rows, right={2, 3, 4}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
