"""From measured training passes to a simulator model (:func:`fit_model`), a prediction, a verdict and a
recommendation (:func:`diagnose`); the worker count for training: :class:`WorkerSweep` (docs/diagnose.md).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from lfw.cli.table import table
from lfw.diagnose.events import MAIN_PROCESS, BatchRecord
from lfw.diagnose.feeds import AU_TARGET
from lfw.diagnose.simulator import PipelineModel, seed_mean, simulate
from lfw.diagnose.training import Measurement
from lfw.errors import LFWError
from lfw.stats.variation import KNEE_TOLERANCE, first_within

COMPUTE_BOUND_AU = AU_TARGET  # at or above this accelerator utilization the step, not the loader, sets the pace
Bottleneck = Literal["data loading", "the training step"]
LOOP_TOLERANCE = 0.02  # a sweep's one pass per count: the loop's counts within 2% of its best are one, the fewest wins


def workers_text(n: int, noun: str = "worker") -> str:
    """``1 worker``, ``2 workers`` (or cores): counts read as words in reports."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def worker_budget(cores: int, *, cpu_step: bool) -> int:
    """Cores the workers may have: all of them, one fewer when the step computes on the CPU."""
    return max(1, cores - (1 if cpu_step else 0))


def _by_worker(records: list[BatchRecord]) -> list[list[BatchRecord]]:
    """Each worker's loaded batches in the order it loaded them."""
    groups: dict[int, list[BatchRecord]] = {}
    for r in records:
        if not math.isnan(r.load_start):
            groups.setdefault(r.worker, []).append(r)
    return [sorted(g, key=lambda r: r.load_start) for g in groups.values()]


def load_times(records: list[BatchRecord]) -> list[float]:
    """Worker-side load durations, each worker's first batch left out where that worker loaded others."""
    return [r.load for batches in _by_worker(records) for r in (batches[1:] or batches)]


def handover_times(records: list[BatchRecord]) -> list[float]:
    """Each worker-loaded batch's hand-over in wall time: from the later of "asked for" and "loaded" to "the main
    loop has it" (receiving, unpickling, mapping its shared memory, waiting for a core)."""
    return [max(0.0, r.got - max(r.ask, r.load_end)) for r in records
            if r.worker != MAIN_PROCESS and not math.isnan(r.load_end)]


def worker_gaps(records: list[BatchRecord], capacity: int) -> list[float]:
    """Idle time of a worker between two of its batches when the second was already handed to it (batch ``j``
    is handed out when batch ``j - capacity`` is received): overhead outside ``__getitems__`` and collate. Later
    tasks are the prefetch limit, which the simulator models itself."""
    if capacity <= 0:
        return []
    by_index = {r.index: r for r in records}
    gaps: list[float] = []
    for batches in _by_worker(records):
        for prev, nxt in itertools.pairwise(batches):
            earlier = by_index.get(nxt.index - capacity)
            handed = earlier.got if earlier is not None else 0.0
            if prev.worker != MAIN_PROCESS and handed <= prev.load_end:
                gaps.append(max(0.0, nxt.load_start - prev.load_end))
    return gaps


