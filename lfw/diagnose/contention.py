"""What a training loop and its loader cost each other, measured: the step alone and beside the loader, the
loader alone and beside the step, and the loop's hand-over in wall time. How :func:`in_loop` applies them to a
:class:`~lfw.diagnose.feeds.Feed`: docs/diagnose.md, "Contention in training".
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lfw.diagnose.events import BatchRecord
from lfw.diagnose.feeds import Feed
from lfw.diagnose.predict import handover_times, load_times, median_or_0
from lfw.diagnose.training import Measurement, PipelineSetup, full_step, measure_pipeline, pipeline_dataset
from lfw.errors import LFWError
from lfw.measure.loader_pass import sleep_step

STEP_REPEATS = 20  # calls of the step alone; the median is the figure
PROBE_BATCHES = 60  # batches of each instrumented pass
PAIRS = 3  # alternations of the loader alone and the loop
FIGURES = ("step_alone_s", "step_beside_s", "load_alone_s", "load_beside_s", "handover_s")  # of a Contention


@dataclass(frozen=True)
class Contention:
    """The step's and the loader's time alone and in the loop, and the loop's hand-over per batch (seconds)."""

    step_alone_s: float
    step_beside_s: float  # the step's median in the loop, while workers load
    load_alone_s: float  # a worker's load per batch with no step (the main loop's own load without workers)
    load_beside_s: float  # the same in the loop
    handover_s: float  # median hand-over in the loop (0 without workers)
    batches: int  # batches of each instrumented pass (the loop's first)

    def __post_init__(self) -> None:
        for name in FIGURES:
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise LFWError(f"{name.removesuffix('_s').replace('_', ' ')} must be 0 or more seconds, got {value:g}")

    @property
    def step_slowdown(self) -> float:
        """Step in the loop over step alone; 1 for a step too short to time."""
        return self.step_beside_s / self.step_alone_s if self.step_alone_s > 0 else 1.0

    @property
    def load_slowdown(self) -> float:
        """Load per batch in the loop over load alone; 1 when the loader recorded no load."""
        return self.load_beside_s / self.load_alone_s if self.load_alone_s > 0 else 1.0


def in_loop(feed: Feed, contention: Contention) -> Feed:
    """``feed`` with the loop's contention: the step's and the load's slowdowns and, with workers, the wall-time
    hand-over measured with them flat out (:meth:`lfw.diagnose.feeds.Feed.model` applies them)."""
    return replace(feed, step_slowdown=contention.step_slowdown, load_slowdown=contention.load_slowdown,
                   busy_handover_s=max(contention.handover_s, feed.handover_s) if feed.workers else None)


def time_step_alone(step: Callable[[Any], None], batch: Any, repeats: int = STEP_REPEATS) -> float:
    """Median seconds of ``step(batch)`` over ``repeats`` calls after one untimed call (warm-up)."""
    if repeats < 1:
        raise LFWError(f"the step needs 1 or more timed calls, got {repeats}")
    step(batch)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step(batch)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_contention(setup: PipelineSetup, root: str | os.PathLike[str], step: Callable[[Any], None], *,
                       batches: int = PROBE_BATCHES, pairs: int = PAIRS, step_repeats: int = STEP_REPEATS,
                       progress: bool = False) -> Contention:
    """The step alone (``step_repeats`` calls on the loader's first batch, median), the loader alone (an
    instrumented pass with no step) and the loop (the same pass with ``step``), for ``setup`` under ``root``: the
    loader alone and the loop alternate ``pairs`` times, each pass after an untimed warm-up epoch and over
    ``batches`` batches; each figure is the median over the pooled batches of its passes. Raises
    :class:`LFWError` for fewer than 2 batches or no pair."""
    if batches < 2:
        raise LFWError(f"a contention probe needs 2 or more batches per pass, got {batches}")
    if pairs < 1:
        raise LFWError(f"a contention probe needs 1 or more pairs of passes, got {pairs}")
    passes = [[measure_pipeline(setup, root, batches, fn, step_label=label, progress=progress, warmup=True)
               for fn, label in ((sleep_step(0.0), "no step"), (step, "the step"))] for _ in range(pairs)]
    alone, loop = [p[0] for p in passes], [p[1] for p in passes]  # the loader alone, then the loop, in turn
    steps = [s for m in loop for s in (m.result.steps_s[1:] or m.result.steps_s)]
    in_main = replace(setup.config, num_workers=0, persistent_workers=False, prefetch_factor=None)
    sample = next(iter(in_main.build(pipeline_dataset(setup, root, setup.config.batch_size))))
    # the pipeline's own per-batch work runs in the step, in the loop as here
    return Contention(time_step_alone(full_step(setup, step), sample, step_repeats), median_or_0(steps),
                      _median(load_times, alone), _median(load_times, loop), _median(handover_times, loop),
                      loop[0].result.batches)


def _median(times: Callable[[list[BatchRecord]], list[float]], passes: list[Measurement]) -> float:
    return median_or_0([t for m in passes for t in times(m.records)])

