"""Each CPU's rate alone against the threads' rates together, probe by probe: what one CPU's rate for all of them
reads as the parallel capacity, and what each CPU against its own reads (docs/methodology.md, "The machine").

    .venv/bin/python -m tools.probe_cpus [--probes 20] [--window-ms 40]      (exit 0; 2 on bad input)
"""

from __future__ import annotations

import time

from lfw.cli.args import OneLineParser
from lfw.errors import cli_entry
from lfw.measure.ceiling import CALLS, WORK_S, capacity, rates_together, work_iterations
from lfw.measure.cpus import CpuFacts


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m tools.probe_cpus", description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--window-ms", type=float, default=40.0)
    args = parser.parse_args(argv)
    cpus, window = CpuFacts.read().spread(2), args.window_ms / 1e3
    iterations = work_iterations(WORK_S / CALLS)
    print(f"CPUs {cpus}; the threads' window {args.window_ms:g} ms, each CPU alone {args.window_ms / 2:g} ms "
          "before and after; rates in calls/s")
    for _ in range(args.probes):
        before = [rates_together([cpu], iterations, window / 2)[0] for cpu in cpus]
        together = rates_together(cpus, iterations, window)
        after = [rates_together([cpu], iterations, window / 2)[0] for cpu in cpus]
        alone = [(b + a) / 2 for b, a in zip(before, after, strict=True)]
        first = sum(together) / alone[0]  # the first CPU's rate for all of them, uncapped
        print(f"alone {' '.join(f'{r:6.0f}' for r in alone)} | together {' '.join(f'{r:6.0f}' for r in together)}"
              f" | first CPU's rate for all {first:.3f}, each against its own {capacity(alone, together):.3f}")
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
