"""Accelerators fed, checked: the model's AU at N and N + 1 accelerators against a measured lfw.diagnose run,
with the contention the loop adds measured and put into the model (docs/diagnose.md, "The check").

    python -m tools.feeds_check --pipeline simplejpeg-slots-w2 --pipeline simplejpeg-w2 --pipeline pil-w2 \
        --pipeline simplejpeg-t2 --path .cache/lfw-bench/synthetic-lfw-13233-seed0/lfw   # docs/runs/feeds-check.txt
    python -m tools.feeds_check --pipeline pil-tar-w2 --step-ms 25          # another pipeline, another step
    python -m tools.feeds_check --run benchmarks/baselines/cpu-2core.json   # rates from a saved run instead

A pipeline is a decoders case id or a spec such as ``decoder=simplejpeg,threads=2``. Plain text to stdout
(progress bars to stderr); exit 0 when every point's prediction from the loop's feed is within 3 points of the
measured AU, 1 when one is not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.data.root import DataSource, resolve_root
from lfw.diagnose.contention import in_loop, measure_contention
from lfw.diagnose.feeds import (
    AU_TARGET,
    DECODERS_GROUP,
    Feed,
    closed_form_fed,
    fed,
    feed_of,
    simulated_au,
    throughput_bound,
)
from lfw.diagnose.training import PipelineSetup, measure_pipeline, pipeline_dataset, pipeline_setup
from lfw.errors import LFWError, cli_entry
from lfw.measure import LoaderPass
from lfw.measure.loader_pass import sleep_step
from lfw.results import Run, load_run
from tools.stamp import commit_label

DEFAULT_PIPELINES = ("simplejpeg-slots-w2", "simplejpeg-w2", "pil-w2", "simplejpeg-t2")
RATE_IMAGES = 4096  # passes of a second or more: a rate steadier than one quick decoders epoch gives
TOLERANCE_POINTS = 0.03  # |predicted - measured| AU, from the loop's feed
PROBE_SHARE = 0.5  # the contention probe's sleep: this share of the pipeline's batch interval alone


@dataclass(frozen=True)
class Point:
    """One measured point: ``accelerators`` consumers of ``step / accelerators`` each."""

    accelerators: int
    predicted: float  # from the loop's feed (contention measured)
    predicted_alone: float  # from the feed alone
    measured: float
    measured_range: tuple[float, float] = (0.0, 0.0)

    @property
    def error(self) -> float:
        """Predicted minus measured AU, in AU (0.03 is 3 points)."""
        return self.predicted - self.measured

    @property
    def agrees(self) -> bool:
        return abs(self.error) <= TOLERANCE_POINTS


def measure_feed(setup: PipelineSetup, root: Path, passes: int, quiet: bool) -> Feed:
    """Rate, hand-over and variation of ``setup`` from ``passes`` timed passes after a warm-up pass."""
    loader = setup.config.build(pipeline_dataset(setup, root, RATE_IMAGES))
    results = []
    with LoaderPass(loader, memory_interval_s=None, step=setup.pipeline.consumer_step()) as runner:
        for _ in tqdm(range(passes + 1), desc=f"rate of {setup.label}", unit="pass", leave=False, disable=quiet):
            runner.setup()
            results.append(runner.run())
        runner.close(stop_workers=True)
    timed = results[1:]
    rates = [r.images_per_s for r in timed]
    handover = (statistics.median((r.main_cpu_s or 0.0) / r.batches for r in timed if r.batches)
                if setup.config.num_workers else 0.0)
    cv = statistics.pstdev(rates) / statistics.fmean(rates) if len(rates) > 1 else 0.0
    return Feed(statistics.median(rates), setup.config.num_workers, setup.config.prefetch_factor or 2, handover, cv,
                setup.config.batch_size)


def run_feed(run: Run, setup: PipelineSetup) -> Feed:
    """The case's feed as the saved run recorded it."""
    case = next((c for c in run.group(DECODERS_GROUP) if c.label == setup.name), None)
    feed = feed_of(case) if case is not None else None
    if feed is None:
        raise LFWError(f"{run.path} has no {DECODERS_GROUP} case {setup.name!r} with a rate; measure it here "
                       "(leave out --run) or name a case the run holds")
    return feed


