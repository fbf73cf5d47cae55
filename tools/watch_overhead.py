"""What ``watch(loader)`` costs a training loop per step: measured three ways.

    flock /tmp/lfw-cpu.lock python -m tools.watch_overhead > docs/runs/watch-overhead.txt

1. bookkeeping: a loop over ``--items`` plain list items, watched and unwatched, beside the watcher's own
   ``overhead_us_per_step``; 2. instrumentation: an in-memory DataLoader watched with and without stamping the load
   time per batch; 3. a loop of ``--steps`` 10 ms sleeps, watched and unwatched. Each pair alternated over
   ``--rounds`` rounds: the difference per step, median of rounds with their range (docs/diagnose.md, "Overhead").

Exit 0, 2 on bad input.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from lfw.cli.args import OneLineParser
from lfw.diagnose import watch
from lfw.errors import LFWError, cli_entry
from tools.stamp import commit_label


def timed(loop: Iterable[Any], step: Callable[[Any], None] | None = None) -> tuple[float, int]:
    """Seconds to run the whole loop, and the steps it made."""
    n = 0
    t = time.perf_counter()
    for batch in loop:
        if step is not None:
            step(batch)
        n += 1
    return time.perf_counter() - t, n


def alternated(plain: Callable[[], tuple[float, int]], watched: Callable[[], tuple[float, int]],
           rounds: int) -> list[float]:
    """Per round: (watched - plain) seconds per step, the two run back to back, order alternated (ABBA)."""
    diffs = []
    for r in range(rounds):
        if r % 2:
            (tw, n), (tp, _) = watched(), plain()
        else:
            (tp, n), (tw, _) = plain(), watched()
        diffs.append((tw - tp) / n)
    return diffs


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m tools.watch_overhead", description=__doc__.split("\n")[0])
    p.add_argument("--items", type=int, default=200_000)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--rounds", type=int, default=8)
    args = p.parse_args(argv)
    for flag in ("items", "steps", "rounds"):
        if getattr(args, flag) < 1:
            raise LFWError(f"--{flag} must be 1 or more, got {getattr(args, flag)}")
    torch.set_num_threads(1)
    when = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    print(f"# {when}, commit {commit_label()}: python -m tools.watch_overhead "
          f"{' '.join(sys.argv[1:] if argv is None else argv)}".rstrip())
    print(f"# differences watched - unwatched per step, {args.rounds} alternated rounds: median (lowest, highest)")
    print()

    items = list(range(args.items))
    reported: list[float] = []

    def watched_items() -> tuple[float, int]:
        w = watch(items, quiet=True, cuda="off", run=None)
        out = timed(w)
        reported.append(w.summary()["overhead_us_per_step"])
        return out

    d = [x * 1e6 for x in alternated(lambda: timed(items), watched_items, args.rounds)]
    print(f"1. bookkeeping, {args.items:,} list items, no step: {statistics.median(d):.2f} us per step "
          f"({min(d):.2f}, {max(d):.2f}); the watcher reports {statistics.median(reported):.2f} us of its own")

    data = TensorDataset(torch.zeros(64 * 64, 3, 32, 32), torch.zeros(64 * 64, dtype=torch.long))
    loader = DataLoader(data, batch_size=64)
    d = [x * 1e6 for x in alternated(lambda: timed(watch(loader, quiet=True, cuda="off", run=None, instrument=False)),
                                     lambda: timed(watch(loader, quiet=True, cuda="off", run=None)), args.rounds)]
    print(f"2. stamping the load time, {len(loader)} batches of 64 in the main process: "
          f"{statistics.median(d):.2f} us per batch ({min(d):.2f}, {max(d):.2f})")

    step_s = 0.010
    small = DataLoader(TensorDataset(torch.zeros(args.steps, 3), torch.zeros(args.steps)), batch_size=1)

    def sleep(_batch: Any) -> None:
        time.sleep(step_s)

    d = [x * 1e6 for x in alternated(lambda: timed(small, sleep),
                                     lambda: timed(watch(small, quiet=True, cuda="off", run=None), sleep),
                                     args.rounds)]
    med = statistics.median(d)
    print(f"3. a loop of {args.steps} steps of 10 ms (a sleep), loader in the main process: {med:.1f} us per step "
          f"({min(d):.1f}, {max(d):.1f}), {med / (step_s * 1e6):.2%} of the step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
