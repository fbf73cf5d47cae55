"""What the command-line tools print when they time loading: one warm-up pass, then repetitions, mean +- sd.

Shared by ``python -m lfw -get_timing`` and ``python -m lfw.remote``, through :class:`~lfw.measure.LoaderPass`.
With ``-mprof FILE`` the passes run inside :func:`record`: memory-profiler samples the tree's PSS (its
``psutil_pss`` backend) and writes the ``CMDLINE``/``MEM`` file ``mprof plot`` draws."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

from lfw.cli.saving import write_atomic
from lfw.errors import LFWError
from lfw.measure import LoaderPass, PassResult
from lfw.stats.variation import mean_sd

T = TypeVar("T")
INTERVAL_S = 0.1


def check_path(path: Path) -> None:
    """Refuse, before any work, a file that cannot be written (a missing folder, a folder in its place)."""
    if path.is_dir():
        raise LFWError(f"-mprof {path} is a folder; give a file name such as lfw_timing.dat")
    if not path.parent.is_dir():
        raise LFWError(f"-mprof {path}: the folder {path.parent} does not exist")


def record(work: Callable[[], T], path: Path, interval: float = INTERVAL_S) -> T:
    """Run ``work`` once while memory-profiler samples the process tree's PSS; write the samples to ``path``."""
    from memory_profiler import memory_usage

    samples, result = memory_usage((work, (), {}), interval=interval, timestamps=True, include_children=True,
                                   backend="psutil_pss", retval=True, max_iterations=1)
    lines = [f"CMDLINE {' '.join(sys.argv)}"] + [f"MEM {mib:.6f} {t:.4f}" for mib, t in samples]
    write_atomic(path, "\n".join(lines) + "\n")
    return result


def report_timing(runner: LoaderPass, repetitions: int, mprof: Path | None = None) -> list[PassResult]:
    """One untimed warm-up pass, then ``repetitions`` timed ones; with ``mprof``, the tree's PSS goes to that file."""
    def passes() -> None:
        with runner:
            for _ in tqdm(range(repetitions + 1), desc="timing (1 warm-up)", unit="pass", file=sys.stderr):
                runner.run()  # its untimed setup first (LoaderPass.run)

    if mprof is None:
        passes()
    else:
        record(passes, mprof)
    results = runner.results[1:]
    seconds = mean_sd([r.wall_s for r in results])
    rates = mean_sd([r.images_per_s for r in results])
    first = results[0]
    print(f"Timing over {first.batches} batches ({first.images} images), {len(results)} repetitions: "
          f"{seconds[0]:.3f} +- {seconds[1]:.3f} s per pass, "
          f"{rates[0]:.0f} +- {rates[1]:.0f} images/s, "
          f"time to first batch {statistics.median(r.ttfb_s for r in results):.3f} s")
    memory = results[-1].memory
    if memory is not None:
        print(f"Process tree memory at the end of the last pass: PSS {memory.end.pss:.0f} MiB, USS "
              f"{memory.end.uss:.0f} MiB, RSS {memory.end.rss:.0f} MiB ({len(memory.worker_pids)} workers)")
    if mprof is not None:
        print(f"Memory timeline (memory-profiler, process-tree PSS every {INTERVAL_S:g} s): {mprof}; draw it with "
              f"mprof plot {mprof}")
    return results