def check(setup: PipelineSetup, feed: Feed, loop: Feed, source: DataSource, step_ms: float, batches: int,
          quiet: bool, repeats: int) -> tuple[int, list[Point]]:
    """N of the loop's feed at ``step_ms`` and the measured points at N and N + 1 (N only when it is 1 or more)."""
    step_s = step_ms / 1e3
    n = fed(loop, step_s)
    points = []
    for k in range(max(n, 1), n + 2):
        runs = [measure_pipeline(setup, source.path, batches, sleep_step(step_s / k),
                                 step_label=f"sleep {step_ms / k:.3g} ms", progress=not quiet, warmup=True)
                for _ in range(repeats)]
        steps = runs[0].result.batches
        measured = [m.accelerator_utilization for m in runs]
        points.append(Point(k, simulated_au(loop, step_s, k, steps), simulated_au(feed, step_s, k, steps),
                            statistics.median(measured), (min(measured), max(measured))))
    return n, points


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m tools.feeds_check", description=__doc__.split("\n")[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipeline", action="append", metavar="ID", help="a decoders case id or a pipeline spec; "
                   f"repeat for more (default: {', '.join(DEFAULT_PIPELINES)})")
    p.add_argument("--step-ms", type=float, default=50.0, help="each accelerator's step per batch (default 50)")
    p.add_argument("--batches", type=int, default=150,
                   help="batches per measured run (default 150; one epoch when the tree holds fewer)")
    p.add_argument("--repeats", type=int, default=3, help="measured runs per point, median AU (default 3)")
    p.add_argument("--passes", type=int, default=5, help="timed passes for the rate (default 5, after a warm-up)")
    p.add_argument("--run", default=None, help="take the rates from this saved run's decoders group instead")
    p.add_argument("--path", default=None, help="LFW folder (default: $LFW_ROOT, else the cached synthetic tree)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if not (math.isfinite(args.step_ms) and args.step_ms > 0):
        raise LFWError(f"--step-ms must be a positive number of milliseconds, got {args.step_ms:g}")
    for flag, least, why in (("batches", 2, " (AU leaves the first step out)"), ("repeats", 1, ""), ("passes", 1, "")):
        if getattr(args, flag) < least:
            raise LFWError(f"--{flag} must be {least} or more{why}, got {getattr(args, flag)}")
    setups = [pipeline_setup(name) for name in (args.pipeline or DEFAULT_PIPELINES)]
    run = load_run(args.run) if args.run else None
    saved = {s.name: run_feed(run, s) for s in setups} if run is not None else {}  # bad input fails before output
    source = resolve_root(args.path)
    print(f"# {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}, commit {commit_label()}: python -m tools.feeds_check "
          f"{' '.join(sys.argv[1:] if argv is None else argv)}".rstrip())
    print(f"# step {args.step_ms:g} ms per batch of 64 per accelerator, AU target {AU_TARGET:.0%} (first step "
          f"excluded); {args.batches} measured batches per run, {args.repeats} runs per point (median, range); "
          f"{source.kind} data at {source.path}")
    print("# rates:", f"the decoders group of {args.run}" if args.run else
          f"measured here: a warm-up pass and {args.passes} timed passes of {RATE_IMAGES:,} images each")
    print(f"# N: largest count with simulated AU >= {AU_TARGET:.0%} over a long run, from the loop's feed (contention "
          "measured) and from the feed alone; predicted AU: the same model over the measured run's steps; agree: "
          f"the loop's prediction within {TOLERANCE_POINTS * 100:g} points of the measured AU")
    print(f"# contention: the loader with no step, then beside a sleep of {PROBE_SHARE:g} x its batch interval alone "
          "(the loop data-bound); hand-over: CPU per batch alone, wall time in the loop")
    results, rows = [], []
    step_s = args.step_ms / 1e3
    for setup in setups:
        feed = saved.get(setup.name) or measure_feed(setup, source.path, args.passes, args.quiet)
        contention = measure_contention(setup, source.path, sleep_step(PROBE_SHARE * feed.batch / feed.rate),
                                        progress=not args.quiet)
        loop = in_loop(feed, contention)
        n, pts = check(setup, feed, loop, source, args.step_ms, args.batches, args.quiet, args.repeats)
        results.append((setup, n, pts))
        rows.append((setup.label, f"{feed.rate:,.0f}", str(feed.workers), f"{feed.handover_s * 1e3:.1f} ms",
                     f"{contention.handover_s * 1e3:.1f} ms", f"{contention.load_slowdown:.3f}",
                     f"{contention.step_slowdown:.3f}", f"{feed.load_cv:.2f}", str(fed(feed, step_s)), str(n),
                     str(closed_form_fed(loop, step_s)), str(throughput_bound(loop.rate, step_s, loop.batch))))
    print("\n" + table(("pipeline", "images/s", "workers", "hand-over", "in loop", "load x", "step x", "cv", "N alone",
                        "N", "closed form", "rate alone"), rows, right=range(1, 12)))
    points = [(setup, pt) for setup, _, pts in results for pt in pts]
    print("\n" + table(("pipeline", "accelerators", "step/N", "predicted AU", "feed alone", "measured AU", "runs",
                        "points", "agree"),
                       [(setup.label, str(pt.accelerators), f"{args.step_ms / pt.accelerators:.1f} ms",
                         f"{pt.predicted:.1%}", f"{pt.predicted_alone:.1%}", f"{pt.measured:.1%}",
                         f"{pt.measured_range[0]:.0%}-{pt.measured_range[1]:.0%}", f"{pt.error * 100:+.1f}",
                         "yes" if pt.agrees else "NO") for setup, pt in points], right=range(1, 8)))
    agreed = sum(pt.agrees for _, pt in points)
    worst_loop = max((abs(pt.error) for _, pt in points), default=0.0)
    worst_alone = max((abs(pt.predicted_alone - pt.measured) for _, pt in points), default=0.0)
    holds = [(s.label, all((p.measured >= AU_TARGET) == (p.accelerators == n) for p in pts))  # at N, not at N + 1
             for s, n, pts in results]
    print(f"\nwithin {TOLERANCE_POINTS * 100:g} points: {agreed} of {len(points)} points; largest gap "
          f"{worst_loop * 100:.1f} points from the loop's feed, {worst_alone * 100:.1f} from the feed alone")
    print(f"measured AU confirms N (>= {AU_TARGET:.0%} at N, below at N + 1): "
          + ", ".join(f"{label} {'yes' if ok else 'no'}" for label, ok in holds))
    return 0 if agreed == len(points) else 1


if __name__ == "__main__":
    sys.exit(main())
