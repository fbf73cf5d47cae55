"""``python -m lfw.measure``: the machine as the suite sees it, before a benchmark runs on it.

Prints the CPU facts every run records (:class:`lfw.measure.cpus.CpuFacts`) and the parallel capacity measured
``--rounds`` times (:class:`lfw.measure.ceiling.ParallelCapacity`): its median, lowest and highest, and what one
probe costs; ``--hold-gib`` first fills memory, to show the probe does not depend on the process's size. Exit
codes: 0 done, 2 bad arguments.
"""

from __future__ import annotations

import statistics
import sys
import time

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.errors import LFWError, cli_entry
from lfw.measure.ceiling import PROBE, WORK_S, ParallelCapacity
from lfw.measure.cpus import cpu_facts
from lfw.results import keys as K


def parser() -> OneLineParser:
    p = OneLineParser(prog="python -m lfw.measure", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15, help="capacity probes to run (default 15)")
    p.add_argument("--hold-gib", type=float, default=0.0, help="fill this much memory in this process first")
    p.add_argument("--window-ms", type=float, default=WORK_S * 1e3,
                   help=f"the N threads' window (default {WORK_S * 1e3:g}, a rotation's shortest)")
    return p


@cli_entry
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.rounds < 1 or args.hold_gib < 0 or args.window_ms <= 0:
        raise LFWError("--rounds must be 1 or more, --hold-gib 0 or more and --window-ms more than 0")
    held = bytearray(int(args.hold_gib * 2**30))
    held[::4096] = b"\x01" * len(range(0, len(held), 4096))  # every page touched: resident, not just reserved
    facts = cpu_facts()
    print(table(("fact", "value"), [(K.FACTS[k].label, str(v)) for k, v in facts.machine_info().items()]))
    probe = ParallelCapacity.of(facts, facts.usable_cores, args.window_ms / 1e3)
    readings: dict[str, list[float]] = {}
    seconds = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        result = probe.measure()
        seconds.append(time.perf_counter() - started)
        for key, value in result.extra.items():
            readings.setdefault(key, []).append(value)
    print(f"\nparallel capacity ({PROBE}; {args.rounds} probes, {len(held) / 2**30:.1f} GiB held, "
          f"a window of {probe.window_s * 1e3:.0f} ms for N threads):")
    rows = [(K.FACTS[key].label, f"{statistics.median(v):.3f}", f"{min(v):.3f}", f"{max(v):.3f}")
            for key, v in readings.items()]
    print(table(("at", "median", "lowest", "highest"), rows, right=(1, 2, 3)))
    print(f"one probe: {statistics.median(seconds) * 1e3:.1f} ms (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
