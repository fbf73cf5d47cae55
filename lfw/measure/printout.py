"""What the command-line tools print when they time loading: one warm-up pass, then repetitions, mean +- sd.

Shared by ``python -m lfw -get_timing`` and ``python -m lfw.remote``; the passes themselves are the shared
primitive's (:class:`~lfw.measure.LoaderPass`), so a CLI figure means what the benchmarks' figures mean.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from tqdm import tqdm

from lfw.measure import LoaderPass, PassResult
from lfw.measure.mprof import INTERVAL_S, record
from lfw.stats.variation import mean_sd


def report_timing(runner: LoaderPass, repetitions: int, mprof: Path | None = None) -> list[PassResult]:
    """One untimed warm-up pass (page cache, allocator), then ``repetitions`` timed ones, as the benchmarks do.

    With ``mprof``, memory-profiler samples the process tree's PSS all along and the timeline goes to that file
    (:mod:`lfw.measure.mprof`).
    """
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
