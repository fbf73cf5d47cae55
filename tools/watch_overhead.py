"""What ``watch(loader)`` costs a training loop per step: measured three ways.

    flock /tmp/lfw-cpu.lock python -m tools.watch_overhead > docs/runs/watch-overhead.txt

1. bookkeeping: ``--items`` plain list items, watched and unwatched, beside the watcher's own
``overhead_us_per_step``; 2. an in-memory DataLoader watched with and without stamping the load time per batch;
3. ``--steps`` 10 ms sleeps, watched and unwatched. Each pair alternated over ``--rounds`` rounds: the difference
per step, median of rounds with their range (docs/diagnose.md, "Overhead"). Exit 0, 2 on bad input.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from lfw.cli.args import OneLineParser
from lfw.diagnose import watch
from lfw.errors import LFWError, cli_entry
from tools.stamp import commit_label

silent = partial(watch, quiet=True, cuda="off", run=None)  # no verdict line, the host clock, no saved run
STEP_S = 0.010  # the step of part 3, a sleep


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
    """Per round: (watched - plain) microseconds per step, the two run back to back, order alternated (ABBA)."""
    diffs = []
    for r in range(rounds):
        if r % 2:
            (tw, n), (tp, _) = watched(), plain()
        else:
            (tp, n), (tw, _) = plain(), watched()
        diffs.append((tw - tp) / n * 1e6)
    return diffs


def sleep(_batch: Any) -> None:
    time.sleep(STEP_S)


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
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, commit {commit_label()}: python -m "
          f"tools.watch_overhead {' '.join(sys.argv[1:] if argv is None else argv)}".rstrip())
    print(f"# differences watched - unwatched per step, {args.rounds} alternated rounds: median (lowest, highest)\n")

    items = list(range(args.items))
    reported: list[float] = []

    def watched_items() -> tuple[float, int]:
        w = silent(items)
        out = timed(w)
        reported.append(w.summary()["overhead_us_per_step"])
        return out

    d = alternated(lambda: timed(items), watched_items, args.rounds)
    print(f"1. bookkeeping, {args.items:,} list items, no step: {statistics.median(d):.2f} us per step "
          f"({min(d):.2f}, {max(d):.2f}); the watcher reports {statistics.median(reported):.2f} us of its own")

    loader = DataLoader(TensorDataset(torch.zeros(64 * 64, 3, 32, 32), torch.zeros(64 * 64, dtype=torch.long)),
                        batch_size=64)
    d = alternated(lambda: timed(silent(loader, instrument=False)), lambda: timed(silent(loader)), args.rounds)
    print(f"2. stamping the load time, {len(loader)} batches of 64 in the main process: "
          f"{statistics.median(d):.2f} us per batch ({min(d):.2f}, {max(d):.2f})")

    small = DataLoader(TensorDataset(torch.zeros(args.steps, 3), torch.zeros(args.steps)), batch_size=1)
    d = alternated(lambda: timed(small, sleep), lambda: timed(silent(small), sleep), args.rounds)
    print(f"3. a loop of {args.steps} steps of 10 ms (a sleep), loader in the main process: {statistics.median(d):.1f} "
          f"us per step ({min(d):.1f}, {max(d):.1f}), {statistics.median(d) / (STEP_S * 1e6):.2%} of the step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