def median_or_0(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def load_per_batch(records: list[BatchRecord], capacity: int) -> float | None:
    """A worker's load time per batch: the mean of the workers' own stamps (each worker's first batch left out: its
    warm-up), which holds the contention for cores at that worker count, plus the median overhead between batches
    (:func:`worker_gaps`); None when nothing was stamped."""
    loads = load_times(records)
    return statistics.fmean(loads) + median_or_0(worker_gaps(records, capacity)) if loads else None


def fit_model(m: Measurement) -> PipelineModel:
    """The simulator's model: :func:`load_per_batch`, the median hand-over as ``transfer_s``, the first load's start."""
    loads = load_times(m.records) or [max(r.wait, 1e-6) for r in m.records]  # else the waits: loads when data-bound
    load_s = max(load_per_batch(m.records, m.capacity) or statistics.fmean(loads), 1e-6)
    cv = statistics.pstdev(loads) / load_s if len(loads) > 1 else 0.0
    workers = m.config.num_workers
    starts = [r.load_start for r in m.records if not math.isnan(r.load_start)]
    return PipelineModel(workers=workers, load_s=load_s, step_s=m.step_s, prefetch_factor=m.config.prefetch_factor or 2,
                         transfer_s=median_or_0(handover_times(m.records)), load_cv=cv,
                         startup_s=max(0.0, min(starts)) if starts and workers > 0 else 0.0)


@dataclass
class Diagnosis:
    """Measured numbers, the simulator's view of them, and what to do."""

    model: PipelineModel
    measured_batches_per_s: float
    predicted_batches_per_s: float
    data_wait_fraction: float
    accelerator_utilization: float
    workers_needed: int | None  # smallest worker count that ends the stalls, None for a free step
    predicted_at_needed: float | None  # simulated steady-state batches/s with that many workers
    bottleneck: Bottleneck
    recommendation: str
    worker_overhead_s: float = 0.0  # part of model.load_s spent between batches (see worker_gaps)

    @property
    def error(self) -> float:
        """Relative error of the prediction: (predicted - measured) / measured."""
        m = self.measured_batches_per_s
        return (self.predicted_batches_per_s - m) / m if m > 0 else math.nan


def diagnose(m: Measurement, usable_cores: int, *, emulated_step: bool) -> Diagnosis:
    """Fit, predict and advise; ``emulated_step`` (a sleep) leaves the workers every core, a real step all but one."""
    model = fit_model(m)
    predicted = seed_mean(model, m.result.batches, lambda r: r.batches_per_s)  # seeds when load times vary
    au = m.accelerator_utilization
    needed: int | None = None
    at_needed: float | None = None
    if model.step_s > 0:  # the steady state at the count that ends the stalls: a long run, start-up left out
        fed = model.stalls_ended()
        needed = fed.workers
        at_needed = simulate(fed, max_batches=max(200, 8 * needed * model.prefetch_factor)).steady_batches_per_s
    bottleneck: Bottleneck = "the training step" if au >= COMPUTE_BOUND_AU else "data loading"
    advice = _recommend(m, model, au, needed, worker_budget(usable_cores, cpu_step=not emulated_step), usable_cores)
    return Diagnosis(model, m.batches_per_s, predicted, m.result.data_wait_fraction, au, needed, at_needed,
                     bottleneck, advice, median_or_0(worker_gaps(m.records, m.capacity)))


def _recommend(m: Measurement, model: PipelineModel, au: float, needed: int | None, budget: int, cores: int) -> str:
    """More workers, a cheaper transform, a cheaper hand-over, or nothing to gain, with the deciding numbers."""
    if au >= COMPUTE_BOUND_AU:
        return (f"nothing to gain from the loader: the step computes {au:.0%} of the time; "
                "a faster step (or a larger batch per step) is the lever")
    if needed is None:
        return "the step costs nothing, so the loop always waits on data; give it a step (--step-ms or --model)"
    workers = m.config.num_workers
    if needed > workers and needed <= budget:
        return f"more workers: {workers_text(needed)} keep the step fed (this machine has {cores} usable cores)"
    if needed > workers:
        target_ms = budget * (model.step_s + model.transfer_s) * 1e3
        hint = {"heavy": "'simple' or 'uint8'", "simple": "'uint8' (no resize, no float)",
                "none": "'uint8' (no float conversion)"}.get(m.transform, "pre-decoded or smaller images")
        what, hint = ("transform", f"try transform {hint}") if "pipeline" not in m.extra else (
            "pipeline", "compare the decoders group's pipelines (python -m lfw.report) for a faster one")
        more = f"raise workers to {budget}, then " if workers < budget else ""
        return (f"{more}a cheaper {what}: {workers_text(needed)} would be needed but only {budget} can get a "
                f"core; a batch must load in <= {target_ms:.0f} ms per worker at {workers_text(budget)} "
                f"(now {model.load_s * 1e3:.0f} ms); {hint}")
    cycle = model.step_s + model.transfer_s
    if model.transfer_s / cycle > 1 - COMPUTE_BOUND_AU:
        smaller = "transform 'uint8' (a quarter of float32's bytes)" if m.transform != "uint8" else "smaller batches"
        return (f"not more workers ({workers_text(workers)} keep up): the main loop spends "
                f"{model.transfer_s * 1e3:.0f} ms per batch taking it from the workers, "
                f"{model.transfer_s / cycle:.0%} of each step; fewer bytes per batch cut it, e.g. {smaller}")
    return (f"not more workers ({workers_text(workers)} keep up on average): the waits come from uneven load times "
            f"(cv {model.load_cv:.2f}) and in-order delivery; a larger prefetch_factor buffers them")


# --- the worker count for training, measured ---------------------------------------------------------------
def steady_steps_per_s(m: Measurement) -> float:
    """Steps per second from the end of the first step to the end of the last (0 with fewer than 2 steps)."""
    window = m.steady_window_s
    return (len(m.result.events) - 1) / window if window > 0 else 0.0


@dataclass(frozen=True)
class SweepPoint:
    """One worker count: the loop with its step, and the loader alone (no step)."""

    workers: int
    loop: Measurement
    loader: Measurement

    @property
    def steps_per_s(self) -> float:
        return steady_steps_per_s(self.loop)

    @property
    def loader_images_per_s(self) -> float:
        return steady_steps_per_s(self.loader) * self.loader.config.batch_size


@dataclass(frozen=True)
class WorkerSweep:
    """Measured points, one per worker count, in increasing order of workers."""

    points: tuple[SweepPoint, ...]

    def __post_init__(self) -> None:
        counts = [p.workers for p in self.points]
        if len(counts) < 2 or counts != sorted(set(counts)):
            raise LFWError(f"a worker sweep needs 2 or more distinct counts in increasing order, got {counts}")

    @property
    def for_training(self) -> SweepPoint:
        """The fewest workers within :data:`LOOP_TOLERANCE` of the most steps/s of the loop (a pass per count
        cannot separate closer rates)."""
        return self.points[first_within([p.steps_per_s for p in self.points], LOOP_TOLERANCE)]

    @property
    def loader_knee(self) -> SweepPoint:
        """The fewest workers whose loader alone is within :data:`KNEE_TOLERANCE` of its best rate."""
        return self.points[first_within([p.loader_images_per_s for p in self.points])]

    def lines(self) -> list[str]:
        """The table and the recommendation, as printed."""
        rows = [(str(p.workers), f"{p.steps_per_s:.2f}", f"{p.loop.accelerator_utilization:.1%}",
                 f"{p.loader_images_per_s:,.0f}") for p in self.points]
        out = table(("workers", "loop steps/s", "AU", "loader images/s"), rows, right=range(4)).splitlines()
        train, knee = self.for_training, self.loader_knee
        text = (f"for training: {workers_text(train.workers)} ({train.steps_per_s:.2f} steps/s of the loop, within "
                f"{LOOP_TOLERANCE:.0%} of its most); the loader alone's knee: {workers_text(knee.workers)} (within "
                f"{KNEE_TOLERANCE:.0%} of its best, {knee.loader_images_per_s:,.0f} images/s)")
        if train.workers < knee.workers:
            text += ("; they differ: the step shares the cores with the workers, and more workers slow it "
                     "more than they speed the loading")
        elif train.workers > knee.workers:
            text += ("; they differ: the loop needs the batches sooner than the loader's knee supplies them "
                     "(each step waits on the hand-over)")
        return [*out, text]


def sweep(counts: Sequence[int], measure_at: Callable[[int, bool], Measurement]) -> WorkerSweep:
    """A point per count: ``measure_at(count, with_step)`` measures the loop (True) and the loader alone."""
    return WorkerSweep(tuple(SweepPoint(n, measure_at(n, True), measure_at(n, False)) for n in counts))
