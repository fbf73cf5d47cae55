"""How many accelerators a decode pipeline keeps busy: accelerator utilization (AU) >= 90% from a measured rate.

N accelerators fed round-robin by one pipeline, each stepping ``step_s`` per batch, are one consumer whose step is
``step_s / N``. A :class:`Feed` becomes the simulator's model (:meth:`Feed.model`); :func:`fed` is the largest N
whose simulated AU reaches the target, :func:`closed_form_fed` the closed form. The model, its bounds and the
measured check: docs/diagnose.md, "How many accelerators a pipeline feeds".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from lfw.diagnose.simulator import SEEDS, PipelineModel, check_loader, seed_mean
from lfw.errors import LFWError
from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results.knobs import BATCH_SIZE, NUM_WORKERS, PREFETCH_FACTOR

AU_TARGET = 0.9  # lfw.diagnose.predict.COMPUTE_BOUND_AU too: at or above it, compute-bound
BATCH = 64
STEP_TIMES_MS = (10.0, 25.0, 50.0, 100.0)
HEADLINE_STEP_MS = 50.0
STEADY_BATCHES = 400  # simulated steps: a prefetch queue filled before the first step is about 1% of them
DECODERS_GROUP = "decoders"
_EPS = 1e-9  # a bound that lands on a whole number within rounding still admits it


@dataclass(frozen=True)
class Feed:
    """A measured pipeline as the model takes it (``docs/diagnose.md``): rate, workers and what shapes delivery."""

    rate: float  # images/s the pipeline delivered with no step
    workers: int
    prefetch_factor: int = 2
    handover_s: float = 0.0  # main-process time per batch beside the step, with the workers idle
    load_cv: float = 0.0
    batch: int = BATCH
    # The loop's contention (lfw.diagnose.contention), measured with the workers loading flat out:
    step_slowdown: float = 1.0  # the step beside the loader over the step alone
    load_slowdown: float = 1.0  # a batch's load beside the step over its load alone
    busy_handover_s: float | None = None  # the hand-over in wall time (None: as ``handover_s``)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise LFWError(f"the measured rate must be a positive number of images/s, got {self.rate:g}")
        check_loader(self.workers, self.prefetch_factor)
        if self.batch < 1:
            raise LFWError(f"batch size must be a positive integer, got {self.batch}")
        for value, what in ((self.handover_s, "the hand-over time must be 0 or more seconds"),
                            (self.load_cv, "the load-time variation must be 0 or more"),
                            (self.busy_handover_s, "the busy hand-over must be 0 or more seconds")):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise LFWError(f"{what}, got {value:g}")
        for name, factor in (("step", self.step_slowdown), ("load", self.load_slowdown)):
            if not (math.isfinite(factor) and factor > 0):
                raise LFWError(f"the {name}'s slowdown must be a positive factor, got {factor:g}")

    @property
    def load_s(self) -> float:
        """Batch load time per loading process: ``max(workers, 1) x batch / rate``."""
        return max(self.workers, 1) * self.batch / self.rate

    def busy_share(self, step_s: float) -> float:
        """How much of the time the workers load, feeding a consumer that steps for ``step_s`` per batch: the
        batch interval the pipeline supplies over the interval the consumer asks, at most 1."""
        cycle = step_s + (self.handover_s if self.workers else 0.0)
        return min(1.0, self.batch / self.rate / cycle) if cycle > 0 else 1.0

    def model(self, step_s: float, accelerators: int) -> PipelineModel:
        """The simulator's model of this pipeline feeding ``accelerators`` that each step for ``step_s``; the
        contention measured flat out applies in proportion to :meth:`busy_share`."""
        if accelerators < 1:
            raise LFWError(f"accelerators must be 1 or more, got {accelerators}")
        step = step_s * self.step_slowdown / accelerators
        busy = self.busy_share(step)
        extra = (self.busy_handover_s - self.handover_s) if self.busy_handover_s is not None else 0.0
        handover = max(0.0, self.handover_s + extra * busy) if self.workers else 0.0
        return PipelineModel(workers=self.workers, load_s=self.load_s * (1 + (self.load_slowdown - 1) * busy),
                             step_s=step, prefetch_factor=self.prefetch_factor, transfer_s=handover,
                             load_cv=self.load_cv)


def _check_step(step_s: float, target: float) -> None:
    if not (math.isfinite(step_s) and step_s > 0):
        raise LFWError(f"the step time must be a positive number of seconds, got {step_s:g}")
    if not 0 < target < 1:
        raise LFWError(f"the AU target must lie between 0 and 1, got {target:g}")


def throughput_bound(rate: float, step_s: float, batch: int = BATCH, target: float = AU_TARGET) -> int:
    """``floor(rate x step_s / (batch x target))``: accelerators the measured rate alone can keep at ``target``."""
    _check_step(step_s, target)
    return max(0, math.floor(rate * step_s / (batch * target) + _EPS))


def closed_form_fed(feed: Feed, step_s: float, target: float = AU_TARGET) -> int:
    """The closed form's largest N (``docs/diagnose.md``): the throughput bound, and the hand-over bound with
    workers or the load-and-step bound without; 0 when one accelerator already falls below ``target``."""
    _check_step(step_s, target)
    step_s *= feed.step_slowdown
    share = step_s * (1 - target) / target  # the most serial time per batch that still leaves AU >= target
    handover = feed.handover_s if feed.busy_handover_s is None else feed.busy_handover_s
    if feed.workers == 0:
        bound = share / (feed.load_s * feed.load_slowdown)
    else:
        bound = feed.rate / feed.load_slowdown * step_s / (feed.batch * target)
        if handover > 0:
            bound = min(bound, share / handover)
    return max(0, math.floor(bound + _EPS))


def simulated_au(feed: Feed, step_s: float, accelerators: int, batches: int = STEADY_BATCHES) -> float:
    """AU of ``accelerators`` fed by ``feed``, simulated over ``batches`` steps (first step excluded); the mean
    over :data:`~lfw.diagnose.simulator.SEEDS` seeds when load times vary, one run when they do not."""
    if batches < 2:
        raise LFWError(f"AU needs at least 2 simulated steps (the first is excluded), got {batches}")
    return seed_mean(feed.model(step_s, accelerators), batches, lambda r: 1.0 - r.steady_data_wait_fraction, SEEDS)


def fed(feed: Feed, step_s: float, *, target: float = AU_TARGET, batches: int = STEADY_BATCHES) -> int:
    """The largest N whose simulated AU (:func:`simulated_au`) is at least ``target``; 0 when even one
    accelerator falls below it. The search starts at the closed form and walks down, then up, one N at a time."""
    _check_step(step_s, target)

    @functools.cache
    def au(n: int) -> float:
        return simulated_au(feed, step_s, n, batches)

    n = max(closed_form_fed(feed, step_s, target), 1)
    while n > 0 and au(n) < target:
        n -= 1
    ceiling = 2 * n + 8  # the simulator never doubles the closed form; the bound only guards the walk
    while 0 < n < ceiling and au(n + 1) >= target:
        n += 1
    return n


# --- a run's decoders group ------------------------------------------------------------------------------------
def feed_of(case: Case) -> Feed | None:
    """A case's :class:`Feed`: its median images/s, workers, prefetch factor and batch size from its config, the
    main process's CPU per batch as the hand-over (0 when not recorded), the rate's CV over rounds as the load
    variation. None for a case without a rate."""
    rate = case.number(K.IMAGES_PER_S)
    if rate is None or rate <= 0:
        return None
    workers = case.knob(NUM_WORKERS) or 0
    batch = case.knob(BATCH_SIZE) or BATCH
    share, cpu_ms = case.number(K.MAIN_CPU_SHARE), case.number(K.CPU_MS_PER_IMAGE)
    handover = max(0.0, share * cpu_ms * batch / 1e3) if workers and share is not None and cpu_ms is not None else 0.0
    return Feed(rate, workers, case.knob(PREFETCH_FACTOR) or 2, handover,
                max(0.0, case.number(K.IMAGES_PER_S_CV) or 0.0), batch)


@dataclass(frozen=True)
class FeedRow:
    """One pipeline of the table: its feed, and N per step time (simulated, and the closed form)."""

    label: str
    feed: Feed
    fed: tuple[int, ...]
    closed_form: tuple[int, ...]
    throughput: tuple[int, ...]  # the rate alone (throughput_bound)
    decodes: bool  # False for the decode-free memmap reference
    limit: float | None = None  # its own decoder's limit, images/s (suite.case_record.work_limit); None: not measured


@dataclass(frozen=True)
class FeedsTable:
    """Accelerators fed at AU >= ``target`` per pipeline (rows, fastest first) and step time (columns)."""

    steps_ms: tuple[float, ...]
    target: float
    rows: tuple[FeedRow, ...]

    def column(self, step_ms: float) -> int:
        if step_ms not in self.steps_ms:
            have = ", ".join(f"{s:g}" for s in self.steps_ms)
            raise LFWError(f"the table has no {step_ms:g} ms column; it has {have}")
        return self.steps_ms.index(step_ms)

    def best(self, step_ms: float = HEADLINE_STEP_MS) -> FeedRow | None:
        """The decoding pipeline that feeds the most accelerators at ``step_ms`` (the faster one on a tie)."""
        i = self.column(step_ms)
        return max((r for r in self.rows if r.decodes), key=lambda r: (r.fed[i], r.feed.rate), default=None)


def feeds_table(run: Run) -> FeedsTable | None:
    """The table over the run's decoders group (every case with a rate, the memmap reference included, fastest
    first) at :data:`STEP_TIMES_MS` and :data:`AU_TARGET`; None when the run has no such case."""
    rows = []
    for case in run.group(DECODERS_GROUP):
        feed = feed_of(case)
        if feed is None:
            continue
        steps = [ms / 1e3 for ms in STEP_TIMES_MS]
        rows.append(FeedRow(case.label, feed, tuple(fed(feed, s) for s in steps),
                            tuple(closed_form_fed(feed, s) for s in steps),
                            tuple(throughput_bound(feed.rate, s, feed.batch) for s in steps),
                            case.value(K.STORAGE) != "memmap", case.number(K.OWN_DECODER_IMAGES_PER_S)))
    return FeedsTable(STEP_TIMES_MS, AU_TARGET, tuple(sorted(rows, key=lambda r: -r.feed.rate))) if rows else None
